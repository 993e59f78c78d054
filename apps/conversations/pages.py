"""The one page for people the conversations app shows: a browser's failed return from the short-video platform's
OAuth (apps.core.browser_pages renders it instead of the JSON envelope; registered in apps.py)."""

from django.http import HttpResponse

from apps.core.browser_pages import people_page

BROWSER_PAGES = ("/webhooks/short-video/oauth/",)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    return people_page(request, "conversations/connect_error.html", {"title": title, "message": message}, status=status)
