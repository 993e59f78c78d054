"""Review findings on deposits and payments: tokens and states with NUL, unstorable webhook content, a request paid
twice, a refund's charge proving a payment only for the request's amount, connected-account events in any order,
whole-forint HUF amounts, and the outage answers (503 with Retry-After) of both webhooks and the checkout."""

import json
import logging
import time
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from apps.deposits.models import CallbackReceipt, DepositRequest, PaymentAccount, Subscription
from apps.events.models import Event
from tests.deposits import test_billing as billing
from tests.deposits.helpers import (
    DEPOSITS,
    connect_account,
    create_deposit,
    deposit_events,
    link_path,
    make_patient,
    patch_json,
    post_json,
    sent_deposit,
    stored,
    url,
)
from tests.deposits.test_callbacks import (
    ACCOUNT,
    charge_refunded,
    deliver,
    event,
    intent_succeeded,
    session_completed,
)
from tests.helpers import assert_error

CALLBACK = "/webhooks/payments-connect/oauth/callback"


@pytest.fixture
def sent(owner, api):
    connect_account(owner.organization, ACCOUNT)
    patient = make_patient(owner.organization)
    return owner.organization, sent_deposit(api, patient, amount=5000, currency="gbp")


@contextmanager
def failing(statement: str):
    """The database refuses statements starting so (an outage as the view meets it)."""

    def refuse(execute, sql, params, many, context):
        if sql.startswith(statement):
            raise OperationalError("connection lost")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        yield


# --- 1. NUL in tokens and states -------------------------------------------------------------------------------------


def test_link_tokens_with_nul_are_404(sent):
    _, deposit = sent
    path = link_path(deposit)
    for bad in ("/l/%00", f"{path}%00", "/l/abc%00def", "/l/%ED%A0%80"):
        assert_error(Client().get(bad), 404, "NOT_FOUND")
        assert_error(Client().post(f"{bad}/checkout"), 404, "NOT_FOUND")
    assert Client().get(path).status_code == 200


def test_oauth_states_with_nul_are_400(owner, api):
    for state in ("\x00", "abc\x00def", "%ED%A0%80"):
        assert_error(Client().get(CALLBACK, {"code": "ac_x", "state": state}), 400, "CONNECT_STATE_INVALID")
    raw = Client().get(f"{CALLBACK}?code=ac_x&state=%00%ED%A0%80")
    assert_error(raw, 400, "CONNECT_STATE_INVALID")
    assert not PaymentAccount.objects.for_org(owner.organization).exists()


# --- 5. unstorable webhook content -----------------------------------------------------------------------------------


def _unstorable_events(deposit, org_id):
    nul_intent = session_completed(deposit, org_id, pi="pi_3\x00bad")
    surrogate_type = session_completed(deposit, org_id)
    surrogate_type["type"] = "checkout.session.completed\ud800"
    nul_key = session_completed(deposit, org_id)
    nul_key["data"]["object"]["metadata"]["x\x00"] = "1"
    nul_customer = session_completed(deposit, org_id)
    nul_customer["data"]["object"]["customer"] = "cus_\udfff"
    return [nul_intent, surrogate_type, nul_key, nul_customer]


def test_a_signed_connect_event_with_nul_or_lone_surrogates_is_400_and_stores_nothing(sent, api):
    org, deposit = sent
    for body in _unstorable_events(deposit, org.id):
        response = deliver(json.dumps(body).encode())
        assert "fields" in assert_error(response, 400, "VALIDATION_ERROR")["details"]
    assert CallbackReceipt.objects.count() == 0
    assert api.get(url(deposit)).json()["status"] == "sent"


def test_a_signed_billing_event_with_nul_or_lone_surrogates_is_400_and_stores_nothing(owner):
    for field, value in (("customer", "cus_\x00"), ("status", "active\ud83d"), ("id", "sub_\x00")):
        body = billing.subscription_event("customer.subscription.created", id="evt_bad", org_id=owner.organization.id)
        body["data"]["object"][field] = value
        assert_error(billing.deliver(body), 400, "VALIDATION_ERROR")
    body = billing.subscription_event("customer.subscription.created", id="evt_\x00", org_id=owner.organization.id)
    assert_error(billing.deliver(body), 400, "VALIDATION_ERROR")
    assert CallbackReceipt.objects.count() == 0 and not Subscription.objects.unscoped().exists()


# --- 4. paid twice ---------------------------------------------------------------------------------------------------


