"""Server-rendered pages for people: the hosted form page (GET /form-page/{token}), its not-found page, the
thank-you page a browser's form post to /capture/{token} answers with, the same form again with each problem next to
its field when the post cannot become a lead, and the error page for anything else that fails on the way.

They work without JavaScript and are meant to be embedded in the practice's website (an iframe), so they may be
framed by any site; they load nothing (Content-Security-Policy default-src 'none', the one inline style carries a
nonce), post only to this service, send a Referer only to this service (`same-origin`: the hosted-form token is
in the URL; `no-referrer` would also make a browser's form post carry "Origin: null") and are never cached."""

from django.conf import settings
from django.http import HttpResponse

from apps.capture.public import CLICK_IDS, UTM_FIELDS, CaptureForm, form_token, interpret
from apps.core.browser_pages import people_page, wants_html
from apps.sites.fields import FORM_PAGE_FIELDS, MAX_LENGTHS

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
PASSED_THROUGH = frozenset(UTM_FIELDS + CLICK_IDS)
MAX_PASSED_VALUE = 255
HONEYPOT = "_svc_hp"  # apps.capture.api.receive drops posts that fill it
PAGE_MARKER = "_svc_form_page"  # sent by the hosted page's form: its post is checked and the page shown again
BROWSER_PAGES = ("/form-page/", "/capture/")  # where a browser's failure is an error page (apps.core.browser_pages)


def page(request, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    return people_page(request, template, context, status=status, framable=True)  # embedded in the practice's pages


def form_page_usable(form: CaptureForm | None) -> bool:
    return (
        form is not None
        and form.status == CaptureForm.Status.ACTIVE
        and form.delivery_mode == CaptureForm.Mode.PUBLIC
        and form.kind == CaptureForm.Kind.FORM_SUBMISSIONS
    )


def form_page(request, form: CaptureForm, *, values=None, errors=None, status: int = 200) -> HttpResponse:
    """The form: the default fields, the marketing parameters of the page's own URL as hidden inputs, and the
    honeypot; it posts (urlencoded) to the form's capture URL. Shown again after a post that cannot become a lead:
    with what was typed (`values`) and each problem next to its field (`errors`)."""
    values, errors = values or {}, errors or {}
    source = values if values else request.GET
    passed = [
        (name, value)
        for name, value in source.items()
        if name.lower() in PASSED_THROUGH and isinstance(value, str) and value and len(value) <= MAX_PASSED_VALUE
    ]
    fields = [
        field
        | {
            "max_length": MAX_LENGTHS.get(field["name"]),
            "value": _text(values.get(field["name"])),
            "error": errors.get(field["name"], ""),
        }
        for field in FORM_PAGE_FIELDS
    ]
    context = {
        "practice_name": form.organization.name,
        "action": f"{settings.SVC_BASE_URL}/capture/{form_token(form)}",
        "fields": [field for field in fields if field["type"] != "checkbox"],
        "consent": next(field for field in fields if field["name"] == "marketing_consent"),
        "hidden": passed,
        "honeypot": HONEYPOT,
        "marker": PAGE_MARKER,
        "errors": errors,
    }
    return page(request, "sites/form_page.html", context, status=status)


def _text(value) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return value if isinstance(value, str) else ""


def form_page_problems(form: CaptureForm, fields: dict) -> dict[str, str]:
    """What stops a post of the hosted page from becoming a lead, by field: the page's own required fields, then the
    capture processor's rule (apps.capture.fields: a usable e-mail or phone)."""
    problems = {
        field["name"]: f"Enter your {field['label'].lower()}."
        for field in FORM_PAGE_FIELDS
        if field["required"] and not _text(fields.get(field["name"])).strip()
    }
    return problems | interpret(fields, form.field_mapping).lead_problems()


def hosted_form_refusal(request, form: CaptureForm, fields: dict | None) -> HttpResponse | None:
    """For a post from the hosted page that cannot become a lead: the page again with the problems (400), before
    anything is stored, so the patient fixes them instead of being thanked for a lead the practice never sees.
    None for anything else (other senders, a post the honeypot caught, a usable post)."""
    django_request = getattr(request, "_request", request)
    if fields is None or django_request.POST.get(PAGE_MARKER) is None or not wants_html(request):
        return None
    if form.kind != CaptureForm.Kind.FORM_SUBMISSIONS:
        return None
    problems = form_page_problems(form, fields)
    if not problems:
        return None
    return form_page(request, form, values=fields, errors=problems, status=400)


def not_found_page(request) -> HttpResponse:
    return page(request, "sites/not_found.html", {}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    """What a browser shows when its post to the form fails (apps.core.browser_pages): a page, never JSON."""
    if status == 404:
        return not_found_page(request)
    return page(request, "sites/error.html", {"title": title, "message": message}, status=status)


def browser_thanks(request, form: CaptureForm) -> HttpResponse | None:
    """The thank-you page for a browser's form post (urlencoded or multipart, Accept preferring text/html over
    JSON); None for anything else, which keeps the JSON answer."""
    media_type = (request.META.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()
    if media_type not in FORM_TYPES or not wants_html(request):
        return None
    return page(request, "sites/thanks.html", {"practice_name": form.organization.name}, status=201)
