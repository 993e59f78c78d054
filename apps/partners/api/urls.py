from django.urls import path

from apps.partners.api import views

urlpatterns = [
    path("partner/practices", views.PartnerPracticesView.as_view()),
    path("partner/practices/<uuid_param:organization_id>/owner-invitation", views.OwnerInvitationView.as_view()),
    path("settings/practice/setup-status", views.SetupStatusView.as_view()),
]
