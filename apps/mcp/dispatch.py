"""Running an operation for an agent: an internal request through the ordinary route, with the same middleware,
validation, permissions, scopes and tenancy as any client; no second implementation of any route.

The caller's identity travels on the internal request object (InternalIdentityAuthentication), never as a bearer
header: the token was issued for the MCP server, and the REST surface must not accept it as its own credential.
"""

import json
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.test.client import RequestFactory
from rest_framework.authentication import BaseAuthentication

INTERNAL_IDENTITY_ATTR = "_svc_internal_identity"

_factory = RequestFactory()
_handler: BaseHandler | None = None


def _get_handler() -> BaseHandler:
    global _handler
    if _handler is None:
        handler = BaseHandler()
        handler.load_middleware()
        _handler = handler
    return _handler


class InternalIdentityAuthentication(BaseAuthentication):
    """The identity an internal request was built with. An attribute of the request object in this process:
    nothing a client sends can set it."""

    def authenticate(self, request):
        return getattr(request._request, INTERNAL_IDENTITY_ATTR, None)


@dataclass
class Reply:
    status: int
    content_type: str
    body: bytes
    etag: str | None = None
    retry_after: str | None = None  # the Retry-After header of a 429 or 503

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def _query_string(query: dict | None) -> str:
    if not query:
        return ""
    flat = {key: (json.dumps(value) if isinstance(value, dict | list) else value) for key, value in query.items()}
    flat = {key: ("true" if value is True else "false" if value is False else value) for key, value in flat.items()}
    return urlencode(flat)


def run(
    *,
    method: str,
    path: str,
    query: dict | None,
    body,
    user,
    credential,
    headers: dict | None = None,
    remote_addr: str = "",
) -> Reply:
    """Call `method path` as `user` with `credential`, in this process (from the agent's address, when given)."""
    target = path + (f"?{_query_string(query)}" if query else "")
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in (headers or {}).items()}
    base = urlsplit(settings.SVC_BASE_URL)
    extra.update(
        HTTP_HOST=base.netloc, SERVER_NAME=base.hostname or "localhost", **{"wsgi.url_scheme": base.scheme or "http"}
    )
    if remote_addr:
        extra["REMOTE_ADDR"] = remote_addr
    if method in ("GET", "DELETE") and body is None:
        request = _factory.generic(method, target, **extra)
    else:
        payload = json.dumps(body if body is not None else {}).encode()
        request = _factory.generic(method, target, payload, content_type="application/json", **extra)
    setattr(request, INTERNAL_IDENTITY_ATTR, (user, credential))
    request._dont_enforce_csrf_checks = True
    response = _get_handler().get_response(request)
    content = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    return Reply(
        status=response.status_code,
        content_type=response.get("Content-Type", ""),
        body=content,
        etag=response.get("ETag"),
        retry_after=response.get("Retry-After"),
    )
