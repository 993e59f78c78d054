"""Fan-out and delivery: at-least-once, one lease per endpoint, oldest due first.

- fan_out(): turns committed outbox events into deliveries for the enabled endpoints subscribed to them, and marks
  the events processed, in one transaction (SKIP LOCKED), so an event is neither lost nor fanned out twice.
- drain_endpoint(): takes the endpoint's lease, claims its due deliveries oldest first (the current test before held
  ordinary ones), sends each through the SSRF-safe sender and records the outcome. A worker that dies mid-request
  leaves the delivery in flight with an expiring lease: it is claimed again after the lease runs out.
"""

import email.utils
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.core import crypto
from apps.events.models import Event
from apps.events.services import envelope
from apps.webhooks import sender
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

logger = logging.getLogger("apps.webhooks")

RETRY_DELAYS = (60, 300, 1800, 7200, 28800, 86400)  # 1 min, 5 min, 30 min, 2 h, 8 h, 24 h
RETRY_AFTER_CAP = 86400
MAX_REQUESTS = 7
MAX_PUBLICATIONS = 7
PUBLICATION_SPACING = timedelta(minutes=5)
PUBLICATION_DEADLINE = timedelta(hours=48)
LEASE = timedelta(seconds=60)
AUTO_PAUSE_AFTER = 20
RETENTION = timedelta(days=30)
SECRET_OVERLAP = timedelta(hours=24)
CLAIM_BATCH = 25
RETRYABLE_STATUSES = frozenset({408, 425, 429})

Delivered, Retry, Terminal = "delivered", "retry", "terminal"


def classify(status: int | None) -> str:
    """Any 2xx completes; network errors, timeouts, 408, 425, 429 and 5xx are retried; anything else is final."""
    if status is None:
        return Retry
    if 200 <= status < 300:
        return Delivered
    if status in RETRYABLE_STATUSES or 500 <= status < 600:
        return Retry
    return Terminal


def parse_retry_after(value: str | None, now: datetime) -> int | None:
    """Seconds from a valid Retry-After (delta-seconds or HTTP-date), capped at 24 h; None when absent/invalid."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"
        return RETRY_AFTER_CAP if len(digits) > 6 else min(int(digits), RETRY_AFTER_CAP)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return min(max(0, int((when - now).total_seconds())), RETRY_AFTER_CAP)


def new_delivery(
    *,
    endpoint: WebhookEndpoint,
    body: str,
    logical_id,
    event_type: str,
    kind: str,
    event=None,
    now: datetime | None = None,
) -> WebhookDelivery:
    now = now or timezone.now()
    return WebhookDelivery(
        organization_id=endpoint.organization_id,
        endpoint=endpoint,
        event=event,
        event_created_at=event.created_at if event is not None else None,
        logical_id=logical_id,
        event_type=event_type,
        kind=kind,
        body=body,
        next_attempt_at=now,
        deadline_at=now + PUBLICATION_DEADLINE,
    )


def event_body(event: Event) -> str:
    return json.dumps(envelope(event), separators=(",", ":"))


# --- fan-out --------------------------------------------------------------------------------------------------


def fan_out(limit: int = 1000) -> tuple[int, set]:
    """Turn up to `limit` unprocessed events into deliveries. Returns (events processed, endpoint ids with new
    work)."""
    touched: set = set()
    with transaction.atomic():
        events = list(
            Event.objects.unscoped()
            .filter(fanned_out_at__isnull=True)
            .order_by("created_at", "id")
            .select_for_update(skip_locked=True)[:limit]
        )
        if not events:
            return 0, touched
        endpoints_by_org: dict = {}
        for endpoint in WebhookEndpoint.objects.unscoped().filter(
            organization_id__in={e.organization_id for e in events},
            enabled=True,
            paused=False,
            archived_at__isnull=True,
        ):
            endpoints_by_org.setdefault(endpoint.organization_id, []).append(endpoint)
        now = timezone.now()
        deliveries = []
        for event in events:
            body = None
            for endpoint in endpoints_by_org.get(event.organization_id, ()):
                if event.type in endpoint.events:
                    body = body or event_body(event)
                    deliveries.append(
                        new_delivery(
                            endpoint=endpoint,
                            body=body,
                            logical_id=event.id,
                            event_type=event.type,
                            kind=WebhookDelivery.Kind.EVENT,
                            event=event,
                            now=now,
                        )
                    )
                    touched.add(endpoint.id)
        WebhookDelivery.objects.unscoped().bulk_create(deliveries, batch_size=1000)
        Event.objects.unscoped().filter(id__in=[e.id for e in events]).update(fanned_out_at=now)
    return len(events), touched


# --- claiming and sending -------------------------------------------------------------------------------------

_CLAIM_SQL = """
WITH due AS (
    SELECT id FROM webhooks_webhookdelivery
    WHERE organization_id = %(org)s AND endpoint_id = %(endpoint)s
      AND ((status = 'pending' AND next_attempt_at <= %(now)s)
           OR (status = 'in_flight' AND lease_expires_at < %(now)s))
      AND (last_published_at IS NULL OR last_published_at <= %(spaced)s)
      AND (%(all_kinds)s OR kind = 'test')
      AND publications < %(max_publications)s
    ORDER BY (kind = 'test') DESC, next_attempt_at, event_created_at NULLS LAST, created_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE webhooks_webhookdelivery AS d
SET status = 'in_flight', publications = d.publications + 1, last_published_at = %(now)s,
    lease_expires_at = %(lease)s, updated_at = %(now)s
FROM due WHERE d.id = due.id
RETURNING d.id
"""


def _take_lease(endpoint_id, now: datetime) -> tuple[WebhookEndpoint, datetime] | None:
    """Take the endpoint's lease; returns (endpoint, lease value) or None when another worker holds it."""
    until = now + LEASE
    updated = (
        WebhookEndpoint.objects.unscoped()
        .filter(id=endpoint_id, archived_at__isnull=True)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=until)
    )
    if not updated:
        return None
    return WebhookEndpoint.objects.unscoped().get(id=endpoint_id), until


