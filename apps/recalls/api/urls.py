from django.urls import path

from apps.recalls.api import views

urlpatterns = [
    path("clinical/recall-types", views.RecallTypeListView.as_view()),
    path("clinical/recall-types/<uuid_param:id>", views.RecallTypeDetailView.as_view()),
    path("clinical/patients/<uuid_param:id>/recalls", views.PatientRecallsView.as_view()),
    path("clinical/recalls", views.RecallListView.as_view()),
    path("clinical/recalls/<uuid_param:id>", views.RecallDetailView.as_view()),
    path("clinical/recalls/<uuid_param:id>/book", views.RecallBookView.as_view()),
    path("clinical/recalls/<uuid_param:id>/cancel", views.RecallCancelView.as_view()),
    path("clinical/waitlist", views.WaitlistView.as_view()),
    path("clinical/waitlist/offers", views.OfferListView.as_view()),
    path("clinical/waitlist/offers/<uuid_param:id>/accept", views.OfferAcceptView.as_view()),
    path("clinical/waitlist/offers/<uuid_param:id>/decline", views.OfferDeclineView.as_view()),
    path("clinical/waitlist/<uuid_param:id>", views.WaitlistEntryView.as_view()),
]
