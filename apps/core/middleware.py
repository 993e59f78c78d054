"""Django middleware: JSON errors outside views, browser-session-only surfaces, and the per-route request body cap."""

import io

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.urls import Resolver404, get_resolver

from apps.core.browser_pages import error_page_for
from apps.core.credentials import presented_credential, signed_in_user
from apps.core.errors import (
    BrowserSessionRequired,
    NotAuthenticated,
    PayloadTooLarge,
    render,
    server_error_body,
    to_api_error,
)
from apps.core.permissions import ADMIN_AREA, BROWSER_SESSION_SURFACES, under_prefix


class JsonErrorMiddleware:
    """Outermost: whatever escapes a view or a middleware becomes the JSON envelope, even with DEBUG on; on the
    pages people fill in with a browser (apps.core.browser_pages) the browser gets a readable page instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            response = self.get_response(request)
        except Exception as exc:  # the last line of defence: never Django's HTML page
            response = self._render(exc)
        if (
            response.status_code >= 400
            and not request.path.startswith("/admin/")
            and not getattr(response, "keeps_html", False)  # a page meant for people (OAuth sign-in, consent)
        ):
            # A browser's post from a page for people (sign-in, consent, the hosted form) gets a page it can show.
            page = error_page_for(request, response)
            if page is not None:
                return page
            if self._is_html(response):
                # Django's own pages (DEBUG's technical 404, a stray 400) become the envelope too; a 405 keeps the
                # Allow header its view set (RFC 9110 §15.5.6).
                rendered = self._render_status(response.status_code)
                if response.has_header("Allow"):
                    rendered["Allow"] = response["Allow"]
                return rendered
        return response

    @staticmethod
    def _is_html(response) -> bool:
        return response.get("Content-Type", "").startswith("text/html")

    @staticmethod
    def _render_status(status: int):
        from apps.core import errors

        by_status = {
            400: errors.ValidationFailed,
            403: errors.PermissionDenied,
            404: errors.NotFound,
            405: errors.MethodNotAllowed,
            413: errors.PayloadTooLarge,
        }
        if status in by_status:
            return render(by_status[status]())
        if status >= 500:
            return JsonErrorMiddleware._render(RuntimeError(f"HTML error page with status {status}"))
        error = errors.ApiError("The request could not be processed.", code=f"HTTP_{status}")
        error.status_code = status
        return render(error)

    def process_exception(self, request, exc):
        return self._render(exc)

    @staticmethod
    def _render(exc):
        from django.http import JsonResponse

        error = to_api_error(exc)
        if error is None:
            body, _ = server_error_body(exc)
            return JsonResponse(body, status=500)
        return render(error)


class BrowserSessionSurfaceMiddleware:
    """Spec Authentication rule 9: /user, /organization, /agreements, /support and the admin area answer 403
    BROWSER_SESSION_REQUIRED to a machine credential (API key, OAuth token, the MCP server's in-process identity).

    Checked before routing with the API's own authenticators, so a route that does not exist yet answers like one
    that does. Without any credential the API surfaces answer 401 (nothing under them is public); the admin area
    keeps its own sign-in page. A bad bearer answers what the API answers (401, 429, 503). A browser session goes on
    to the route (404 where there is none). Placed after Django's authentication middleware.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        path = request.path_info
        api_surface = under_prefix(path, *BROWSER_SESSION_SURFACES)
        if api_surface or under_prefix(path, ADMIN_AREA):
            try:
                self.check(request, api_surface=api_surface)
            except Exception as exc:
                error = to_api_error(exc)
                if error is None:
                    raise
                return render(error)
        return self.get_response(request)

    @staticmethod
    def check(request, *, api_surface: bool) -> None:
        credential = presented_credential(request)
        if credential is not None and credential.is_machine:
            raise BrowserSessionRequired()
        if credential is None and api_surface and signed_in_user(request) is None:
            raise NotAuthenticated()


def discard_unread_body(request, declared: int) -> None:
    """Under WSGI, read and drop a refused body before answering: nginx has already received all of it (at most
    the platform maximum, SVC_MAX_BODY_BYTES) and is writing it to the worker, and a worker that answered and closed
    without reading it would make nginx's write fail, turning our 413 into a 502. Nothing parses the bytes."""
    stream = request.META.get("wsgi.input")
    if stream is None or isinstance(request, ASGIRequest) or declared > settings.SVC_MAX_BODY_BYTES:
        return
    remaining = declared
    while remaining > 0:
        chunk = stream.read(min(remaining, 64 * 1024))
        if not chunk:
            return
        remaining -= len(chunk)


def body_cap_for(view_func) -> int:
    view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    return getattr(view_class, "max_body_bytes", None) or settings.SVC_DEFAULT_JSON_BODY_BYTES


class BodySizeLimitMiddleware:
    """Answer 413 before parsing when a body exceeds its route's cap (view attribute `max_body_bytes`).

    A declared Content-Length over the cap is refused without reading; a body without one is read at most
    cap + 1 bytes and then handed on from memory, so nothing ever reads an unbounded stream.

    The route is resolved here, in the synchronous middleware chain, rather than in a `process_view` hook: under
    ASGI Django runs every synchronous process_view through its own sync_to_async hop (a thread hand-off per request).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get("CONTENT_LENGTH") in (None, "", "0") and not isinstance(request, ASGIRequest):
            # Under WSGI a request without a length has no body Django will read (nginx gives every body it passes
            # a length): no cap to apply, so no second resolution of the URL per GET (the handler resolves it).
            return self.get_response(request)
        try:
            match = get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
        except Resolver404:
            match = None  # Django answers the 404 itself
        if match is not None:
            refused = self.refuse(request, match.func)
            if refused is not None:
                return refused
        return self.get_response(request)

    def refuse(self, request, view_func):
        """The 413 response for a body over the route's cap, else None (a body without a declared length is then
        read into memory, at most cap bytes)."""
        cap = body_cap_for(view_func)
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared:
            try:
                too_large = int(declared) > cap
            except ValueError:
                return render(PayloadTooLarge("Content-Length is not a number."))
            if not too_large:
                return None
            discard_unread_body(request, int(declared))
            return render(PayloadTooLarge(details={"maxBytes": cap}))
        # No declared length (chunked upload under ASGI): read at most cap + 1 bytes, then serve from memory.
        stream = getattr(request, "_stream", None)
        if stream is None or not hasattr(stream, "read"):
            return None
        data = stream.read(cap + 1)
        if len(data) > cap:
            return render(PayloadTooLarge(details={"maxBytes": cap}))
        request._stream = io.BytesIO(data)
        request.META["CONTENT_LENGTH"] = str(len(data))
        return None
