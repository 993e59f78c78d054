"""The patient's link: GET /l/{token} (the deposit page) and POST /l/{token}/checkout (the provider's checkout),
against the sandbox and against a local server speaking the payment platform's API."""

import json
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from apps.deposits import links
from tests.deposits.helpers import (
    connect_account,
    create_deposit,
    link_path,
    make_patient,
    post_json,
    sent_deposit,
    stored,
    url,
)
from tests.helpers import assert_error

HTML = {"HTTP_ACCEPT": "text/html,application/xhtml+xml"}


@pytest.fixture
def patient(owner):
    return make_patient(owner.organization)


def test_the_deposit_page_shows_practice_amount_and_reason_and_posts_to_checkout(owner, api, patient):
    deposit = sent_deposit(api, patient, amount=12550, currency="gbp", reason="Implant consultation")
    page = Client().get(link_path(deposit), **HTML)
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert owner.organization.name in html and "£125.50" in html and "Implant consultation" in html
    assert f'action="{link_path(deposit)}/checkout"' in html
    assert "form-action 'self'" in page["Content-Security-Policy"]
    assert "https://checkout.stripe.com" in page["Content-Security-Policy"]
    assert page["X-Frame-Options"] == "DENY" and page["Cache-Control"] == "no-store"


def _tampered(token: str) -> str:
    value, _, signature = token.rpartition(":")
    return f"{value[:-1]}{'A' if value[-1] != 'A' else 'B'}:{signature}"


def test_tampered_truncated_expired_foreign_and_superseded_tokens_are_404(owner, outsider, api, patient):
    deposit = sent_deposit(api, patient)
    path = link_path(deposit)
    token = path.removeprefix("/l/")
    record = stored(owner.organization, deposit["id"])
    expired = links.make(
        organization_id=owner.organization.id, deposit_id=record.id, expires_at=timezone.now() - timedelta(seconds=1)
    )
    foreign = links.make(
        organization_id=outsider.organization.id, deposit_id=record.id, expires_at=record.link_expires_at
    )
    other_expiry = links.make(
        organization_id=owner.organization.id, deposit_id=record.id, expires_at=record.link_expires_at + timedelta(1)
    )
    for bad in (_tampered(token), token[:-3], "nonsense", expired, foreign, other_expiry, "x" * 300):
        page = Client().get(f"/l/{bad}", **HTML)
        assert page.status_code == 404 and "not valid" in page.content.decode()
        assert_error(Client().get(f"/l/{bad}"), 404, "NOT_FOUND")
        assert_error(Client().post(f"/l/{bad}/checkout"), 404, "NOT_FOUND")
    assert Client().get(path, **HTML).status_code == 200


def test_a_cancelled_or_draft_requests_link_is_404(owner, api, patient):
    deposit = sent_deposit(api, patient)
    path = link_path(deposit)
    assert post_json(api, url(deposit, "cancel")).status_code == 200
    assert_error(Client().get(path), 404, "NOT_FOUND")
    draft = create_deposit(api, patient)
    record = stored(owner.organization, draft["id"])
    token = links.make(
        organization_id=owner.organization.id, deposit_id=record.id, expires_at=timezone.now() + timedelta(days=1)
    )
    assert_error(Client().get(f"/l/{token}"), 404, "NOT_FOUND")


def test_sending_again_after_expiry_stops_the_earlier_link(owner, api, patient):
    from apps.deposits.services import expire_due

    deposit = sent_deposit(api, patient)
    first = link_path(deposit)
    expire_due(now=timezone.now() + timedelta(days=15))
    again = post_json(api, url(deposit, "send"), {"validDays": 3})
    second = link_path(again.json())
    assert second != first
    assert Client().get(second).status_code == 200
    assert_error(Client().get(first), 404, "NOT_FOUND")


