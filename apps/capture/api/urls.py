from django.urls import path

from apps.capture.api import views

BASE = "settings/capture-forms"
ONE = f"{BASE}/<uuid_param:id>"

urlpatterns = [
    path("capture/<str:token>", views.CaptureView.as_view()),
    path(BASE, views.FormListView.as_view()),
    path(ONE, views.FormView.as_view()),
    path(f"{ONE}/pause", views.FormPauseView.as_view()),
    path(f"{ONE}/resume", views.FormResumeView.as_view()),
    path(f"{ONE}/archive", views.FormArchiveView.as_view()),
    path(f"{ONE}/token/regenerate", views.RegenerateTokenView.as_view()),
    path(f"{ONE}/signing/enable", views.SigningEnableView.as_view()),
    path(f"{ONE}/signing/disable", views.SigningDisableView.as_view()),
    path(f"{ONE}/signing/rotate", views.SecretRotateView.as_view()),
    path(f"{ONE}/signing/revoke-previous", views.RevokePreviousSecretView.as_view()),
    path(f"{ONE}/mapping/confirm", views.MappingConfirmView.as_view()),
    path(f"{ONE}/submissions", views.SubmissionListView.as_view()),
    path("intake-review", views.ReviewListView.as_view()),
    path("intake-review/<uuid_param:id>/resolve", views.ReviewResolveView.as_view()),
    path("intake-review/<uuid_param:id>/dismiss", views.ReviewDismissView.as_view()),
]
