"""ASGI entry point: HTTP through Django behind a streaming body-size guard; websockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from apps.core.asgi import BodySizeGuard  # noqa: E402
from config.websockets import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": BodySizeGuard(django_asgi_app),
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