def test_a_second_payment_keeps_the_first_and_refunds_of_either_find_the_request(sent, api, caplog):
    org, deposit = sent
    deliver(session_completed(deposit, org.id, pi="pi_3First"))
    caplog.set_level(logging.WARNING, logger="apps.deposits")
    assert deliver(intent_succeeded(deposit, org.id, pi="pi_3Second")).status_code == 200
    row = stored(org, deposit["id"])
    assert (row.status, row.payment_intent_id, row.extra_payment_intent_ids) == ("paid", "pi_3First", ["pi_3Second"])
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(deposit["id"] in message for message in warned)
    assert not any("pi_3" in message or ACCOUNT in message for message in warned)
    # the practice refunds the duplicate: the request's own payment stands, nothing is left pending
    assert deliver(charge_refunded(deposit, 5000, pi="pi_3Second")).status_code == 200
    read = api.get(url(deposit)).json()
    assert (read["status"], read["refundedAmount"]) == ("paid", 0)
    assert not CallbackReceipt.objects.exclude(pending_payment_intent="").exists()
    # the request's own payment refunded: refunded
    deliver(charge_refunded(deposit, 5000, pi="pi_3First"))
    read = api.get(url(deposit)).json()
    assert (read["status"], read["refundedAmount"]) == ("refunded", 5000)
    assert [e.data["action"] for e in deposit_events(org, deposit["id"], "deposit_request.status_changed")] == [
        "sent",
        "paid",
        "refunded",
    ]


def test_a_duplicate_payments_refund_arriving_before_it_does_not_refund_the_request(sent, api):
    org, deposit = sent
    deliver(session_completed(deposit, org.id, pi="pi_3First"))
    deliver(charge_refunded(deposit, 5000, pi="pi_3Second"))  # not linked yet: kept pending
    assert CallbackReceipt.objects.filter(pending_payment_intent="pi_3Second").count() == 1
    deliver(intent_succeeded(deposit, org.id, pi="pi_3Second"))
    read = api.get(url(deposit)).json()
    assert (read["status"], read["refundedAmount"]) == ("paid", 0)
    assert stored(org, deposit["id"]).payment_intent_id == "pi_3First"
    assert not CallbackReceipt.objects.exclude(pending_payment_intent="").exists()


# --- 6. a refund's charge proves a payment only for the request's amount and currency --------------------------------


def _charge_naming(deposit, org_id, *, amount: int, currency: str, refunded: int, pi: str = "pi_3Other"):
    body = charge_refunded(deposit, refunded, pi=pi)
    charge = body["data"]["object"]
    charge.update(amount=amount, currency=currency, refunded=refunded >= amount)
    charge["metadata"] = {"deposit_request_id": deposit["id"], "organization_id": str(org_id)}
    return body


@pytest.mark.parametrize(("amount", "currency"), [(100, "gbp"), (5000, "eur"), (None, "gbp")])
def test_a_refunded_charge_of_another_amount_or_currency_does_not_mark_the_request_paid(sent, api, amount, currency):
    org, deposit = sent
    body = _charge_naming(deposit, org.id, amount=amount or 0, currency=currency, refunded=50)
    if amount is None:
        del body["data"]["object"]["amount"]
    assert deliver(body).status_code == 200
    read = api.get(url(deposit)).json()
    assert (read["status"], read["refundedAmount"], read["paidAt"]) == ("sent", 0, None)
    assert [e.data["action"] for e in deposit_events(org, deposit["id"], "deposit_request.status_changed")] == ["sent"]


def test_a_refunded_charge_of_the_requests_amount_still_proves_the_payment(sent, api):
    org, deposit = sent
    deliver(_charge_naming(deposit, org.id, amount=5000, currency="gbp", refunded=2000))
    read = api.get(url(deposit)).json()
    assert (read["status"], read["refundedAmount"]) == ("paid", 2000)


def test_a_pending_refund_of_another_amount_is_not_applied_when_its_payment_is_refused(sent, api):
    org, deposit = sent
    early = charge_refunded(deposit, 50, pi="pi_3Early")
    early["data"]["object"]["amount"] = 100
    deliver(early)
    short = intent_succeeded(deposit, org.id, pi="pi_3Early")
    short["data"]["object"]["amount_received"] = 100
    deliver(short)  # the payment itself is of another amount: ignored
    read = api.get(url(deposit)).json()
    assert (read["status"], read["refundedAmount"]) == ("sent", 0)


# --- 3. connected-account events in any order ------------------------------------------------------------------------


def _account_event(type: str, created: int, **flags) -> dict:
    obj = {"id": ACCOUNT, "object": "account", **flags} if type == "account.updated" else {"id": "ca_platform"}
    body = event(type, obj)
    body["created"] = created
    return body


def test_an_older_account_update_changes_nothing(sent):
    org, _ = sent
    now = int(time.time())
    deliver(_account_event("account.updated", now + 10, charges_enabled=True, payouts_enabled=True))
    deliver(_account_event("account.updated", now, charges_enabled=False, payouts_enabled=False))
    account = PaymentAccount.objects.for_org(org).get()
    assert (account.charges_enabled, account.payouts_enabled, account.provider_updated_at) == (True, True, now + 10)
    deliver(_account_event("account.updated", now + 20, charges_enabled=True, payouts_enabled=False))
    account.refresh_from_db()
    assert (account.charges_enabled, account.payouts_enabled) == (True, False)


