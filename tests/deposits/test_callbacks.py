"""POST /webhooks/payments-connect: the signature, the cap, idempotency by event id, events in any order, refunds,
connected-account events; the patient embed and timeline show payments."""

import json
import time

import pytest
from django.test import Client

from apps.deposits.models import CallbackReceipt, PaymentAccount
from apps.deposits.signatures import header, sign
from apps.patients.models import Activity
from tests.deposits.helpers import (
    connect_account,
    deposit_events,
    link_path,
    make_patient,
    post_json,
    sent_deposit,
    stored,
    url,
)
from tests.helpers import assert_error

WEBHOOK = "/webhooks/payments-connect"
SECRET = "whsec_test_payments_connect"
ACCOUNT = "acct_1TestPractice"


def deliver(body: bytes | dict, *, signature: str | None = None, secret: str = SECRET, client=None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    signature = header(secret, raw) if signature is None else signature
    return (client or Client()).post(
        WEBHOOK, raw, content_type="application/json", headers={"Stripe-Signature": signature}
    )


_counter = iter(range(1, 10**6))


def event(type: str, obj: dict, *, account: str = ACCOUNT, id: str | None = None) -> dict:
    return {
        "id": id or f"evt_{next(_counter):08d}test",
        "object": "event",
        "type": type,
        "account": account,
        "created": int(time.time()),
        "data": {"object": obj},
    }


def session_completed(deposit: dict, org_id, *, pi: str = "pi_3Test0001", amount=None, paid=True) -> dict:
    return event(
        "checkout.session.completed",
        {
            "id": "cs_test_1",
            "object": "checkout.session",
            "payment_status": "paid" if paid else "unpaid",
            "amount_total": deposit["amount"] if amount is None else amount,
            "currency": deposit["currency"],
            "payment_intent": pi,
            "metadata": {"deposit_request_id": deposit["id"], "organization_id": str(org_id)},
        },
    )


def intent_succeeded(deposit: dict, org_id, *, pi: str = "pi_3Test0001") -> dict:
    return event(
        "payment_intent.succeeded",
        {
            "id": pi,
            "object": "payment_intent",
            "status": "succeeded",
            "amount_received": deposit["amount"],
            "currency": deposit["currency"],
            "metadata": {"deposit_request_id": deposit["id"], "organization_id": str(org_id)},
        },
    )


def charge_refunded(deposit: dict, refunded: int, *, pi: str = "pi_3Test0001") -> dict:
    return event(
        "charge.refunded",
        {
            "id": "ch_3Test0001",
            "object": "charge",
            "paid": True,
            "status": "succeeded",
            "amount": deposit["amount"],
            "amount_refunded": refunded,
            "refunded": refunded >= deposit["amount"],
            "currency": deposit["currency"],
            "payment_intent": pi,
            "metadata": {},
        },
    )


@pytest.fixture
def setup(owner, api):
    connect_account(owner.organization, ACCOUNT)
    patient = make_patient(owner.organization)
    deposit = sent_deposit(api, patient, amount=5000, currency="gbp")
    return owner.organization, patient, deposit


def status_actions(org, deposit):
    return [e.data["action"] for e in deposit_events(org, deposit["id"], "deposit_request.status_changed")]


def test_a_completed_checkout_marks_the_request_paid_once(setup, api):
    org, patient, deposit = setup
    body = session_completed(deposit, org.id)
    response = deliver(body)
    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "duplicate": False}
    read = api.get(url(deposit)).json()
    assert read["status"] == "paid" and read["paidAt"] is not None and read["patientLink"] is None
    replay = deliver(body)
    assert replay.status_code == 200 and replay.json() == {"received": True, "duplicate": True}
    deliver(intent_succeeded(deposit, org.id))  # the payment's own event: already paid, nothing new
    assert status_actions(org, deposit) == ["sent", "paid"]
    (paid_event,) = deposit_events(org, deposit["id"], "deposit_request.status_changed")[1:]
    assert paid_event.actor_type == "provider"
    assert all(not str(value).startswith(("pi_", "cs_", "acct_", "ch_")) for value in paid_event.data.values())
    entries = Activity.objects.for_org(org).filter(patient=patient, kind="deposit_paid")
    assert [e.data["depositRequestId"] for e in entries] == [deposit["id"]]
    embedded = api.get(f"/patients/{patient.id}", {"embed": "deposits,timeline"}).json()
    assert embedded["deposits"][0]["status"] == "paid"
    assert embedded["timeline"]["items"][0]["kind"] == "deposit_paid"


