"""WebSocket routes. Each app that owns a socket adds its consumer here."""

from django.urls import path

from apps.today.consumers import LiveUpdatesConsumer

websocket_urlpatterns: list = [
    path("today/ws", LiveUpdatesConsumer.as_asgi()),
]
