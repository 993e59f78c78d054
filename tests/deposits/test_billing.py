"""POST /auth/payments-billing/webhook: the practice's own subscription (plan, status), signed with its own secret,
idempotent, any order, and never an event."""

import json
import time

from django.test import Client

from apps.deposits.models import CallbackReceipt, Subscription
from apps.deposits.signatures import header
from apps.events.models import Event
from tests.helpers import assert_error

BILLING = "/auth/payments-billing/webhook"
SECRET = "whsec_test_payments_billing"


def deliver(body: dict, *, secret: str = SECRET):
    raw = json.dumps(body).encode()
    return Client().post(
        BILLING, raw, content_type="application/json", headers={"Stripe-Signature": header(secret, raw)}
    )


def subscription_event(type: str, *, id: str, org_id=None, status="active", plan="growth_monthly", created=None):
    obj = {
        "id": "sub_1Practice",
        "object": "subscription",
        "customer": "cus_1Practice",
        "status": status,
        "current_period_end": 1893456000,
        "items": {"data": [{"price": {"id": "price_1", "lookup_key": plan}}]},
        "metadata": {"organization_id": str(org_id)} if org_id else {},
    }
    return {"id": id, "type": type, "created": created or int(time.time()), "data": {"object": obj}}


def test_subscription_events_set_plan_and_status_without_emitting(owner, api):
    org = owner.organization
    created = subscription_event("customer.subscription.created", id="evt_b1", org_id=org.id, status="trialing")
    assert deliver(created).json() == {"received": True, "duplicate": False}
    row = Subscription.objects.for_org(org).get()
    assert (row.plan, row.status, row.customer_id) == ("growth_monthly", "trialing", "cus_1Practice")
    now = int(time.time())
    # later events name the practice by customer id only; an older one arriving late changes nothing
    updated = subscription_event("customer.subscription.updated", id="evt_b2", plan="pro_monthly", created=now + 10)
    stale = subscription_event("customer.subscription.updated", id="evt_b0", status="past_due", created=now - 100)
    assert deliver(updated).status_code == 200
    assert deliver(stale).status_code == 200
    assert deliver(updated).json()["duplicate"] is True
    row.refresh_from_db()
    assert (row.plan, row.status) == ("pro_monthly", "active")
    deleted = subscription_event(
        "customer.subscription.deleted", id="evt_b3", plan="pro_monthly", status="active", created=now + 20
    )
    deliver(deleted)
    row.refresh_from_db()
    assert row.status == "canceled"
    assert api.get("/settings/payments").json()["subscription"] == {
        "plan": "pro_monthly",
        "status": "canceled",
        "currentPeriodEnd": "2030-01-01T00:00:00.000000Z",
    }
    assert not Event.objects.for_org(org).exists()


def test_the_connect_secret_does_not_sign_billing_and_unknown_practices_change_nothing(owner):
    body = subscription_event("customer.subscription.created", id="evt_b9", org_id=owner.organization.id)
    assert_error(deliver(body, secret="whsec_test_payments_connect"), 400, "CALLBACK_SIGNATURE_INVALID")
    assert not CallbackReceipt.objects.exists()
    stranger = subscription_event("customer.subscription.created", id="evt_b10")
    stranger["data"]["object"]["customer"] = "cus_unknown"
    assert deliver(stranger).status_code == 200
    assert not Subscription.objects.for_org(owner.organization).exists()
