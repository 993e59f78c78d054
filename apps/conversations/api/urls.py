from django.urls import path

from apps.conversations.api import views

BASE = "settings/channel-connections"
ONE = f"{BASE}/<uuid_param:id>"

urlpatterns = [
    path(BASE, views.ConnectionListView.as_view()),
    path(ONE, views.ConnectionItemView.as_view()),
    path(f"{ONE}/rotate-token", views.RotateTokenView.as_view()),
]
