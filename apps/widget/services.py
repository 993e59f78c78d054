"""Writes of the chat widget: widget connections (settings), visitors, their threads and messages (public)."""

import datetime
import logging
import uuid
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from apps.conversations.public import (
    Conversation,
    Message,
    widget_channel_create,
    widget_channel_sync,
    widget_message_received,
    widget_messages_stored,
)
from apps.core.errors import ApiError
from apps.core.writes import assign_fields
from apps.patients.public import (
    Patient,
    lead_source_named,
    patient_create,
    patient_match,
)
from apps.patients.public import Status as PatientStatus
from apps.today.public import push_to_users
from apps.widget import live, tokens
from apps.widget.models import ReceivedMessage, Visitor, WidgetConnection

logger = logging.getLogger("apps.widget")

LEAD_SOURCE_NAME = "Chat widget"
WIDGET_FIELDS = ("name", "allowed_origins", "greeting", "away_message", "office_hours", "active")


class ThreadNotOpen(ApiError):
    status_code = 409
    code = "WIDGET_THREAD_NOT_OPEN"
    message = "Open the thread first (POST /widget/{embedKey}/thread with a name and an e-mail or phone)."


# --- settings -------------------------------------------------------------------------------------------------------


def _sync_channel(widget: WidgetConnection) -> None:
    widget_channel_sync(widget.channel, name=widget.name, active=widget.active, embed_key=widget.embed_key)


@transaction.atomic
def widget_create(*, organization, data: dict) -> WidgetConnection:
    embed_key = tokens.new_embed_key()
    channel = widget_channel_create(organization=organization, name=data["name"], embed_key=embed_key)
    widget = WidgetConnection(organization=organization, embed_key=embed_key, channel=channel)
    assign_fields(widget, data, fields=WIDGET_FIELDS)
    widget.save()
    if not widget.active:
        _sync_channel(widget)
    return widget


@transaction.atomic
def widget_update(*, organization, widget: WidgetConnection, data: dict, rotate_key: bool = False) -> WidgetConnection:
    """Any subset of the settings; rotate_key issues a new embed key (the old one answers 404 at once: the practice
    pastes the new snippet). Visitors and threads stay."""
    widget = WidgetConnection.objects.for_org(organization).select_for_update().get(id=widget.id)
    changed = assign_fields(widget, data, fields=WIDGET_FIELDS)
    if rotate_key:
        widget.embed_key, changed = tokens.new_embed_key(), True
    if changed:
        widget.save()
        _sync_channel(widget)
        if rotate_key or not widget.active:
            live.close_sockets_after_commit(widget.id)
    return widget


# --- visitors and threads (public) --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Started:
    visitor: Visitor
    token: str


def visitor_start(*, widget: WidgetConnection) -> Started:
    token = tokens.new_visitor_token()
    visitor = Visitor.objects.create(
        organization_id=widget.organization_id,
        widget=widget,
        token_hash=tokens.digest(token),
        last_seen_at=timezone.now(),
    )
    return Started(visitor, token)