_RENEW_SQL = """
UPDATE webhooks_webhookendpoint SET lease_until = %s WHERE id = %s AND lease_until = %s
RETURNING enabled, paused, url, archived_at
"""


def _renew_lease(endpoint: WebhookEndpoint, held: datetime) -> datetime | None:
    """Extend our lease before each request and re-read what may have changed meanwhile (a pause, a url change, a
    delete), in one statement. None means we lost the lease (it expired and another worker took it)."""
    until = timezone.now() + LEASE
    with connection.cursor() as cursor:
        cursor.execute(_RENEW_SQL, [until, endpoint.id, held])
        row = cursor.fetchone()
    if row is None:
        return None
    endpoint.enabled, endpoint.paused, endpoint.url, endpoint.archived_at = row
    return until


def _release_lease(endpoint_id, held: datetime | None) -> None:
    if held is not None:
        WebhookEndpoint.objects.unscoped().filter(id=endpoint_id, lease_until=held).update(lease_until=None)


def _claim(endpoint: WebhookEndpoint, now: datetime, limit: int) -> list[WebhookDelivery]:
    all_kinds = endpoint.enabled and not endpoint.paused
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            _CLAIM_SQL,
            {
                "org": endpoint.organization_id,
                "endpoint": endpoint.id,
                "now": now,
                "spaced": now - PUBLICATION_SPACING,
                "all_kinds": all_kinds,
                "limit": limit,
                "lease": now + LEASE,
                "max_publications": MAX_PUBLICATIONS,
            },
        )
        ids = [row[0] for row in cursor.fetchall()]
    deliveries = WebhookDelivery.objects.unscoped().filter(id__in=ids)
    never = datetime.max.replace(tzinfo=UTC)
    return sorted(
        deliveries,
        key=lambda d: (d.kind != "test", d.next_attempt_at, d.event_created_at or never, d.created_at, str(d.id)),
    )


def valid_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    secrets = [crypto.decrypt(endpoint.secret_encrypted)]
    if (
        endpoint.previous_secret_encrypted
        and endpoint.previous_secret_expires_at
        and (endpoint.previous_secret_expires_at > now)
    ):
        secrets.append(crypto.decrypt(endpoint.previous_secret_encrypted))
    return secrets


def request_headers(*, secrets: list[str], delivery_id: str, body: bytes, timestamp: int) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": settings.SVC_WEBHOOK_USER_AGENT,
        "X-Service-Delivery-Id": delivery_id,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": sender.signature_header(secrets, timestamp, delivery_id, body),
    }


@dataclass
class DrainResult:
    sent: int = 0
    more: bool = False