def test_refunds_partial_then_full_in_any_order_and_replayed(setup, api):
    org, patient, deposit = setup
    deliver(session_completed(deposit, org.id))
    full, partial = charge_refunded(deposit, 5000), charge_refunded(deposit, 2000)
    assert deliver(partial).status_code == 200
    read = api.get(url(deposit)).json()
    assert read["status"] == "paid" and read["refundedAmount"] == 2000
    assert deliver(full).status_code == 200
    read = api.get(url(deposit)).json()
    assert read["status"] == "refunded" and read["refundedAmount"] == 5000 and read["refundedAt"] is not None
    older = charge_refunded(deposit, 1000)  # an older state of the charge arriving late changes nothing
    assert deliver(older).status_code == 200
    assert deliver(full).json()["duplicate"] is True
    assert api.get(url(deposit)).json()["refundedAmount"] == 5000
    assert status_actions(org, deposit) == ["sent", "paid", "partially_refunded", "refunded"]
    kinds = list(Activity.objects.for_org(org).filter(patient=patient).values_list("kind", flat=True))
    assert kinds.count("deposit_refunded") == 2 and kinds.count("deposit_paid") == 1


def test_a_refund_before_the_payment_is_kept_and_applied_when_the_payment_arrives(setup, api):
    org, _, deposit = setup
    assert deliver(charge_refunded(deposit, 5000, pi="pi_3Early")).status_code == 200
    assert api.get(url(deposit)).json()["status"] == "sent"
    assert CallbackReceipt.objects.filter(pending_payment_intent="pi_3Early").count() == 1
    assert deliver(intent_succeeded(deposit, org.id, pi="pi_3Early")).status_code == 200
    read = api.get(url(deposit)).json()
    assert read["status"] == "refunded" and read["refundedAmount"] == 5000
    assert CallbackReceipt.objects.filter(pending_payment_intent="pi_3Early").count() == 0
    deliver(session_completed(deposit, org.id, pi="pi_3Early"))
    assert api.get(url(deposit)).json()["status"] == "refunded"
    assert status_actions(org, deposit) == ["sent", "paid", "refunded"]


def test_a_payment_after_cancel_still_counts(setup, api):
    org, _, deposit = setup
    post_json(api, url(deposit, "cancel"))
    deliver(intent_succeeded(deposit, org.id))
    assert api.get(url(deposit)).json()["status"] == "paid"


def test_unpaid_sessions_wrong_amounts_foreign_accounts_and_forged_metadata_change_nothing(setup, api, outsider):
    org, _, deposit = setup
    deliver(session_completed(deposit, org.id, paid=False))
    deliver(session_completed(deposit, org.id, amount=100))
    other = event("checkout.session.completed", session_completed(deposit, org.id)["data"]["object"], account="acct_X")
    deliver(other)  # an account no practice connected
    connect_account(outsider.organization, "acct_1Outsider")
    forged = session_completed(deposit, org.id)
    forged["account"] = "acct_1Outsider"  # another practice's account writing our metadata
    deliver(forged)
    assert api.get(url(deposit)).json()["status"] == "sent"
    assert status_actions(org, deposit) == ["sent"]


