"""emit(): record a domain event in the caller's transaction. The row is the outbox.

Webhook fan-out and live updates read committed rows; a commit that succeeds is never lost, a rollback never
leaves an event behind. Payloads are bounded metadata: the guard refuses personal free text, secrets, tokens,
capability URLs and payment-provider identifiers, so they cannot leak to receivers by mistake.
"""

import json
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.events.catalogue import EVENT_TYPE_SET
from apps.events.models import Event

ENVELOPE_VERSION = "1"
MAX_PAYLOAD_BYTES = 64 * 1024
ACTOR_TYPES = frozenset({"user", "system", "patient", "provider"})

logger = logging.getLogger("apps.events")


# Called once after each transaction that recorded events commits (webhook fan-out, live updates). Filled by the
# apps that read the outbox, in their AppConfig.ready(); a listener that fails never undoes the commit.
_committed_listeners: list = []  # listener()
_committed_id_listeners: list = []  # listener(event_ids): the ids of the events that transaction recorded, in order


def on_events_committed(listener, *, with_event_ids: bool = False) -> None:
    listeners = _committed_id_listeners if with_event_ids else _committed_listeners
    if listener not in listeners:
        listeners.append(listener)


class _CommitNotice:
    """The one on_commit callback of a transaction that records events: it collects their ids and, after the commit,
    calls the listeners. A listener gets the ids of events recorded in a savepoint that was later rolled back too;
    it re-reads them to see which committed.

    It is found again through connection.run_on_commit, not marked on the atomic block: a decorated function
    (@transaction.atomic) reuses one Atomic object for every call, so such a mark would silence later transactions.
    """

    def __init__(self):
        self.event_ids: list = []
        self.called = False
        self.listeners = tuple(_committed_listeners)
        self.id_listeners = tuple(_committed_id_listeners)

    def __call__(self) -> None:
        self.called = True
        for listener in self.listeners:
            self._call(listener)
        ids = tuple(self.event_ids)
        for listener in self.id_listeners:
            self._call(listener, ids)

    @staticmethod
    def _call(listener, *args) -> None:
        try:
            listener(*args)
        except Exception:
            logger.exception("outbox listener %s failed after commit", getattr(listener, "__qualname__", listener))


def _notify_after_commit() -> _CommitNotice:
    """This transaction's commit notice, registered on the first event however many it records."""
    for _savepoints, callback, _robust in connection.run_on_commit:
        if isinstance(callback, _CommitNotice) and not callback.called:
            return callback
    notice = _CommitNotice()
    transaction.on_commit(notice, robust=True)
    return notice


class EventRejected(ValueError):
    """A programming error: the event is not in the catalogue or its data breaks the payload rules."""


@dataclass(frozen=True)
class Actor:
    type: str
    id: str

    @classmethod
    def user(cls, user) -> "Actor":
        return cls("user", str(user.pk))

    @classmethod
    def system(cls, name: str = "service") -> "Actor":
        return cls("system", name)


# A key is refused when it IS one of these (free text or a body of its own)…
_FORBIDDEN_KEYS = frozenset({"message", "messages", "review", "reviews", "feedback", "raw", "file", "files"})
# …or when any of its words is one of these (reviewText, messageBody, clinicalNote, providerPayload, webhookUrl)…
_FORBIDDEN_WORDS = frozenset(
    {
        "note",
        "notes",
        "body",
        "text",
        "content",
        "html",
        "transcript",
        "comment",
        "comments",
        "payload",
        "attachment",
        "attachments",
        "recording",
        "recordings",
        "url",
        "urls",
        "uri",
        "href",
        "link",
        "links",
        "token",
        "tokens",
        "secret",
        "secrets",
        "password",
        "passcode",
        "credential",
        "credentials",
        "cookie",
        "signature",
        "stripe",
        "oauth",
        "authorization",
    }
)
# …or when its letters contain one of these compounds (secrets, OAuth data, payment-provider identifiers).
_FORBIDDEN_COMPOUNDS = (
    "medicalalert",
    "apikey",
    "accesstoken",
    "refreshtoken",
    "clientsecret",
    "paymentintent",
    "paymentmethod",
    "chargeid",
    "providerpayment",
    "provideraccount",
    "providercustomer",
    "connectedaccount",
)
# Values: URLs (capability-bearing), our own tokens, JWTs, and payment-provider ids (prefix_ then an id with a
# digit in it, as providers issue them; "in_progress" is a status, not an id).
_FORBIDDEN_VALUE = re.compile(
    r"^(?:(?i:https?://)|svc_(?:oat|ort|key)_|eyJ[\w-]+\.[\w-]+\."
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]+"
    r"|(?:pi|ch|cus|acct|pm|seti|re|py|src|tok|sk|pk|rk|whsec|in|sub|txn)_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,})"
)
_WORD_BOUNDARY = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")


def _words(key: str) -> list[str]:
    return [word.lower() for word in _WORD_BOUNDARY.split(key) if word]


def _is_forbidden_key(key: str) -> bool:
    words = _words(key)
    joined = "".join(words)
    return (
        joined in _FORBIDDEN_KEYS
        or any(word in _FORBIDDEN_WORDS for word in words)
        or any(compound in joined for compound in _FORBIDDEN_COMPOUNDS)
    )