def _lock_practice_matching(organization) -> None:
    """One thread opening of the practice at a time, to the commit: two visitors giving the same new e-mail at the
    same instant must make one enquiry, not two (the same lock key as the other public surfaces' matching)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"widget:{organization.pk}"])


@transaction.atomic
def thread_open(*, widget: WidgetConnection, visitor: Visitor, data: dict) -> tuple[Visitor, bool]:
    """File the visitor's thread under a patient: the practice's patient with this e-mail or phone, else a new
    enquiry (lead source "Chat widget"). Opening again answers the open thread unchanged: (visitor, False)."""
    visitor = Visitor.objects.for_org(widget.organization_id).select_for_update().get(id=visitor.id)
    if visitor.patient_id is not None:
        return visitor, False
    organization = widget.organization
    email, phone = data.get("email") or "", data.get("phone") or ""
    _lock_practice_matching(organization)
    patient = patient_match(organization=organization, email=email or None, phone=phone or None)
    if patient is None:
        first, _, last = data["name"].strip().partition(" ")
        patient = patient_create(
            organization=organization,
            user=None,
            data={
                "first_name": first,
                "last_name": last.strip(),
                "email": email or None,
                "phone_mobile": phone or None,
                "status": PatientStatus.ENQUIRY,
                "lead_source_id": lead_source_named(organization, LEAD_SOURCE_NAME),
            },
        )
        visitor.made_patient = True
    visitor.name, visitor.email, visitor.phone, visitor.patient = data["name"], email, phone, patient
    visitor.last_seen_at = timezone.now()
    visitor.save()
    return visitor, True


def message_send(
    *, widget: WidgetConnection, visitor: Visitor, body: str, client_message_id: str
) -> tuple[Message, bool]:
    """The visitor's message into the inbox (inbound on the widget's connection). Idempotent by client message id."""
    if visitor.patient_id is None:
        raise ThreadNotOpen()
    pending = (
        ReceivedMessage.objects.for_org(widget.organization_id)
        .filter(visitor_id=visitor.id, client_message_id=client_message_id)
        .values_list("id", flat=True)
        .first()
    )
    if pending is not None:  # sent over the socket too and not filed yet: filed now, under the id its ack gave
        received_store(received_id=pending)
    patient = Patient.objects.for_org(widget.organization_id).get(id=visitor.patient_id)
    # One visitor's messages are stored one at a time (the contact's advisory lock): a retry finds the first.
    message, created = widget_message_received(
        organization=widget.organization,
        connection=widget.channel,
        patient=patient,
        visitor_address=str(visitor.id),
        body=body,
        client_message_id=f"{visitor.id}:{client_message_id}",
    )
    Visitor.objects.for_org(widget.organization_id).filter(id=visitor.id).update(last_seen_at=timezone.now())
    return message, created


@dataclass(frozen=True)
class Accepted:
    """What the socket's ack carries: the inbox message's id (already stored, or to be), its body and time."""

    message_id: str
    body: str
    sent_at: object  # datetime


@dataclass(frozen=True)
class Incoming:
    """One visitor's socket message waiting to be kept (apps.widget.consumers batches them per process)."""

    widget: WidgetConnection
    visitor: Visitor
    body: str
    client_message_id: str


def message_accept(*, widget: WidgetConnection, visitor: Visitor, body: str, client_message_id: str) -> Accepted:
    """One visitor's socket message, kept as messages_accept keeps a batch; ThreadNotOpen when its thread is not."""
    (outcome,) = messages_accept([Incoming(widget, visitor, body, client_message_id)])
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def messages_accept(batch: list[Incoming]) -> list[Accepted | ThreadNotOpen]:
    """Visitors' socket messages kept durably (one row each, in one INSERT) and answered with the ids their inbox
    messages will have; a task files the batch in the inbox after the commit (store_received_many), so an ack never
    waits for the inbox. Idempotent by visitor and client message id: a retry answers the same id, whether or not
    the message is filed yet. Outcomes come back in the batch's order; a visitor whose thread is not open gets
    ThreadNotOpen in their place."""
    outcomes: list[Accepted | ThreadNotOpen | None] = [None] * len(batch)
    by_channel: dict[tuple, list[int]] = {}
    for index, item in enumerate(batch):
        if item.visitor.patient_id is None:
            outcomes[index] = ThreadNotOpen()
        else:
            by_channel.setdefault((item.widget.organization_id, item.widget.channel_id), []).append(index)
    rows: dict[int, ReceivedMessage] = {}
    for indexes in by_channel.values():
        widget = batch[indexes[0]].widget
        stored = widget_messages_stored(
            organization=widget.organization_id,
            connection=widget.channel_id,
            client_message_ids=[f"{batch[i].visitor.id}:{batch[i].client_message_id}" for i in indexes],
        )
        for index in indexes:
            item = batch[index]
            message = stored.get(f"{item.visitor.id}:{item.client_message_id}")
            if message is not None:  # filed already: the ack of a retry carries the filed message
                outcomes[index] = Accepted(str(message.id), message.body, message.occurred_at)
            else:
                rows[index] = ReceivedMessage(
                    id=uuid.uuid4(),
                    organization_id=item.widget.organization_id,
                    widget=item.widget,
                    visitor=item.visitor,
                    client_message_id=item.client_message_id,
                    message_id=uuid.uuid4(),
                    body=item.body,
                )
    if rows:
        with transaction.atomic():
            ReceivedMessage.objects.unscoped().bulk_create(rows.values(), ignore_conflicts=True)
            kept = _received_rows(rows.values())
            created = [row.id for row in rows.values() if kept[_received_key(row)].id == row.id]
            if created:
                transaction.on_commit(lambda: _queue_store(created))
        for index, row in rows.items():
            received = kept[_received_key(row)]  # a retry of a message not filed yet: the first row's id
            outcomes[index] = Accepted(str(received.message_id), received.body, received.created_at)
    return outcomes