def drain_endpoint(endpoint_id, *, max_deliveries: int = 200, max_seconds: float = 20.0) -> DrainResult:
    """Deliver an endpoint's due work while holding its lease. Returns whether due work remains."""
    result = DrainResult()
    now = timezone.now()
    taken = _take_lease(endpoint_id, now)
    if taken is None:
        return result  # another worker holds the lease (or the endpoint is gone)
    endpoint, held = taken
    expire_exhausted(now, endpoint=endpoint)
    started = time.monotonic()
    _outcome_writes_without_flush_wait(True)
    try:
        secrets = valid_secrets(endpoint, now)
        while result.sent < max_deliveries and time.monotonic() - started < max_seconds:
            batch = _claim(endpoint, timezone.now(), min(CLAIM_BATCH, max_deliveries - result.sent))
            if not batch:
                return result
            stop = False
            for delivery in batch:
                # Renew the lease before each send so a slow batch never overlaps a second worker; the renewal
                # re-reads the endpoint, so a pause, a url change or a delete mid-batch takes effect at once.
                if not stop:
                    held = _renew_lease(endpoint, held)
                    stop = held is None or not _may_send(endpoint, delivery)
                if stop:
                    _hand_back(delivery)
                    continue
                attempt(endpoint, delivery, secrets)
                result.sent += 1
            if stop:
                return result
        result.more = True
        return result
    finally:
        _release_lease(endpoint.id, held)
        _outcome_writes_without_flush_wait(False)


def _outcome_writes_without_flush_wait(on: bool) -> None:
    """While draining, the worker's own writes (lease renewals, outcomes) commit without waiting for the WAL flush
    (synchronous_commit off: about one disk flush less per statement). At-least-once still holds: a crash of the
    database can forget only the last fraction of a second of these writes, and a forgotten outcome leaves its
    delivery in flight until its lease expires, then it is sent again (receivers key side effects on the envelope
    id). The events and the deliveries themselves are committed by other sessions, which keep waiting for the flush."""
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off" if on else "RESET synchronous_commit")


def _may_send(endpoint: WebhookEndpoint, delivery: WebhookDelivery) -> bool:
    if endpoint.archived_at is not None:
        return False
    return delivery.kind == WebhookDelivery.Kind.TEST or (endpoint.enabled and not endpoint.paused)


def _hand_back(delivery: WebhookDelivery) -> None:
    """Undo a claim that will not be sent now: the delivery waits, as if never handed out this time."""
    WebhookDelivery.objects.unscoped().filter(id=delivery.id, status=WebhookDelivery.Status.IN_FLIGHT).update(
        status=WebhookDelivery.Status.PENDING,
        publications=F("publications") - 1,
        last_published_at=None,
        lease_expires_at=None,
    )


def attempt(endpoint: WebhookEndpoint, delivery: WebhookDelivery, secrets: list[str]) -> str:
    """One outbound request for a claimed delivery, then its outcome. Returns delivered/retry/terminal."""
    now = timezone.now()
    if now >= delivery.deadline_at or delivery.attempts >= MAX_REQUESTS or delivery.publications > MAX_PUBLICATIONS:
        _finish(endpoint, delivery, WebhookDelivery.Status.FAILED, error="retries exhausted", now=now)
        return Terminal
    body = delivery.body.encode()
    if len(body) > sender.MAX_BODY_BYTES:
        _finish(
            endpoint,
            delivery,
            WebhookDelivery.Status.FAILED,
            now=now,
            error=f"the payload is over {sender.MAX_BODY_BYTES} bytes",
        )
        return Terminal
    headers = request_headers(secrets=secrets, delivery_id=str(delivery.id), body=body, timestamp=int(time.time()))
    outcome = sender.post(endpoint.url, body, headers)
    return record_outcome(endpoint, delivery, outcome)


def record_outcome(endpoint: WebhookEndpoint, delivery: WebhookDelivery, outcome: sender.Outcome) -> str:
    now = timezone.now()
    verdict = classify(outcome.status)
    delivery.attempts += 1
    delivery.response_status = outcome.status
    delivery.response_snippet = outcome.snippet
    delivery.last_error = outcome.error[:500]
    if verdict == Delivered:
        _finish(endpoint, delivery, WebhookDelivery.Status.DELIVERED, now=now)
        return Delivered
    if outcome.status is not None and not outcome.error:
        delivery.last_error = f"HTTP {outcome.status}"
    if verdict == Retry and delivery.kind != WebhookDelivery.Kind.TEST:
        delay = parse_retry_after(outcome.retry_after, now) if outcome.status is not None else None
        if delay is None:
            delay = RETRY_DELAYS[min(delivery.attempts, len(RETRY_DELAYS)) - 1]
        due = max(now + timedelta(seconds=delay), (delivery.last_published_at or now) + PUBLICATION_SPACING)
        if delivery.attempts < MAX_REQUESTS and delivery.publications < MAX_PUBLICATIONS and due < delivery.deadline_at:
            delivery.status = WebhookDelivery.Status.PENDING
            delivery.next_attempt_at = due
            delivery.lease_expires_at = None
            _save_outcome(delivery, now, "next_attempt_at")
            return Retry
    _finish(endpoint, delivery, WebhookDelivery.Status.FAILED, now=now)
    return Terminal


