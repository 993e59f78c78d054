"""The payment platform's billing callback, applied (POST /auth/payments-billing/webhook): the practice's own
subscription with the platform (plan, status, current period end) from customer.subscription.* events.

The practice is named by the subscription's metadata.organization_id the first time and recognised by its customer id
afterwards. Events are claimed once by id; an event older (by its `created` time) than the state already applied
changes nothing, so events may arrive in any order. Nothing here emits a webhook event: no commercial billing events
exist."""

import logging
import uuid
from datetime import UTC, datetime

from django.db import transaction

from apps.accounts.models import Organization
from apps.deposits.models import CallbackReceipt, Subscription

logger = logging.getLogger("apps.deposits")

SUBSCRIPTION_EVENTS = frozenset(
    {
        "customer.subscription.created",
        "customer.subscription.updated",
        "customer.subscription.deleted",
        "customer.subscription.paused",
        "customer.subscription.resumed",
        "customer.subscription.trial_will_end",
    }
)
STATUSES = frozenset(
    {"incomplete", "incomplete_expired", "trialing", "active", "past_due", "canceled", "unpaid", "paused"}
)


def _text(value, limit: int = 255) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _plan(obj: dict) -> str:
    items = obj.get("items") if isinstance(obj.get("items"), dict) else {}
    data = items.get("data") if isinstance(items.get("data"), list) else []
    first = data[0] if data and isinstance(data[0], dict) else {}
    price = first.get("price") if isinstance(first.get("price"), dict) else {}
    return _text(price.get("lookup_key"), 100) or _text(price.get("id"), 100)


def _period_end(obj: dict):
    value = obj.get("current_period_end")
    if value is None:  # newer API versions carry it on the item
        items = obj.get("items") if isinstance(obj.get("items"), dict) else {}
        data = items.get("data") if isinstance(items.get("data"), list) else []
        value = data[0].get("current_period_end") if data and isinstance(data[0], dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31:
        return datetime.fromtimestamp(value, tz=UTC)
    return None


def _subscription_row(obj: dict) -> Subscription | None:
    customer = _text(obj.get("customer"))
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    try:
        organization_id = uuid.UUID(_text(metadata.get("organization_id"), 64))
    except ValueError:
        organization_id = None
    if organization_id is not None and Organization.objects.filter(id=organization_id).exists():
        rows = Subscription.objects.for_org(organization_id)
        rows.get_or_create(organization_id=organization_id)  # one per practice (unique): a racing create converges
        return rows.select_for_update().first()
    if customer:
        return Subscription.objects.unscoped().select_for_update().filter(customer_id=customer).first()
    return None


@transaction.atomic
def receive(*, event: dict) -> bool:
    """Claim the event by its id and apply it. False for a replay (nothing changes)."""
    event_id, event_type = _text(event.get("id")), _text(event.get("type"), 100)
    _, created = CallbackReceipt.objects.get_or_create(
        endpoint="billing", event_id=event_id, defaults={"event_type": event_type}
    )
    if not created:
        return False
    if event_type not in SUBSCRIPTION_EVENTS:
        return True
    obj = event["data"]["object"]
    row = _subscription_row(obj)
    if row is None:
        logger.info("billing event %s for a subscription of no known practice; acknowledged", event_type)
        return True
    at = event.get("created")
    at = at if isinstance(at, int) and not isinstance(at, bool) and 0 <= at < 2**31 else 0
    if at < row.provider_updated_at:
        return True  # an older state than the one applied
    status = _text(obj.get("status"), 32)
    if event_type == "customer.subscription.deleted":
        status = "canceled"
    row.customer_id = _text(obj.get("customer")) or row.customer_id
    row.subscription_id = _text(obj.get("id")) or row.subscription_id
    row.plan = _plan(obj) or row.plan
    row.status = status if status in STATUSES else row.status
    row.current_period_end = _period_end(obj) or row.current_period_end
    row.provider_updated_at = at
    row.save()
    return True