def test_signature_checks(setup, api):
    org, _, deposit = setup
    body = json.dumps(session_completed(deposit, org.id)).encode()
    now = int(time.time())
    good = sign(SECRET, body, now)
    for bad in (
        "",
        f"t={now}",
        f"t={now},v1={'0' * 64}",
        f"t={now - 400},v1={sign(SECRET, body, now - 400)}",
        f"t={now + 400},v1={sign(SECRET, body, now + 400)}",
        f"t={now},v1={sign('whsec_other', body, now)}",
        f"t={now + 1},v1={good}",
    ):
        assert_error(deliver(body, signature=bad), 400, "CALLBACK_SIGNATURE_INVALID")
    assert_error(deliver(body + b" ", signature=f"t={now},v1={good}"), 400, "CALLBACK_SIGNATURE_INVALID")
    assert api.get(url(deposit)).json()["status"] == "sent"
    assert CallbackReceipt.objects.count() == 0
    several = f"t={now},v1={sign('whsec_old', body, now)},v1={good},v0=ignored"
    assert deliver(body, signature=several).status_code == 200
    assert api.get(url(deposit)).json()["status"] == "paid"


def test_malformed_bodies_and_the_cap(setup):
    for raw in (b"not json", b"[]", json.dumps({"type": "x", "data": {"object": {}}}).encode()):
        assert_error(deliver(raw), 400, "VALIDATION_ERROR")
    no_object = json.dumps({"id": "evt_1", "type": "charge.refunded", "data": {}}).encode()
    assert_error(deliver(no_object), 400, "VALIDATION_ERROR")
    big = json.dumps({"id": "evt_big", "type": "x", "data": {"object": {"pad": "x" * (1024 * 1024)}}}).encode()
    response = Client().post(WEBHOOK, big, content_type="application/json", headers={"Stripe-Signature": "t=1,v1=0"})
    assert response.status_code == 413
    assert CallbackReceipt.objects.count() == 0
    raw = json.dumps(event("customer.created", {"id": "cus_1"})).encode()
    wrong_type = Client().post(
        WEBHOOK, raw, content_type="text/plain", headers={"Stripe-Signature": header(SECRET, raw)}
    )
    assert wrong_type.status_code == 415
    assert deliver(raw).json() == {"received": True, "duplicate": False}  # unknown types are acknowledged


def test_account_events_update_and_disconnect_the_practice_account(setup, api):
    org, _, deposit = setup
    deliver(
        event("account.updated", {"id": ACCOUNT, "object": "account", "charges_enabled": True, "payouts_enabled": True})
    )
    account = PaymentAccount.objects.for_org(org).get()
    assert account.charges_enabled and account.payouts_enabled
    deliver(event("account.application.deauthorized", {"id": "ca_test_platform", "object": "application"}))
    account.refresh_from_db()
    assert account.status == "disconnected" and account.disconnected_at is not None
    assert_error(Client().post(f"{link_path(deposit)}/checkout"), 409, "PAYMENTS_NOT_CONNECTED")
    settings_view = api.get("/settings/payments").json()
    assert settings_view["connected"] is False and settings_view["accountStatus"] == "disconnected"
    # late payment events of the (now disconnected) account still reconcile the practice's deposits
    deliver(session_completed(deposit, org.id))
    assert api.get(url(deposit)).json()["status"] == "paid"
    assert stored(org, deposit["id"]).payment_intent_id == "pi_3Test0001"


def test_a_paid_requests_page_thanks_the_patient_and_offers_no_checkout(setup):
    org, _, deposit = setup
    deliver(session_completed(deposit, org.id))
    page = Client().get(link_path(deposit), HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    html = page.content.decode()
    assert "has been paid" in html and "<form" not in html
    refused = assert_error(Client().post(f"{link_path(deposit)}/checkout"), 409, "DEPOSIT_TRANSITION_NOT_ALLOWED")
    assert refused["details"]["status"] == "paid"


def test_old_receipts_are_purged_but_pending_refunds_kept(setup):
    from datetime import timedelta

    from django.utils import timezone

    from apps.deposits.tasks import purge_receipts

    org, _, deposit = setup
    deliver(session_completed(deposit, org.id, pi="pi_3Known"))
    deliver(charge_refunded(deposit, 100, pi="pi_3Unknown"))
    assert purge_receipts() == 0
    CallbackReceipt.objects.update(received_at=timezone.now() - timedelta(days=31))
    assert purge_receipts() == 1
    assert list(CallbackReceipt.objects.values_list("pending_payment_intent", flat=True)) == ["pi_3Unknown"]
