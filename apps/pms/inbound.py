"""The PMS's signed callbacks: the acknowledging path (ARCHITECTURE 6b) and their processing in Celery.

Acknowledging (POST /webhooks/pms/{provider}/{token}, apps.pms.api.callbacks): 1 MiB cap (413 before reading), the
provider known, the routing token resolves the connection (unknown or disconnected: 404), the signature checked over
the untouched bytes, then the body parsed into normalized items and one INSERT … ON CONFLICT DO NOTHING writes the
durable receipt keyed on the delivery id (a duplicate: nothing new, 200). A body that is malformed (not JSON, not
the contract's shape, an item that cannot be read) or has more than 100 events settles terminally: its receipt is
written as rejected with the reason (without the body), answered 200, and never processed or retried. Otherwise the
receipt waits for a worker, asked for after the commit.

Processing (tasks.process_receipt): the receipt under its row lock (SKIP LOCKED), its items applied one at a time in
order through apps.pms.sync (live: rule 1), the outcome counted, the body cleared. A failure rolls the receipt's
items back and is retried by the sweep, at most five times."""

import logging
import uuid
from dataclasses import dataclass

from django.db import connection as database
from django.db import transaction
from django.utils import timezone

from apps.pms import provider, sync
from apps.pms.models import ConnectionStatus, PmsConnection, PmsReceipt, ReceiptState

logger = logging.getLogger("apps.pms")

MAX_ATTEMPTS = 5

_INSERT = """
    INSERT INTO pms_pmsreceipt
        (id, organization_id, connection_id, delivery_id, state, reason, payload, events, outcome, attempts,
         created_at, updated_at)
    VALUES (%(id)s, %(organization)s, %(connection)s, %(delivery_id)s, %(state)s, %(reason)s, %(payload)s::jsonb,
            %(events)s, '{}'::jsonb, 0, %(now)s, %(now)s)
    ON CONFLICT (organization_id, connection_id, delivery_id) DO NOTHING
    RETURNING id
"""


@dataclass(frozen=True)
class Received:
    duplicate: bool
    state: str
    reason: str = ""


def connection_for_callback(provider_slug: str, token: str) -> PmsConnection | None:
    if provider_slug != provider.PROVIDER or not token or len(token) > 64:
        return None
    return (
        PmsConnection.unscoped_objects.filter(routing_token=token, provider=provider_slug)
        .exclude(status=ConnectionStatus.DISCONNECTED)
        .first()
    )


def receive(*, connection: PmsConnection, delivery_id: str, raw: bytes) -> Received:
    """Store the verified body's receipt (module docstring). Raises DatabaseError when it could not be stored."""
    try:
        items = provider.parse_callback(raw)
        state, reason, payload, events = ReceiptState.RECEIVED, "", raw.decode("utf-8"), len(items)
    except provider.MalformedBody as malformed:
        state, reason, payload, events = ReceiptState.REJECTED, malformed.reason, "{}", 0
    values = {
        "id": uuid.uuid4(),
        "organization": connection.organization_id,
        "connection": connection.id,
        "delivery_id": delivery_id,
        "state": state,
        "reason": reason,
        "payload": payload,
        "events": events,
        "now": timezone.now(),
    }
    with transaction.atomic():
        with database.cursor() as cursor:
            cursor.execute(_INSERT, values)
            row = cursor.fetchone()
        if row is None:
            return Received(duplicate=True, state="duplicate")
        if state == ReceiptState.RECEIVED:
            receipt_id = str(row[0])
            transaction.on_commit(lambda: _request(receipt_id))
        else:
            logger.info("PMS callback settled as rejected: %s", reason)
    return Received(duplicate=False, state=state, reason=reason)


def _request(receipt_id: str) -> None:
    from apps.pms.tasks import process_receipt

    try:
        process_receipt.delay(receipt_id)
    except Exception:  # stored is stored: the sweep processes it
        logger.warning("PMS receipt %s not queued; left to the sweep", receipt_id)


def receipt_process(receipt_id) -> str | None:
    """Apply one waiting receipt's items. Returns its state afterwards (None: nothing to do)."""
    with transaction.atomic():
        receipt = (
            PmsReceipt.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("connection")
            .filter(id=receipt_id, state=ReceiptState.RECEIVED)
            .first()
        )
        if receipt is None:
            return None
        connection = receipt.connection
        if connection.status == ConnectionStatus.DISCONNECTED:
            return _settle(receipt, ReceiptState.FAILED, reason="connection_disconnected")
        try:
            with transaction.atomic():
                outcome = _apply(connection, receipt.payload)
        except Exception as exc:  # the type only: a database error's detail can quote patient data
            logger.warning("PMS receipt %s not applied (%s)", receipt.id, type(exc).__name__)
            receipt.attempts += 1
            receipt.reason = type(exc).__name__[:64]
            if receipt.attempts >= MAX_ATTEMPTS:
                return _settle(receipt, ReceiptState.FAILED, reason=receipt.reason)
            receipt.save(update_fields=["attempts", "reason", "updated_at"])
            return receipt.state
        receipt.outcome = dict(outcome)
        return _settle(receipt, ReceiptState.PROCESSED, reason="")


def _apply(connection: PmsConnection, payload: dict):
    totals = {"applied": 0, "unchanged": 0, "held": 0, "stale": 0, "skipped": 0}
    for event in payload.get("events", []):
        item = provider.normalize(event["kind"], event)
        outcome = sync.apply(connection, item.kind, [item], live=True)
        counts = outcome.counts
        totals["applied"] += counts["created"] + counts["matched"] + counts["updated"]
        for name in ("unchanged", "held", "stale", "skipped"):
            totals[name] += counts[name]
    return totals


def _settle(receipt: PmsReceipt, state: str, *, reason: str) -> str:
    receipt.state, receipt.reason, receipt.payload = state, reason, {}
    receipt.processed_at = timezone.now()
    receipt.save(update_fields=["state", "reason", "payload", "outcome", "attempts", "processed_at", "updated_at"])
    return state


def sweep(*, older_than_seconds: int = 60, limit: int = 500) -> int:
    cutoff = timezone.now() - timezone.timedelta(seconds=older_than_seconds)
    waiting = list(
        PmsReceipt.unscoped_objects.filter(state=ReceiptState.RECEIVED, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    return sum(1 for receipt_id in waiting if receipt_process(receipt_id) is not None)


def purge(*, older_than_days: int = 30) -> int:
    cutoff = timezone.now() - timezone.timedelta(days=older_than_days)
    deleted, _ = PmsReceipt.unscoped_objects.exclude(state=ReceiptState.RECEIVED).filter(updated_at__lt=cutoff).delete()
    return deleted