# The columns an outcome changes; the rest of the row (the body above all) is never rewritten.
_OUTCOME_FIELDS = ("status", "attempts", "response_status", "response_snippet", "last_error", "lease_expires_at")


def _save_outcome(delivery: WebhookDelivery, now: datetime, *fields: str) -> None:
    delivery.updated_at = now
    WebhookDelivery.objects.unscoped().filter(id=delivery.id).update(
        **{name: getattr(delivery, name) for name in (*_OUTCOME_FIELDS, "updated_at", *fields)}
    )


def _finish(endpoint: WebhookEndpoint, delivery: WebhookDelivery, status: str, *, now, error: str | None = None):
    """Record a final outcome and keep the endpoint's failure streak. endpoint.consecutive_failures is the value read
    with the lease, kept up to date here (None: unknown); while we hold the lease only we add to the streak, so a
    success on an endpoint known to be at 0 is a single autocommit UPDATE of the delivery."""
    delivery.status = status
    delivery.completed_at = now
    delivery.lease_expires_at = None
    if error:
        delivery.last_error = error
    delivered = status == WebhookDelivery.Status.DELIVERED
    is_test = delivery.kind == WebhookDelivery.Kind.TEST
    if delivered and not is_test and endpoint.consecutive_failures == 0:
        _save_outcome(delivery, now, "completed_at")
        return
    with transaction.atomic():
        _save_outcome(delivery, now, "completed_at")
        endpoints = WebhookEndpoint.objects.unscoped().filter(id=endpoint.id)
        if delivered:
            if endpoint.consecutive_failures != 0:
                endpoints.update(consecutive_failures=0)
                endpoint.consecutive_failures = 0
            if is_test:
                # Only the url the test reached is verified (a PATCH may have moved the endpoint meanwhile).
                endpoints.filter(url=endpoint.url).update(verified_at=now)
        elif not is_test:
            endpoint.consecutive_failures = None  # counted in the database; unknown here until the next success
            endpoints.update(consecutive_failures=F("consecutive_failures") + 1)
            # 20 consecutive terminal failures: disable and pause (a success in between resets the streak).
            paused = endpoints.filter(consecutive_failures__gte=AUTO_PAUSE_AFTER, paused=False).update(
                enabled=False, paused=True, paused_reason="consecutive_failures"
            )
            if paused:
                logger.warning(
                    "webhook endpoint %s paused after %s consecutive failures", endpoint.id, AUTO_PAUSE_AFTER
                )


def due_endpoint_ids(limit: int = 500) -> list:
    """Endpoints with work that may be published now (the dispatch sweep)."""
    now = timezone.now()
    return list(
        WebhookDelivery.objects.unscoped()
        .filter(next_attempt_at__lte=now, status__in=["pending", "in_flight"])
        .filter(models_q_due(now))
        .values_list("endpoint_id", flat=True)
        .distinct()[:limit]
    )


def models_q_due(now: datetime) -> Q:
    return (Q(status="pending") | Q(status="in_flight", lease_expires_at__lt=now)) & (
        Q(last_published_at__isnull=True) | Q(last_published_at__lte=now - PUBLICATION_SPACING)
    )


def expire_exhausted(now: datetime | None = None, *, endpoint: WebhookEndpoint | None = None) -> int:
    """Deliveries past their 48-hour publication deadline, or handed out seven times, fail (the sweep, or one
    endpoint's at the start of a drain). This also ends deliveries held on an endpoint that stayed disabled or
    paused."""
    now = now or timezone.now()
    # status IN (...) (and, for one endpoint, its practice) so the partial claim index applies, not the history.
    deliveries = WebhookDelivery.objects.unscoped().filter(
        status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.IN_FLIGHT]
    )
    if endpoint is not None:
        deliveries = deliveries.filter(organization_id=endpoint.organization_id, endpoint_id=endpoint.id)
    return (
        deliveries.filter(
            # Never one a worker is sending right now (in flight under a live lease).
            Q(status=WebhookDelivery.Status.PENDING)
            | Q(status=WebhookDelivery.Status.IN_FLIGHT, lease_expires_at__lt=now)
        )
        .filter(Q(deadline_at__lte=now) | Q(publications__gte=MAX_PUBLICATIONS))
        .update(
            status=WebhookDelivery.Status.FAILED,
            completed_at=now,
            lease_expires_at=None,
            last_error="retries exhausted",
        )
    )


def purge_finished(now: datetime | None = None) -> int:
    """Completed and failed delivery records are kept 30 days."""
    cutoff = (now or timezone.now()) - RETENTION
    deleted, _ = WebhookDelivery.objects.unscoped().filter(completed_at__lt=cutoff).delete()
    return deleted
