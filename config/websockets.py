"""WebSocket routes. Each app that owns a socket adds its consumer here."""

from channels.security.websocket import AllowedHostsOriginValidator
from channels.sessions import SessionMiddlewareStack
from django.urls import path

from apps.today.consumers import LiveUpdatesConsumer
from apps.widget.consumers import WidgetConsumer


def members_only(consumer):
    """A member's socket: same-site pages only (allowed hosts), with the session."""
    return AllowedHostsOriginValidator(SessionMiddlewareStack(consumer))


websocket_urlpatterns: list = [
    path("today/ws", members_only(LiveUpdatesConsumer.as_asgi())),
    # Visitors' sockets come from the practices' websites: each widget checks its own allowed origins.
    path("widget/<str:embed_key>/ws", WidgetConsumer.as_asgi()),
]
