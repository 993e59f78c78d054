"""AI assist routes: under /conversations/{id}/assist/, included from config/urls.py before the conversations app."""

from django.urls import path

from apps.assist.api import views

urlpatterns = [
    path("conversations/<uuid_param:id>/assist/suggest-reply", views.SuggestReplyView.as_view()),
    path("conversations/<uuid_param:id>/assist/summarize", views.SummarizeView.as_view()),
]
