"""WebSocket routes. Each app that owns a socket adds its consumer here."""

websocket_urlpatterns: list = []
