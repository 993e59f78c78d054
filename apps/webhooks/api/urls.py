from django.urls import path

from apps.webhooks.api import views

BASE = "settings/webhook-endpoints"
ONE = f"{BASE}/<uuid_param:id>"

urlpatterns = [
    path(BASE, views.EndpointListView.as_view()),
    path(f"{BASE}/subscriptions", views.SubscriptionView.as_view()),
    path(ONE, views.EndpointView.as_view()),
    path(f"{ONE}/test", views.TestView.as_view()),
    path(f"{ONE}/enable", views.EnableView.as_view()),
    path(f"{ONE}/pause", views.PauseView.as_view()),
    path(f"{ONE}/secret/rotate", views.RotateSecretView.as_view()),
    path(f"{ONE}/secret/revoke-previous", views.RevokePreviousSecretView.as_view()),
    path(f"{ONE}/deliveries", views.DeliveryListView.as_view()),
    path(f"{ONE}/deliveries/<uuid_param:delivery_id>", views.DeliveryView.as_view()),
    path(f"{ONE}/deliveries/<uuid_param:delivery_id>/replay", views.ReplayView.as_view()),
]
