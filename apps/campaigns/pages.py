"""The opt-out pages a patient sees: the link in a text message or e-mail is opened with a GET, which only shows a
confirmation page (link scanners and previews open links too, and must not unsubscribe anyone); its button posts the
form back to the same URL, which records the opt-out and shows the result. A mail client's RFC 8058 one-click POST
gets the same result without any page. Plain server-rendered HTML, no JavaScript, nothing loaded from elsewhere
(Content-Security-Policy default-src 'none'; the one inline style carries a nonce), never framed, never cached."""

from django.http import HttpResponse

from apps.core.browser_pages import people_page

BROWSER_PAGES = ("/marketing/unsubscribe/",)  # where a browser's failure is a page (apps.core.browser_pages)
CHANNEL_LABELS = {"sms": "text messages", "whatsapp": "WhatsApp messages", "email": "e-mails"}


def page(request, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    return people_page(request, template, context, status=status)


def confirm_page(request, *, practice_name: str, channel: str) -> HttpResponse:
    context = {
        "practice_name": practice_name,
        "channel_label": CHANNEL_LABELS[channel],
        "action": getattr(request, "_request", request).path,
    }
    return page(request, "campaigns/unsubscribe.html", context)


def done_page(request, *, practice_name: str, channel: str) -> HttpResponse:
    context = {"practice_name": practice_name, "channel_label": CHANNEL_LABELS[channel]}
    return page(request, "campaigns/unsubscribed.html", context)


def not_found_page(request) -> HttpResponse:
    return page(request, "campaigns/not_found.html", {}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    """A browser's failure on these pages (apps.core.browser_pages): a page, never JSON."""
    if status == 404:
        return not_found_page(request)
    return page(request, "campaigns/error.html", {"title": title, "message": message}, status=status)
