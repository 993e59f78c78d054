"""Telephony callbacks: the acknowledging path (ARCHITECTURE 6b) and their processing in Celery.

Acknowledging (POST /webhooks/telephony/{token}, apps.dialer.api.callbacks): the body is bounded (256 KiB, 413
before it is read), the routing token resolves the connection (one prepared statement), the Ed25519 signature is
checked over the untouched bytes, then the event is parsed just enough to name it (data.id, data.event_type) and
the number (or porting order) it is about, and one INSERT … ON CONFLICT DO NOTHING writes its durable receipt: the
connection-scoped event id makes a retry a duplicate, and the same statement decides whether the event is for a
number (or porting order) of this connection — if not, the receipt is written parked, for review, instead of
waiting for a worker. Then a drain is requested (core.drains: a Redis flag, so a burst costs one Celery message)
and the provider gets its 200. Nothing is matched, stored elsewhere or sent inside the request.

Processing (tasks.drain_events): the connection's waiting events oldest first, each under its row lock (SKIP
LOCKED) in its own transaction, through apps.dialer.services; the payload is cleared once processed. A failure is
counted and retried by the sweep (five attempts); an event that cannot be applied yet (a recording before its call)
waits for the next attempt."""

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection as database
from django.db import transaction
from django.utils import timezone

from apps.core.drains import request_drain, run_drain
from apps.core.fields import UNSTORABLE_PROBLEM, has_unstorable_text
from apps.dialer import services
from apps.dialer.models import EventState, TelephonyEvent
from apps.dialer.selectors import CallbackConnection, normalise_number

logger = logging.getLogger("apps.dialer")

MAX_EVENT_ID = 128
MAX_EVENT_TYPE = 64
MAX_ATTEMPTS = 5
WAIT_AT_LEAST_SECONDS = 600


class MalformedCallback(ValueError):
    def __init__(self, field_name: str, problem: str):
        super().__init__(f"{field_name}: {problem}")
        self.field_name, self.problem = field_name, problem


