from django.urls import path

from apps.voice.api import views

urlpatterns = [
    path("settings/ai-voice", views.VoiceSettingsView.as_view()),
    path("calls/<uuid_param:id>/transcript", views.TranscriptView.as_view()),
    path("calls/<uuid_param:id>/summary", views.SummaryView.as_view()),
]
