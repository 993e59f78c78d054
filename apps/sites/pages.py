"""Server-rendered pages for people: the hosted form page (GET /form-page/{token}), its not-found page, and the
thank-you page a browser's form post to /capture/{token} answers with.

They work without JavaScript and are meant to be embedded in the practice's website (an iframe), so they may be
framed by any site; they load nothing (Content-Security-Policy default-src 'none', the one inline style carries a
nonce), post only to this service, send no Referer (the hosted-form token is in the URL) and are never cached."""

import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse
from django.template.loader import render_to_string

from apps.capture.fields import CLICK_IDS, UTM_FIELDS
from apps.capture.models import CaptureForm
from apps.capture.services import form_token
from apps.sites.fields import FORM_PAGE_FIELDS, MAX_LENGTHS

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
PASSED_THROUGH = frozenset(UTM_FIELDS + CLICK_IDS)
MAX_PASSED_VALUE = 255
HONEYPOT = "_svc_hp"  # apps.capture.api.receive drops posts that fill it


def _service_origin() -> str:
    parts = urlsplit(settings.SVC_BASE_URL)
    return f"{parts.scheme}://{parts.netloc}"


def page(request, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    nonce = secrets.token_urlsafe(16)
    content = render_to_string(template, context | {"nonce": nonce}, request=getattr(request, "_request", request))
    response = HttpResponse(content, status=status, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = "; ".join(
        (
            "default-src 'none'",
            f"style-src 'nonce-{nonce}'",
            f"form-action 'self' {_service_origin()}",
            "frame-ancestors *",
            "base-uri 'none'",
        )
    )
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    response.xframe_options_exempt = True  # embedded in the practice's pages (frame-ancestors above)
    response.keeps_html = True  # a page for people, also when it says "not found"
    return response


def form_page_usable(form: CaptureForm | None) -> bool:
    return (
        form is not None
        and form.status == CaptureForm.Status.ACTIVE
        and form.delivery_mode == CaptureForm.Mode.PUBLIC
        and form.kind == CaptureForm.Kind.FORM_SUBMISSIONS
    )


def form_page(request, form: CaptureForm) -> HttpResponse:
    """The form: the default fields, the marketing parameters of the page's own URL as hidden inputs, and the
    honeypot; it posts (urlencoded) to the form's capture URL."""
    passed = [
        (name, value)
        for name, value in request.GET.items()
        if name.lower() in PASSED_THROUGH and value and len(value) <= MAX_PASSED_VALUE
    ]
    fields = [field | {"max_length": MAX_LENGTHS.get(field["name"])} for field in FORM_PAGE_FIELDS]
    context = {
        "practice_name": form.organization.name,
        "action": f"{settings.SVC_BASE_URL}/capture/{form_token(form)}",
        "fields": [field for field in fields if field["type"] != "checkbox"],
        "consent": next(field for field in fields if field["name"] == "marketing_consent"),
        "hidden": passed,
        "honeypot": HONEYPOT,
    }
    return page(request, "sites/form_page.html", context)


def not_found_page(request) -> HttpResponse:
    return page(request, "sites/not_found.html", {}, status=404)


def browser_thanks(request, form: CaptureForm) -> HttpResponse | None:
    """The thank-you page for a browser's form post (urlencoded or multipart, Accept preferring text/html over
    JSON); None for anything else, which keeps the JSON answer."""
    media_type = (request.META.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()
    django_request = getattr(request, "_request", request)
    if media_type not in FORM_TYPES or django_request.get_preferred_type(["application/json", "text/html"]) != (
        "text/html"
    ):
        return None
    return page(request, "sites/thanks.html", {"practice_name": form.organization.name}, status=201)