@dataclass(frozen=True)
class ParsedEvent:
    event_id: str
    event_type: str
    occurred_at: datetime | None
    text: str  # the body as text (stored as jsonb)
    check: str  # "number", "porting" or "" (nothing to check)
    keys: list[str]


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _string(value, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value:
        raise MalformedCallback(name, "is required (a string)")
    if len(value) > limit:
        raise MalformedCallback(name, f"is longer than {limit} characters")
    return value


def parse_time(value) -> datetime | None:
    if not isinstance(value, str) or not value or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def parse_event(raw: bytes) -> ParsedEvent:
    """Just enough of a verified body to store it: its id and type, and what decides whether it is ours."""
    try:
        text = raw.decode("utf-8")
        body = json.loads(text, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError):
        raise MalformedCallback("body", "is not JSON") from None
    except RecursionError:
        raise MalformedCallback("body", "is nested too deeply") from None
    if not isinstance(body, dict):
        raise MalformedCallback("body", "must be a JSON object")
    if has_unstorable_text(body):  # PostgreSQL would refuse it: a 503 the provider would retry for days
        raise MalformedCallback("body", UNSTORABLE_PROBLEM)
    data = body.get("data")
    if not isinstance(data, dict):
        raise MalformedCallback("data", "must be an object")
    event_id = _string(data.get("id"), "data.id", MAX_EVENT_ID)
    event_type = _string(data.get("event_type"), "data.event_type", MAX_EVENT_TYPE)
    payload = data.get("payload", {})
    if not isinstance(payload, dict):
        raise MalformedCallback("data.payload", "must be an object")
    check, keys = routing_of(event_type, payload)
    return ParsedEvent(event_id, event_type, parse_time(data.get("occurred_at")), text, check, keys)


def routing_of(event_type: str, payload: dict) -> tuple[str, list[str]]:
    """What must be this connection's for the event to be applied: the practice's number of a call (the called
    number of an inbound call, the calling one of an outbound call; either when the direction is not given), the
    porting order of a porting event, the numbers of a port-out. Events that carry none (recordings, number orders)
    are applied to what they name, if anything."""
    if event_type.startswith("call."):
        direction = str(payload.get("direction") or "").lower()
        to, from_ = normalise_number(payload.get("to")), normalise_number(payload.get("from"))
        if direction in ("incoming", "inbound"):
            numbers = [to]
        elif direction in ("outgoing", "outbound"):
            numbers = [from_]
        else:
            numbers = [to, from_]
        numbers = [number for number in numbers if number]
        return ("number", numbers) if numbers else ("", [])
    if event_type.startswith("porting_order."):
        order_id = payload.get("id")
        if isinstance(order_id, str) and order_id:
            return "porting", [order_id[:64]]
        return "", []
    if event_type.startswith("portout."):
        numbers = [normalise_number(n) for n in payload.get("phone_numbers") or [] if isinstance(n, str)]
        numbers = [number for number in numbers if number][:100]
        return ("number", numbers) if numbers else ("", [])
    return "", []


# The whole acknowledging write: one statement. The receipt is inserted unless this connection already holds the
# event id (a duplicate: no row comes back); its state says whether it waits for a worker or is parked.
_INSERT = """
    INSERT INTO dialer_telephonyevent
        (id, organization_id, connection_id, event_id, event_type, payload, state, attempts, error, occurred_at,
         created_at, updated_at)
    VALUES (%(id)s, %(organization)s, %(connection)s, %(event_id)s, %(event_type)s, %(payload)s::jsonb, {state},
            0, '', %(occurred_at)s, %(now)s, %(now)s)
    ON CONFLICT (organization_id, connection_id, event_id) DO NOTHING
    RETURNING state
"""
_STATES = {
    "": "'received'",
    "number": """CASE WHEN EXISTS (
            SELECT 1 FROM dialer_phonenumber
            WHERE organization_id = %(organization)s AND connection_id = %(connection)s
              AND phone_number = ANY(%(keys)s) AND status IN ('pending', 'active')
        ) THEN 'received' ELSE 'parked' END""",
    "porting": """CASE WHEN EXISTS (
            SELECT 1 FROM dialer_portingorder
            WHERE organization_id = %(organization)s AND connection_id = %(connection)s
              AND provider_order_id = ANY(%(keys)s)
        ) THEN 'received' ELSE 'parked' END""",
}
_STATEMENTS = {check: _INSERT.format(state=state) for check, state in _STATES.items()}


@dataclass(frozen=True)
class Received:
    duplicate: bool
    parked: bool


def receive(*, connection: CallbackConnection, event: ParsedEvent) -> Received:
    """Store the verified event's receipt (module docstring). Raises DatabaseError when it could not be stored or
    parked (the caller answers 503 with Retry-After)."""
    values = {
        "id": uuid.uuid4(),
        "organization": connection.organization_id,
        "connection": connection.id,
        "event_id": event.event_id,
        "event_type": event.event_type,
        "payload": event.text,
        "occurred_at": event.occurred_at,
        "now": timezone.now(),
        "keys": event.keys,
    }
    with database.cursor() as cursor:
        cursor.execute(_STATEMENTS[event.check], values)
        row = cursor.fetchone()
    if row is None:
        return Received(duplicate=True, parked=False)
    if row[0] == EventState.PARKED:
        logger.info("telephony event parked for review: type=%s", event.event_type)
        return Received(duplicate=False, parked=True)
    transaction.on_commit(lambda: request_processing(connection.organization_id, connection.id))
    return Received(duplicate=False, parked=False)


# --- processing ----------------------------------------------------------------------------------------------------


def _drain_flag(connection_id) -> str:
    return f"svc:dialer:drain:{connection_id}"


def request_processing(organization_id, connection_id) -> None:
    from apps.dialer.tasks import drain_events

    request_drain(_drain_flag(connection_id), drain_events, str(organization_id), str(connection_id))


def drain_connection(*, organization_id, connection_id) -> int:
    return run_drain(
        _drain_flag(connection_id),
        lambda: TelephonyEvent.objects.for_org(organization_id).filter(
            connection_id=connection_id, state=EventState.RECEIVED
        ),
        process=event_process,
    )


def event_process(event_id) -> bool:
    """Apply one waiting event (under its row lock; another worker skips it). True when it is done with (applied,
    or failed for good)."""
    with transaction.atomic():
        event = (
            TelephonyEvent.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("connection", "organization")
            .filter(id=event_id, state=EventState.RECEIVED)
            .first()
        )
        if event is None:
            return False
        try:
            with transaction.atomic():
                services.event_apply(event)
        except services.NotYetApplicable as waiting:
            return _failed(event, waiting.reason, final=False)
        except services.EventIgnored as ignored:
            event.error = ignored.reason[:120]
        except Exception as exc:  # the type only: a database error's detail can quote the payload
            logger.warning("telephony event %s not applied (%s)", event.event_type, type(exc).__name__)
            return _failed(event, type(exc).__name__, final=False)
        event.state, event.payload = EventState.PROCESSED, {}
        event.save(update_fields=["state", "payload", "error", "updated_at"])
        return True


def _failed(event: TelephonyEvent, reason: str, *, final: bool) -> bool:
    """Count a failed attempt; after MAX_ATTEMPTS, once the event is WAIT_AT_LEAST_SECONDS old (every drain of the
    connection tries its waiting events again, so a burst must not use them up), it fails for good."""
    event.attempts += 1
    event.error = reason[:120]
    old_enough = event.created_at < timezone.now() - timezone.timedelta(seconds=WAIT_AT_LEAST_SECONDS)
    if final or (event.attempts >= MAX_ATTEMPTS and old_enough):
        event.state, event.payload = EventState.FAILED, {}
    event.save(update_fields=["attempts", "error", "state", "payload", "updated_at"])
    return event.state == EventState.FAILED


def sweep(*, older_than_seconds: int = 60, limit: int = 500) -> int:
    """Events still waiting a minute after they arrived (a drain request lost with the broker, or a failure being
    retried): processed here. Returns how many were done with."""
    cutoff = timezone.now() - timezone.timedelta(seconds=older_than_seconds)
    waiting = list(
        TelephonyEvent.unscoped_objects.filter(state=EventState.RECEIVED, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    return sum(event_process(event_id) for event_id in waiting)


def purge(*, older_than_days: int = 30) -> int:
    """Receipts of events done with are kept 30 days (the provider retries for far less), then deleted."""
    cutoff = timezone.now() - timezone.timedelta(days=older_than_days)
    deleted, _ = TelephonyEvent.unscoped_objects.filter(
        state__in=[EventState.PROCESSED, EventState.FAILED, EventState.DISMISSED], updated_at__lt=cutoff
    ).delete()
    return deleted