def test_checkout_in_the_sandbox_answers_a_local_checkout_url_and_redirects_a_browser(owner, api, patient):
    connect_account(owner.organization)
    deposit = sent_deposit(api, patient)
    path = link_path(deposit)
    response = Client().post(f"{path}/checkout")
    assert response.status_code == 200, response.content
    checkout_url = response.json()["checkoutUrl"]
    assert urlsplit(checkout_url).path == path and "sandbox=cs_sandbox_" in checkout_url
    again = Client().post(f"{path}/checkout")
    assert again.json()["checkoutUrl"] == checkout_url  # idempotent per link
    browser = Client().post(f"{path}/checkout", **HTML)
    assert browser.status_code == 303 and browser["Location"] == checkout_url
    page = Client().get(urlsplit(checkout_url).path + "?" + urlsplit(checkout_url).query, **HTML)
    assert page.status_code == 200 and "no payment was taken" in page.content.decode()
    assert stored(owner.organization, deposit["id"]).checkout_session_id.startswith("cs_sandbox_")


def test_checkout_without_a_connected_account_is_409(owner, api, patient):
    deposit = sent_deposit(api, patient)
    assert_error(Client().post(f"{link_path(deposit)}/checkout"), 409, "PAYMENTS_NOT_CONNECTED")
    page = Client().post(f"{link_path(deposit)}/checkout", **HTML)
    assert page.status_code == 409 and page["Content-Type"].startswith("text/html")


@pytest.fixture
def stripe(httpserver, settings):
    """The payment platform's API on a local server."""
    settings.SVC_PAYMENTS_TRANSPORT = "provider"
    settings.SVC_PAYMENTS_API_URL = httpserver.url_for("/")
    return httpserver


def test_checkout_creates_a_session_on_the_connected_account(owner, api, patient, stripe):
    from werkzeug import Response

    connect_account(owner.organization, "acct_1PracticeABC")
    deposit = sent_deposit(api, patient, amount=9900, currency="eur", reason="Aligner assessment")
    seen = []

    def session(request):
        seen.append(request)
        body = {"id": "cs_test_a1b2c3", "url": "https://checkout.stripe.com/c/pay/cs_test_a1b2c3"}
        return Response(json.dumps(body), content_type="application/json")

    stripe.expect_request("/v1/checkout/sessions", method="POST").respond_with_handler(session)
    response = Client().post(f"{link_path(deposit)}/checkout")
    assert response.status_code == 200, response.content
    assert response.json() == {"checkoutUrl": "https://checkout.stripe.com/c/pay/cs_test_a1b2c3"}
    (request,) = seen
    assert request.headers["Authorization"] == "Bearer sk_test_platform"
    assert request.headers["Stripe-Account"] == "acct_1PracticeABC"
    assert re.fullmatch(rf"deposit-{deposit['id']}-\d+", request.headers["Idempotency-Key"])
    form = {key: values[0] for key, values in parse_qs(request.get_data(as_text=True)).items()}
    assert form["mode"] == "payment"
    assert form["line_items[0][price_data][currency]"] == "eur"
    assert form["line_items[0][price_data][unit_amount]"] == "9900"
    assert form["line_items[0][price_data][product_data][name]"] == "Deposit: Aligner assessment"
    assert form["metadata[deposit_request_id]"] == deposit["id"]
    assert form["payment_intent_data[metadata][deposit_request_id]"] == deposit["id"]
    assert form["metadata[organization_id]"] == str(owner.organization.id)
    assert form["client_reference_id"] == deposit["id"]
    assert form["success_url"].endswith(f"{link_path(deposit)}?paid=1")
    assert stored(owner.organization, deposit["id"]).checkout_session_id == "cs_test_a1b2c3"


def test_a_provider_refusal_is_409_and_an_outage_503(owner, api, patient, stripe):
    from werkzeug import Response

    connect_account(owner.organization)
    deposit = sent_deposit(api, patient)
    error = {"error": {"type": "invalid_request_error", "code": "account_invalid", "message": "No such account"}}
    stripe.expect_oneshot_request("/v1/checkout/sessions", method="POST").respond_with_response(
        Response(json.dumps(error), status=400, content_type="application/json")
    )
    refused = assert_error(Client().post(f"{link_path(deposit)}/checkout"), 409, "PAYMENT_CHECKOUT_REFUSED")
    assert refused["details"] == {"providerCode": "account_invalid"}
    stripe.expect_oneshot_request("/v1/checkout/sessions", method="POST").respond_with_data("oops", status=502)
    outage = Client().post(f"{link_path(deposit)}/checkout")
    assert_error(outage, 503, "PAYMENT_PROVIDER_UNAVAILABLE")
    assert outage["Retry-After"] == "30"
    assert stored(owner.organization, deposit["id"]).checkout_session_id == ""
