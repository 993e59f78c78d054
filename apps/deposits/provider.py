"""The payment platform's API (Stripe as the reference, research/providers.md): Checkout Sessions created on the
practice's connected account, and the Connect OAuth code exchange.

- POST {api}/v1/checkout/sessions, bearer platform secret key, header `Stripe-Account: acct_…` (the connected
  account takes the payment), `Idempotency-Key`, form-encoded mode=payment, one line item with price_data (currency,
  unit_amount, product_data[name]), success_url, cancel_url, client_reference_id and metadata (our ids) → {"id",
  "url"}; errors {"error": {"type", "code", "message"}}.
- POST {api}/oauth/token (Connect OAuth), form grant_type=authorization_code, code, bearer platform secret key →
  {"stripe_user_id": "acct_…", …}; errors {"error", "error_description"}.

The provider transport speaks to SVC_PAYMENTS_API_URL with httpx (connect 5 s, read 15 s). The sandbox transport
(`make run`, tests by default: SVC_PAYMENTS_TRANSPORT=sandbox) calls nothing: a checkout answers a local URL (the
deposit page with `?sandbox=…`), a code exchange answers the code itself as the account id."""

import hashlib
import logging
from dataclasses import dataclass

import httpx
from django.conf import settings

from apps.deposits.errors import PaymentProviderFailed, PaymentsNotConfigured

logger = logging.getLogger("apps.deposits")

TIMEOUT = httpx.Timeout(15.0, connect=5.0)


@dataclass(frozen=True)
class Checkout:
    session_id: str
    url: str


@dataclass(frozen=True)
class CheckoutRequest:
    idempotency_key: str
    account_id: str
    amount: int
    currency: str
    description: str
    deposit_id: str
    organization_id: str
    success_url: str
    cancel_url: str


class ProviderRefused(Exception):
    """The provider answered with a refusal (4xx other than 429): `code` is short and safe to store."""

    def __init__(self, code: str):
        super().__init__(code)
        self.code = code[:64]


def _base() -> str:
    url = (settings.SVC_PAYMENTS_API_URL or "").rstrip("/")
    if not url or not settings.SVC_PAYMENTS_SECRET_KEY:
        raise PaymentsNotConfigured()
    return url


def _json(response: httpx.Response) -> dict:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _error_code(data: dict) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("code") or error.get("type") or "")
    return str(error or "")


def checkout_form(request: CheckoutRequest) -> dict:
    metadata = {"deposit_request_id": request.deposit_id, "organization_id": request.organization_id}
    form = {
        "mode": "payment",
        "line_items[0][quantity]": "1",
        "line_items[0][price_data][currency]": request.currency,
        "line_items[0][price_data][unit_amount]": str(request.amount),
        "line_items[0][price_data][product_data][name]": request.description,
        "success_url": request.success_url,
        "cancel_url": request.cancel_url,
        "client_reference_id": request.deposit_id,
    }
    for key, value in metadata.items():
        form[f"metadata[{key}]"] = value
        form[f"payment_intent_data[metadata][{key}]"] = value
    return form


class ProviderTransport:
    sandbox = False

    def _post(self, path: str, form: dict, headers: dict | None = None) -> dict:
        base = _base()
        try:
            with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
                response = client.post(
                    f"{base}{path}",
                    data=form,
                    headers={"Authorization": f"Bearer {settings.SVC_PAYMENTS_SECRET_KEY}", **(headers or {})},
                )
        except httpx.HTTPError as exc:
            logger.warning("payment provider %s unreachable (%s)", path, type(exc).__name__)
            raise PaymentProviderFailed() from None
        data = _json(response)
        if response.status_code == 200:
            return data
        if response.status_code == 429 or response.status_code >= 500:
            logger.warning("payment provider %s answered %s", path, response.status_code)
            raise PaymentProviderFailed()
        raise ProviderRefused(_error_code(data) or f"HTTP_{response.status_code}")

    def checkout(self, request: CheckoutRequest) -> Checkout:
        data = self._post(
            "/v1/checkout/sessions",
            checkout_form(request),
            headers={"Stripe-Account": request.account_id, "Idempotency-Key": request.idempotency_key},
        )
        session_id, url = data.get("id"), data.get("url")
        if not isinstance(session_id, str) or not isinstance(url, str) or not url.startswith("https://"):
            logger.warning("payment provider checkout answer without id or https url")
            raise PaymentProviderFailed()
        return Checkout(session_id=session_id[:255], url=url)

    def exchange_code(self, code: str) -> str:
        data = self._post("/oauth/token", {"grant_type": "authorization_code", "code": code})
        account_id = data.get("stripe_user_id")
        if not isinstance(account_id, str) or not account_id:
            raise ProviderRefused("NO_ACCOUNT_IN_ANSWER")
        return account_id[:255]


class SandboxTransport:
    """Calls nothing: what `make run` and the tests use unless they point the API at a local server."""

    sandbox = True

    def checkout(self, request: CheckoutRequest) -> Checkout:
        session_id = "cs_sandbox_" + hashlib.sha256(request.idempotency_key.encode()).hexdigest()[:24]
        return Checkout(session_id=session_id, url=f"{request.cancel_url}?sandbox={session_id}")

    def exchange_code(self, code: str) -> str:
        return "acct_sandbox_" + hashlib.sha256(code.encode()).hexdigest()[:16]


def transport():
    return SandboxTransport() if settings.SVC_PAYMENTS_TRANSPORT == "sandbox" else ProviderTransport()
