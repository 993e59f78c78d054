"""ASGI guard in front of Django: bodies over the platform-wide maximum are refused while streaming.

Django's ASGI handler would otherwise spool a body of any size before a middleware sees it. Per-route caps
(smaller) are enforced by core.middleware.BodySizeLimitMiddleware once the route is known.
"""

import json

from django.conf import settings

_BODY = json.dumps(
    {
        "code": "PAYLOAD_TOO_LARGE",
        "message": "The request body is larger than this service accepts.",
        "details": {},
    }
).encode()


class BodySizeGuard:
    def __init__(self, app, max_bytes: int | None = None):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.max_bytes or settings.SVC_MAX_BODY_BYTES
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    if int(value) > limit:
                        return await self._refuse(send)
                except ValueError:
                    return await self._refuse(send)
        received = 0
        refused = False

        async def bounded_receive():
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    raise BodyTooLarge
            return message

        try:
            return await self.app(scope, bounded_receive, send)
        except BodyTooLarge:
            if refused:
                return await self._refuse(send)
            raise

    @staticmethod
    async def _refuse(send):
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_BODY)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _BODY})


class BodyTooLarge(Exception):
    pass
