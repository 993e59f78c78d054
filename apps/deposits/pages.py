"""The deposit page a patient opens from their link (GET /l/{token}) and its checkout post (POST
/l/{token}/checkout). Plain server-rendered HTML, no JavaScript, nothing loaded from elsewhere (apps.core.browser_pages
people_page), never framed, never cached. The page's form may post on to the payment platform's checkout (its origin
is added to form-action, since the checkout post answers with a redirect there)."""

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse

from apps.core.browser_pages import people_page
from apps.deposits.models import WHOLE_UNIT_CURRENCIES

BROWSER_PAGES = ("/l/",)  # where a browser's failure is a page (apps.core.browser_pages)
# Shown without decimals (the platform still counts in hundredths for HUF); their amounts are whole (services).
ZERO_DECIMAL = WHOLE_UNIT_CURRENCIES
SYMBOLS = {"gbp": "£", "eur": "€", "usd": "$", "chf": "CHF ", "aud": "A$", "cad": "C$", "nzd": "NZ$"}


def money(amount: int, currency: str) -> str:
    symbol = SYMBOLS.get(currency, currency.upper() + " ")
    if currency in ZERO_DECIMAL:
        return f"{symbol}{amount // 100:,}"
    return f"{symbol}{amount // 100:,}.{amount % 100:02d}"


def _checkout_origin() -> str:
    parts = urlsplit(settings.SVC_PAYMENTS_CHECKOUT_ORIGIN or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme == "https" and parts.netloc else ""


def page(request, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    response = people_page(request, template, context, status=status)
    origin = _checkout_origin()
    if origin:
        response["Content-Security-Policy"] = response["Content-Security-Policy"].replace(
            "form-action 'self'", f"form-action 'self' {origin}", 1
        )
    return response


def deposit_page(request, *, deposit, token: str) -> HttpResponse:
    query = getattr(request, "query_params", request.GET)
    context = {
        "practice_name": deposit.organization.name,
        "amount": money(deposit.amount, deposit.currency),
        "reason": deposit.reason,
        "paid": deposit.status == "paid",
        "returned_paid": query.get("paid") == "1",
        "sandbox": bool(query.get("sandbox")),
        "action": f"/l/{token}/checkout",
        "expires_at": deposit.link_expires_at,
    }
    return page(request, "deposits/deposit.html", context)


def not_found_page(request) -> HttpResponse:
    return page(request, "deposits/not_found.html", {}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    if status == 404:
        return not_found_page(request)
    return page(request, "deposits/error.html", {"title": title, "message": message}, status=status)