def test_a_deauthorization_from_before_the_connection_does_not_disconnect_it(sent, api):
    org, deposit = sent
    connected = int(PaymentAccount.objects.for_org(org).get().connected_at.timestamp())
    assert deliver(_account_event("account.application.deauthorized", connected - 60)).status_code == 200
    account = PaymentAccount.objects.for_org(org).get()
    assert (account.status, account.disconnected_at) == ("connected", None)
    assert Client().post(f"{link_path(deposit)}/checkout").status_code == 200
    deliver(_account_event("account.application.deauthorized", connected + 1))
    account.refresh_from_db()
    assert account.status == "disconnected" and account.disconnected_at is not None


def test_connecting_again_orders_account_updates_afresh(owner, api):
    PaymentAccount.objects.create(
        organization=owner.organization,
        account_id="acct_sandbox_old",
        connected_at=timezone.now(),
        status="disconnected",
        provider_updated_at=2**31 - 1,
    )
    authorize = api.post("/settings/payments/connect").json()["authorizeUrl"]
    assert Client().get(authorize.split("://", 1)[1].split("/", 1)[1].join(["/", ""])).status_code == 200
    account = PaymentAccount.objects.for_org(owner.organization).get()
    assert account.status == "connected" and account.provider_updated_at == 0


# --- 8. whole-forint HUF amounts -------------------------------------------------------------------------------------


def test_huf_amounts_must_be_whole_forints(owner, api):
    patient = make_patient(owner.organization)
    body = {"patientId": str(patient.id), "amount": 150050, "currency": "HUF", "reason": "Implant consultation"}
    refused = assert_error(post_json(api, DEPOSITS, body), 400, "VALIDATION_ERROR")
    assert "amount" in refused["details"]["fields"]
    assert not DepositRequest.objects.for_org(owner.organization).exists() and deposit_events(owner.organization) == []
    huf = create_deposit(api, patient, amount=150000, currency="huf")
    refused = assert_error(patch_json(api, url(huf), {"amount": 150099}), 400, "VALIDATION_ERROR")
    assert "amount" in refused["details"]["fields"]
    gbp = create_deposit(api, patient, amount=5050, currency="gbp")
    assert (
        "amount"
        in assert_error(patch_json(api, url(gbp), {"currency": "huf"}), 400, "VALIDATION_ERROR")["details"]["fields"]
    )
    assert (stored(owner.organization, huf["id"]).amount, stored(owner.organization, gbp["id"]).currency) == (
        150000,
        "gbp",
    )
    assert patch_json(api, url(gbp), {"currency": "huf", "amount": 505000}).status_code == 200
    assert post_json(api, url(huf, "send")).status_code == 200
    page = Client().get(link_path(api.get(url(huf)).json()), HTTP_ACCEPT="text/html")
    assert "HUF 1,500" in page.content.decode()


# --- 9. outages: 503 with Retry-After --------------------------------------------------------------------------------


def test_a_connect_event_that_cannot_be_stored_is_503_and_its_retry_applies(sent, api):
    org, deposit = sent
    body = session_completed(deposit, org.id)
    with failing('INSERT INTO "deposits_callbackreceipt"'):
        response = deliver(body)
    assert_error(response, 503, "CALLBACK_NOT_STORED")
    assert response["Retry-After"] == "30"
    assert CallbackReceipt.objects.count() == 0 and api.get(url(deposit)).json()["status"] == "sent"
    with failing('UPDATE "deposits_depositrequest"'):  # claimed, then failing while applied: nothing is kept
        assert_error(deliver(body), 503, "CALLBACK_NOT_STORED")
    assert CallbackReceipt.objects.count() == 0 and api.get(url(deposit)).json()["status"] == "sent"
    assert deliver(body).json() == {"received": True, "duplicate": False}
    assert api.get(url(deposit)).json()["status"] == "paid"


def test_a_billing_event_that_cannot_be_stored_is_503_and_its_retry_applies(owner):
    body = billing.subscription_event("customer.subscription.created", id="evt_out", org_id=owner.organization.id)
    with failing('INSERT INTO "deposits_callbackreceipt"'):
        response = billing.deliver(body)
    assert_error(response, 503, "CALLBACK_NOT_STORED")
    assert response["Retry-After"] == "30"
    assert CallbackReceipt.objects.count() == 0 and not Subscription.objects.unscoped().exists()
    assert billing.deliver(body).json() == {"received": True, "duplicate": False}
    assert Subscription.objects.for_org(owner.organization).get().status == "active"
    assert not Event.objects.for_org(owner.organization).filter(type__startswith="subscription").exists()


@pytest.mark.django_db(transaction=True)  # the view's own statement fails, as in production (no test transaction)
def test_a_checkout_that_cannot_be_stored_is_503_and_the_retry_opens_it(sent, owner):
    _, deposit = sent
    path = f"{link_path(deposit)}/checkout"
    with failing('UPDATE "deposits_depositrequest"'):
        response = Client().post(path)
    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert int(response["Retry-After"]) >= 1
    assert stored(owner.organization, deposit["id"]).checkout_session_id == ""
    assert Client().post(path).status_code == 200
    assert stored(owner.organization, deposit["id"]).checkout_session_id.startswith("cs_sandbox_")
