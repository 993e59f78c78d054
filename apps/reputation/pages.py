"""The page a patient opens from a review request (GET /r/{token} in a browser) and its two form posts: the rating
(POST /r/{token}/page/rating) and "leave a public review" (POST /r/{token}/page/reviewed, which answers 303 to the
review site). Plain server-rendered HTML, no JavaScript, nothing loaded from elsewhere (apps.core.browser_pages
people_page), never framed, never cached. The review site's origin is added to form-action on the page that posts
there (a form post's redirect is checked against form-action)."""

from urllib.parse import urlsplit

from django.http import HttpResponse

from apps.core.browser_pages import people_page

BROWSER_PAGES = ("/r/",)  # where a browser's failure is a page (apps.core.browser_pages)
DEFAULT_QUESTION = "How was your visit?"
STARS = (5, 4, 3, 2, 1)


def _origin(url: str) -> str:
    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme == "https" and parts.netloc else ""


def page(request, template: str, context: dict, *, status: int = 200, review_url: str = "") -> HttpResponse:
    response = people_page(request, template, context, status=status)
    origin = _origin(review_url)
    if origin:
        response["Content-Security-Policy"] = response["Content-Security-Policy"].replace(
            "form-action 'self'", f"form-action 'self' {origin}", 1
        )
    return response


def _base(review_request, question: str) -> dict:
    return {
        "practice_name": review_request.organization.name,
        "location_name": review_request.location.name,
        "question": question or DEFAULT_QUESTION,
    }


def rate_page(request, *, review_request, token: str, question: str, problem: str = "", status: int = 200):
    context = _base(review_request, question) | {
        "action": f"/r/{token}/page/rating",
        "stars": STARS,
        "problem": problem,
    }
    return page(request, "reputation/rate.html", context, status=status)


def outcome_page(request, *, review_request, token: str, question: str, outcome, status: int = 200) -> HttpResponse:
    context = _base(review_request, question) | {
        "invited": outcome.invited,
        "reviewed": review_request.status == "reviewed",
        "rating": outcome.rating,
        "action": f"/r/{token}/page/reviewed",
    }
    return page(request, "reputation/thanks.html", context, status=status, review_url=outcome.review_url)


def not_found_page(request) -> HttpResponse:
    return page(request, "reputation/not_found.html", {}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    if status == 404:
        return not_found_page(request)
    return page(request, "reputation/error.html", {"title": title, "message": message}, status=status)
