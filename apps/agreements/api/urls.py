from django.urls import path

from apps.agreements.api import views

urlpatterns = [
    path("agreements", views.AgreementListView.as_view()),
    path("agreements/acceptances", views.AcceptanceListView.as_view()),
    path("agreements/<uuid_param:id>", views.AgreementDetailView.as_view()),
    path("agreements/<uuid_param:id>/accept", views.AgreementAcceptView.as_view()),
]