def check_payload(data: Any, path: str = "data") -> None:
    """Refuse the contents the spec bars from event payloads. Raises EventRejected naming the path."""
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                raise EventRejected(f"{path}: keys must be strings")
            if _is_forbidden_key(key):
                raise EventRejected(f"{path}.{key}: this kind of content may not be put in an event")
            check_payload(value, f"{path}.{key}")
    elif isinstance(data, (list, tuple)):
        for index, value in enumerate(data):
            check_payload(value, f"{path}[{index}]")
    elif isinstance(data, str):
        if _FORBIDDEN_VALUE.match(data.strip()):
            raise EventRejected(f"{path}: URLs, tokens and provider identifiers may not be put in an event")
    elif data is not None and not isinstance(data, (bool, int, float)):
        raise EventRejected(f"{path}: only JSON values may be put in an event")


def envelope(event: Event) -> dict[str, Any]:
    return {
        "version": ENVELOPE_VERSION,
        "id": str(event.id),
        "type": event.type,
        "createdAt": event.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "organizationId": str(event.organization_id),
        "subject": {"type": event.subject_type, "id": event.subject_id},
        "actor": {"type": event.actor_type, "id": event.actor_id},
        "data": event.data,
    }


def envelope_bytes(event: Event) -> bytes:
    return json.dumps(envelope(event), cls=DjangoJSONEncoder, separators=(",", ":")).encode()


def _build_event(
    *,
    organization,
    type: str,
    subject_type: str,
    subject_id,
    actor: Actor,
    data: dict[str, Any] | None,
    action: str | None,
    changed_fields,
    idempotency_key: str | None = None,
) -> Event:
    """A checked, unsaved event: catalogue type, actor kind, payload guard and the 64 KiB envelope cap."""
    if type not in EVENT_TYPE_SET:
        raise EventRejected(f"{type!r} is not in the event catalogue")
    if actor.type not in ACTOR_TYPES:
        raise EventRejected(f"actor type {actor.type!r} is not one of {sorted(ACTOR_TYPES)}")
    payload = dict(data or {})
    if action is not None:
        payload["action"] = action
    if changed_fields is not None:
        payload["changedFields"] = list(changed_fields)
    check_payload(payload)
    event = Event(
        id=uuid.uuid4(),
        organization_id=getattr(organization, "pk", organization),
        type=type,
        subject_type=subject_type,
        subject_id=str(subject_id),
        actor_type=actor.type,
        actor_id=str(actor.id),
        data=payload,
        idempotency_key=idempotency_key,
        # createdAt has a fixed width, so measuring with this timestamp is exact.
        created_at=timezone.now(),
    )
    if len(envelope_bytes(event)) > MAX_PAYLOAD_BYTES:
        raise EventRejected(f"the event envelope is over {MAX_PAYLOAD_BYTES} bytes")
    return event


def _require_transaction() -> None:
    if not connection.in_atomic_block:
        raise EventRejected("events must be recorded inside the transaction that makes the change")


def emit(
    *,
    organization,
    type: str,
    subject_type: str,
    subject_id,
    actor: Actor,
    data: dict[str, Any] | None = None,
    action: str | None = None,
    changed_fields: list[str] | None = None,
    idempotency_key: str | None = None,
) -> Event:
    """Record one event inside the caller's transaction and return it.

    Updates pass `action` and `changed_fields` (camelCase field names); they land in data.action and
    data.changedFields. With `idempotency_key`, the same key in the same practice yields the same logical event
    (a provider retry or queue redelivery creates nothing new).
    """
    _require_transaction()
    event = _build_event(
        organization=organization,
        type=type,
        subject_type=subject_type,
        subject_id=subject_id,
        actor=actor,
        data=data,
        action=action,
        changed_fields=changed_fields,
        idempotency_key=idempotency_key,
    )
    notice = _notify_after_commit()
    if idempotency_key is None:
        event.save(force_insert=True)
        notice.event_ids.append(event.id)
        return event
    existing = Event.objects.for_org(event.organization_id).filter(idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            event.save(force_insert=True)
    except IntegrityError:
        # A concurrent emitter won the key: its event is the logical one.
        return Event.objects.for_org(event.organization_id).get(idempotency_key=idempotency_key)
    notice.event_ids.append(event.id)
    return event


@dataclass(frozen=True)
class PendingEvent:
    type: str
    subject_type: str
    subject_id: object
    data: dict[str, Any] | None = None
    action: str | None = None
    changed_fields: tuple[str, ...] | None = None


def emit_many(*, organization, actor: Actor, events: list[PendingEvent]) -> int:
    """Record many events (one per patient of a bulk operation) in one INSERT, with the same rules as emit()."""
    _require_transaction()
    rows = [
        _build_event(
            organization=organization,
            type=pending.type,
            subject_type=pending.subject_type,
            subject_id=pending.subject_id,
            actor=actor,
            data=pending.data,
            action=pending.action,
            changed_fields=pending.changed_fields,
        )
        for pending in events
    ]
    Event.objects.bulk_create(rows)
    if rows:
        _notify_after_commit().event_ids.extend(row.id for row in rows)
    return len(rows)
