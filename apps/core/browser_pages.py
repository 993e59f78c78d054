"""Errors on the few pages a person fills in with a browser (OAuth sign-in and consent, the hosted form page).

Those forms post to routes that also answer API clients. When a browser's post fails there — a CSRF check, a body
over the limit, a rate limit, a server error — the person must get a page they can read, not the JSON envelope; an
API client (Accept JSON, `*/*` or none) keeps the envelope. `core` imports no app, so each app registers the
renderer of its own error page for its path prefixes (in AppConfig.ready); JsonErrorMiddleware asks here.
"""

import json
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse
from django.template.loader import render_to_string

# renderer(request, *, title, message, status) -> HttpResponse
ErrorPageRenderer = Callable[..., HttpResponse]

_RENDERERS: dict[str, ErrorPageRenderer] = {}

KEPT_HEADERS = ("Retry-After",)
SERVER_ERROR_MESSAGE = "Something went wrong on our side. Please try again in a few minutes."
# Envelope codes whose own message is meant for a developer: what a person reads instead.
PERSON_MESSAGES = {
    "CSRF_FAILED": (
        "This page could not be sent",
        "Your browser did not confirm that this form came from this page, so nothing was sent. Go back, reload the "
        "page and try again. If it happens again, check that cookies are allowed for this site.",
    ),
}
TITLES = {
    400: "Something in the form was not right",
    403: "This page could not be sent",
    404: "Not found",
    413: "Too much was sent",
    429: "Too many attempts",
}


def register_error_page(prefix: str, renderer: ErrorPageRenderer) -> None:
    """Errors under `prefix` (a path prefix) are shown to a browser with `renderer`."""
    _RENDERERS[prefix] = renderer


def wants_html(request) -> bool:
    """A browser's navigation: Accept prefers text/html over JSON (`*/*` or no Accept keeps JSON)."""
    request = getattr(request, "_request", request)
    return request.get_preferred_type(["application/json", "text/html"]) == "text/html"


def _renderer_for(request) -> ErrorPageRenderer | None:
    path = request.path_info
    return next((renderer for prefix, renderer in _RENDERERS.items() if path.startswith(prefix)), None)


def _envelope(response) -> dict:
    if not response.get("Content-Type", "").startswith("application/json"):
        return {}
    try:
        body = json.loads(response.content)
    except (ValueError, UnicodeDecodeError, AttributeError):
        return {}
    return body if isinstance(body, dict) else {}


def error_page_for(request, response) -> HttpResponse | None:
    """The page a person gets instead of `response` (an error), or None when the request is not a browser's on one
    of the registered pages."""
    renderer = _renderer_for(request)
    if renderer is None or not wants_html(request):
        return None
    status = response.status_code
    body = _envelope(response)
    if body.get("code") in PERSON_MESSAGES:
        title, message = PERSON_MESSAGES[body["code"]]
    elif status >= 500:
        title, message = "Something went wrong", SERVER_ERROR_MESSAGE
        error_id = (body.get("details") or {}).get("errorId")
        if error_id:
            message = f"{message} (Reference: {error_id})"
    else:
        title = TITLES.get(status, "This request could not be completed")
        message = body.get("message") or "The request could not be completed. Go back and try again."
    page = renderer(request, title=title, message=message, status=status)
    for name in KEPT_HEADERS:
        if name in response:
            page[name] = response[name]
    page.keeps_html = True
    return page


def _service_origin() -> str:
    parts = urlsplit(settings.SVC_BASE_URL)
    return f"{parts.scheme}://{parts.netloc}"


def people_page(request, template: str, context: dict, *, status: int = 200, framable: bool = False) -> HttpResponse:
    """A server-rendered page for people: loads nothing (Content-Security-Policy default-src 'none'; the one inline
    style carries a nonce), posts only to this service, sends a Referer only to this service (`same-origin`: a
    same-origin form post keeps its Origin), never cached. `framable` pages may be embedded by any site (the hosted
    form page in a practice's website); the others are never framed."""
    nonce = secrets.token_urlsafe(16)
    content = render_to_string(template, context | {"nonce": nonce}, request=getattr(request, "_request", request))
    response = HttpResponse(content, status=status, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = "; ".join(
        (
            "default-src 'none'",
            f"style-src 'nonce-{nonce}'",
            f"form-action 'self' {_service_origin()}",
            "frame-ancestors *" if framable else "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "same-origin"
    if framable:
        response.xframe_options_exempt = True
    else:
        response["X-Frame-Options"] = "DENY"
    response.keeps_html = True  # a page for people, also when it says "not found"
    return response