def _received_key(row: ReceivedMessage) -> tuple:
    return (row.organization_id, row.visitor_id, row.client_message_id)


def _received_rows(rows) -> dict[tuple, ReceivedMessage]:
    """The kept rows of these (organization, visitor, client message id) keys, whoever inserted them."""
    rows = list(rows)
    keys = {_received_key(row) for row in rows}
    candidates = ReceivedMessage.objects.unscoped().filter(
        organization_id__in={row.organization_id for row in rows},
        visitor_id__in={row.visitor_id for row in rows},
        client_message_id__in={row.client_message_id for row in rows},
    )
    return {_received_key(row): row for row in candidates if _received_key(row) in keys}


def _queue_store(received_ids: list) -> None:
    from apps.widget.tasks import store_received_many

    try:
        store_received_many.delay([str(received_id) for received_id in received_ids])
    except Exception as exc:  # the broker is down: the minute sweep stores them
        logger.warning("widget messages not queued (%s); the sweep stores them", type(exc).__name__)


def received_sweep(*, older_than_seconds: int = 60) -> int:
    """Store the received socket messages whose task never ran (a broker outage, a lost worker). Returns how many."""
    due = timezone.now() - datetime.timedelta(seconds=older_than_seconds)
    ids = (
        ReceivedMessage.objects.unscoped()
        .filter(created_at__lte=due)
        .order_by("created_at")
        .values_list("id", flat=True)
    )
    return sum(1 for received_id in list(ids[:1000]) if received_store(received_id=received_id))


def received_store(*, received_id) -> bool:
    """Build the inbox rows of one received socket message and delete it (False when another worker has it or it is
    gone). Its message keeps the id and time its ack gave."""
    with transaction.atomic():
        received = (
            ReceivedMessage.objects.unscoped()
            .select_for_update(skip_locked=True)
            .select_related("widget__organization", "widget__channel", "visitor")
            .filter(id=received_id)
            .first()
        )
        if received is None:
            return False
        visitor = received.visitor
        patient = Patient.objects.for_org(received.organization_id).get(id=visitor.patient_id)
        widget_message_received(
            organization=received.widget.organization,
            connection=received.widget.channel,
            patient=patient,
            visitor_address=str(visitor.id),
            body=received.body,
            client_message_id=f"{visitor.id}:{received.client_message_id}",
            message_id=received.message_id,
            received_at=received.created_at,
        )
        Visitor.objects.for_org(received.organization_id).filter(id=visitor.id).update(last_seen_at=timezone.now())
        received.delete()
    return True


def practice_typing(*, visitor_id) -> None:
    live.push_after_commit(visitor_id, {"type": "typing", "from": "practice"})


def visitor_typing(*, visitor: Visitor, widget: WidgetConnection) -> None:
    """The visitor is typing: shown to the member the conversation is assigned to (over /today/ws)."""
    if visitor.patient_id is None:
        return
    conversation = (
        Conversation.objects.for_org(widget.organization_id)
        .filter(patient_id=visitor.patient_id, connection_id=widget.channel_id)
        .only("id", "assignee_id")
        .first()
    )
    if conversation is not None and conversation.assignee_id is not None:
        push_to_users(
            widget.organization_id,
            [conversation.assignee_id],
            "widget.typing",
            {"conversationId": str(conversation.id)},
        )
