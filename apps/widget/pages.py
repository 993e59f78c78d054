"""The hosted demo page of a chat widget (GET /widget/{embedKey}/demo): a plain "practice website" with the widget's
snippet pasted in, so a practice (or `make run` on a laptop) sees the widget working before pasting it into its own
site. The page's origin must be among the widget's allowed origins for the widget to answer there; the page says
which origin that is and whether it is allowed.

Unlike apps.core.browser_pages.people_page (which loads nothing), this page loads one script — the widget's, from
this service — so it has its own Content-Security-Policy: scripts from the service only, the widget's stylesheet by
nonce, fetch and WebSocket connections to the service only."""

import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse
from django.template.loader import render_to_string

from apps.widget.api.serializers import normalised_origin


def _service_origin() -> str:
    parts = urlsplit(settings.SVC_BASE_URL)
    return f"{parts.scheme}://{parts.netloc}"


def _csp(nonce: str) -> str:
    service = _service_origin()
    socket = service.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src 'nonce-{nonce}' {service}",
            f"style-src 'nonce-{nonce}'",
            f"connect-src {service} {socket}",
            "img-src 'self' data:",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )


def _page(request, context: dict, *, status: int) -> HttpResponse:
    nonce = secrets.token_urlsafe(16)
    content = render_to_string("widget/demo.html", context | {"nonce": nonce}, request=request)
    response = HttpResponse(content, status=status, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = _csp(nonce)
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "same-origin"
    response["X-Frame-Options"] = "DENY"
    response.keeps_html = True
    return response


def demo_page(request, *, widget) -> HttpResponse:
    """The demo website with `widget`'s snippet (script src on SVC_BASE_URL, as the API's snippet)."""
    page_origin = normalised_origin(request.build_absolute_uri("/")) or ""
    context = {
        "practice_name": widget.organization.name,
        "widget_name": widget.name,
        "script_src": f"{settings.SVC_BASE_URL}/static/widget/widget.js",
        "embed_key": widget.embed_key,
        "page_origin": page_origin,
        "origin_allowed": page_origin in widget.allowed_origins,
        "found": True,
    }
    return _page(request, context, status=200)


def not_found_page(request) -> HttpResponse:
    return _page(request, {"found": False}, status=404)
