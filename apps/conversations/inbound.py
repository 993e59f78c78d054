"""Inbound callbacks: receiving (claim receipts, store each verified item, park what no connection here owns, ask
a worker to drain) and processing in Celery (match the sender to the practice's patients or open an enquiry, find
or open the conversation, store the message and its attachments, apply STOP/START keywords, delivery statuses and
e-mail suppressions, emit events). Message bodies never go into events or logs."""

import logging
import re
import uuid
from dataclasses import dataclass

import phonenumbers
from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection as database
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from psycopg.types.json import Jsonb

from apps.conversations import email_bodies, short_video
from apps.conversations.errors import ParkedAlreadyDecided
from apps.conversations.models import (
    ChannelConnection,
    ContactBlock,
    Conversation,
    EmailEventReceipt,
    Health,
    InboundDelivery,
    Kind,
    Message,
    MessageAttachment,
    ParkedCallback,
    ProviderReceipt,
    Status,
)
from apps.conversations.providers import (
    InboundText,
    Item,
    StatusUpdate,
    Suppression,
    item_from_payload,
    item_to_payload,
    normalise_number,
    receipt_digest,
)
from apps.conversations.services import connection_record_health
from apps.core.drains import request_drain, run_drain
from apps.core.errors import ValidationFailed
from apps.events.services import Actor, emit
from apps.patients.public import (
    MarketingConsent,
    Patient,
    consent_record,
    digits_of,
    patient_create,
    timeline_record,
)
from apps.patients.public import Status as PatientStatus

logger = logging.getLogger("apps.conversations")

# One contact (a number or address) stands for at most this many patients; more keeps it blocked for review.
MAX_PATIENTS_PER_CONTACT = 25
# Keywords in the languages the practices use (English, Italian), matched on the whole message, any case. START
# only acts on a blocked contact, so an ordinary reply never grants consent.
STOP_WORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "ARRESTA", "BASTA", "CANCELLA"})
START_WORDS = frozenset({"START", "UNSTOP", "AVVIA", "RIPRENDI"})
CONSENT_CHANNEL = {
    Kind.SMS: MarketingConsent.Channel.SMS,
    Kind.TELEPHONY_MESSAGING: MarketingConsent.Channel.SMS,
    Kind.MESSAGING_APP: MarketingConsent.Channel.WHATSAPP,
    Kind.EMAIL: MarketingConsent.Channel.EMAIL,
}  # the widget and the short-video platform have none: nothing marketing is sent through them
# A contact's block covers every channel that reaches the same inbox of the patient's: an SMS STOP also stops
# texts from a telephony number (both are SMS to the patient).
BLOCK_CHANNEL = {
    Kind.SMS: Kind.SMS,
    Kind.TELEPHONY_MESSAGING: Kind.SMS,
    Kind.MESSAGING_APP: Kind.MESSAGING_APP,
    Kind.EMAIL: Kind.EMAIL,
    Kind.WIDGET: Kind.WIDGET,
    Kind.SHORT_VIDEO: Kind.SHORT_VIDEO,
}
MAX_PROCESS_ATTEMPTS = 5
PROCESS_TOGETHER = 25  # items a drain processes in one transaction
# Outbound states in the order they happen; a status callback never moves a message backwards (providers retry
# and reorder). A failure counts only before delivery.
STATUS_RANK = {
    Message.State.QUEUED: 0,
    Message.State.SENT: 1,
    Message.State.DELIVERED: 2,
    Message.State.READ: 3,
}
FAILURES = (Message.State.UNDELIVERED, Message.State.FAILED)


def _drain_flag(connection_id) -> str:
    return f"svc:conversations:drain:{connection_id}"


@dataclass(frozen=True)
class Received:
    stored: int  # items stored for processing
    duplicates: int  # inbound messages whose receipt was already claimed
    parked: list[ParkedCallback]  # items for addresses not connected here, kept for review (one per address)


@transaction.atomic
def receive(
    *,
    kind: str,
    items: list[Item],
    connections: dict[str, ChannelConnection],
    attribute_to_id=None,
    owned_elsewhere: frozenset = frozenset(),
    email_event_id: str | None = None,
) -> Received:
    """Store a verified callback's items in one transaction, before it is acknowledged. Each item goes to the
    connection of its receiving address (`connections`, by normalised address); an inbound message claims its
    connection-scoped receipt first, so a retried callback stores nothing twice. Items for an address not connected
    here are parked for review (attributed to `attribute_to_id`, the practice the route token named, if any, unless
    another practice owns the address: `owned_elsewhere`); when the
    park fails nothing is kept and the caller answers 503. Workers are asked to drain after the commit. An e-mail
    provider event's receipt is marked stored in the same transaction."""
    if email_event_id is not None and not _email_event_still_pending(email_event_id):
        return Received(0, len(items), [])  # a concurrent delivery of the same event stored it first
    stored = duplicates = 0
    unrouted: dict[str, list[Item]] = {}
    touched: dict = {}
    for item in items:
        connection = connections.get(item.recipient)
        if connection is None:
            unrouted.setdefault(item.recipient, []).append(item)
            continue
        if not _store_item(connection, item):
            duplicates += 1
            continue
        touched[connection.id] = connection
        stored += 1
    for connection in touched.values():
        if connection.status == Status.PENDING:  # a verified callback proves the connection works
            ChannelConnection.objects.for_org(connection.organization_id).filter(
                id=connection.id, status=Status.PENDING
            ).update(status=Status.ACTIVE, updated_at=timezone.now())
        if connection.health != Health.HEALTHY:  # verified callbacks arriving: the provider side works
            connection_record_health(connection=connection, health=Health.HEALTHY, reason="verified callbacks arriving")
        transaction.on_commit(lambda connection=connection: request_processing(connection))
    # One parked callback per receiving address: each is replayed into one connection, so items for two numbers
    # never travel together.
    # An address another practice has connected is parked for the operators, never shown to the token's practice.
    parked = [
        park(kind=kind, items=group, organization_id=None if address in owned_elsewhere else attribute_to_id)
        for address, group in unrouted.items()
    ]
    if email_event_id is not None:
        EmailEventReceipt.objects.filter(digest=receipt_digest(email_event_id)).update(
            state=EmailEventReceipt.State.STORED
        )
    return Received(stored, duplicates, parked)


def _email_event_still_pending(event_id: str) -> bool:
    """The event's receipt, locked until this transaction ends: of two deliveries of one event at once, the second
    waits and then finds it stored."""
    receipt = EmailEventReceipt.objects.select_for_update().filter(digest=receipt_digest(event_id)).first()
    return receipt is not None and receipt.state == EmailEventReceipt.State.PENDING


# The callback's hot path, one statement an item (no read first, no savepoint, no ORM compile): an inbound message
# claims its receipt and is stored only if the claim succeeded; other items are stored as they are.
_STORE_MESSAGE = """
    WITH claimed AS (
        INSERT INTO conversations_providerreceipt (id, organization_id, connection_id, digest, created_at, updated_at)
        VALUES (%(receipt)s, %(organization)s, %(connection)s, %(digest)s, %(now)s, %(now)s)
        ON CONFLICT (organization_id, connection_id, digest) DO NOTHING
        RETURNING 1
    )
    INSERT INTO conversations_inbounddelivery
        (id, organization_id, connection_id, payload, state, attempts, error, created_at, updated_at)
    SELECT %(delivery)s, %(organization)s, %(connection)s, %(payload)s, 'received', 0, '', %(now)s, %(now)s FROM claimed
    RETURNING 1
"""
_STORE_OTHER = """
    INSERT INTO conversations_inbounddelivery
        (id, organization_id, connection_id, payload, state, attempts, error, created_at, updated_at)
    VALUES (%(delivery)s, %(organization)s, %(connection)s, %(payload)s, 'received', 0, '', %(now)s, %(now)s)
    RETURNING 1
"""


def _store_item(connection: ChannelConnection, item: Item) -> bool:
    """Store one item for processing; False when it is a message whose receipt this connection already holds."""
    values = {
        "delivery": uuid.uuid4(),
        "organization": connection.organization_id,
        "connection": connection.id,
        "payload": Jsonb(item_to_payload(item)),
        "now": timezone.now(),  # the arrival time (as the ORM would write it), not the transaction's start
    }
    statement = _STORE_OTHER
    if isinstance(item, InboundText):
        statement = _STORE_MESSAGE
        values.update(receipt=uuid.uuid4(), digest=receipt_digest(item.provider_message_id))
    with database.cursor() as cursor:
        cursor.execute(statement, values)
        return cursor.fetchone() is not None


def park(*, kind: str, items: list[Item], organization_id=None, reason="address_not_connected") -> ParkedCallback:
    """Keep verified items no connection here owns for review. Runs inside the callback's transaction: the callback
    is acknowledged only once this row is committed, after at most a bounded wait for the table (a timeout rolls
    the whole callback back and it is answered 503 with Retry-After)."""
    with database.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '2s'")
    parked = ParkedCallback.objects.create(
        organization_id=organization_id,
        kind=kind,
        receiving_address=items[0].recipient,
        reason=reason,
        items=[item_to_payload(item) for item in items],
    )
    logger.info("callback parked for review: kind=%s items=%d attributed=%s", kind, len(items), bool(organization_id))
    return parked


@transaction.atomic
def parked_replay(*, organization, user, parked: ParkedCallback, connection: ChannelConnection) -> Received:
    """Assign a parked callback to one of the practice's connections of its kind and receive its items there, as
    if they had arrived for it (they were verified when parked; receipts still stop a second copy)."""
    parked = _decidable(organization, parked)
    if connection.kind != parked.kind or connection.status == Status.DISCONNECTED:
        raise ValidationFailed.for_field("connectionId", f"must be a receiving {parked.kind} connection")
    items = [item_from_payload(payload) for payload in parked.items]
    received = receive(kind=parked.kind, items=items, connections={item.recipient: connection for item in items})
    parked.state, parked.replayed_into = ParkedCallback.State.REPLAYED, connection
    parked.decided_by, parked.decided_at = user, timezone.now()
    parked.save(update_fields=["state", "replayed_into", "decided_by", "decided_at", "updated_at"])
    return received


@transaction.atomic
def parked_dismiss(*, organization, user, parked: ParkedCallback) -> ParkedCallback:
    parked = _decidable(organization, parked)
    parked.state, parked.decided_by, parked.decided_at = ParkedCallback.State.DISMISSED, user, timezone.now()
    parked.save(update_fields=["state", "decided_by", "decided_at", "updated_at"])
    return parked


def _decidable(organization, parked: ParkedCallback) -> ParkedCallback:
    locked = ParkedCallback.objects.select_for_update().get(pk=parked.pk, organization=organization)
    if locked.state != ParkedCallback.State.PARKED:
        raise ParkedAlreadyDecided(details={"state": locked.state})
    return locked


def request_processing(connection: ChannelConnection) -> None:
    """One drain per connection at a time (core.drains): a burst of callbacks costs one Celery message."""
    from apps.conversations.tasks import drain_connection

    request_drain(_drain_flag(connection.id), drain_connection, str(connection.organization_id), str(connection.id))


def _request_copies(attachment_ids: list) -> None:
    from apps.conversations.attachments import (
        request_copies,  # it publishes tasks, which import this module
    )

    request_copies(attachment_ids)


def drain_connection(*, organization_id, connection_id) -> int:
    return run_drain(
        _drain_flag(connection_id),
        lambda: InboundDelivery.objects.for_org(organization_id).filter(
            connection_id=connection_id, state=InboundDelivery.State.RECEIVED
        ),
        process_many=inbound_process_many,
        together=PROCESS_TOGETHER,
    )


def inbound_process(delivery_id) -> bool:
    return inbound_process_many([delivery_id]) == 1


def inbound_process_many(delivery_ids: list) -> int:
    """Process stored items, each once: the rows are locked (SKIP LOCKED, so a second worker moves on) and each is
    deleted when done (the payload is not kept past processing). One transaction for the group (one commit, one
    publication of its events), each item under its own savepoint: a failing item is rolled back alone and counted
    (the sweep retries it; after five attempts it is marked failed with the error's type, never its text, which
    can quote the body). The senders' contact locks are taken up front in one order, so two groups never wait on
    each other in a cycle. Returns how many were done."""
    texts, unavailable = _email_texts(delivery_ids)  # read before any lock is taken: a slow provider holds none
    done = 0
    with transaction.atomic():
        deliveries = list(
            # Only the deliveries' own rows: FOR UPDATE of the joined connection would make every other worker skip
            # all deliveries of that connection while these are being processed.
            InboundDelivery.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("connection", "organization")
            .filter(id__in=delivery_ids, state=InboundDelivery.State.RECEIVED)
            .order_by("created_at", "id")
        )
        items = [(delivery, texts.get(delivery.id) or item_from_payload(delivery.payload)) for delivery in deliveries]
        _lock_contacts(sorted({(d.organization_id, i.sender) for d, i in items if isinstance(i, InboundText)}))
        for delivery, item in items:
            try:
                with transaction.atomic():
                    if delivery.id in unavailable:
                        raise unavailable[delivery.id]
                    HANDLERS[item.type](delivery.organization, delivery.connection, item, delivery.created_at)
                    delivery.delete()
                done += 1
            except SoftTimeLimitExceeded:
                raise  # the task's time is up: the rest waits for the next drain or the sweep
            except Exception as exc:
                _count_failure(delivery.id, type(exc).__name__)
                logger.warning("inbound delivery %s not processed (%s)", delivery.id, type(exc).__name__)
    return done


def _email_texts(delivery_ids: list) -> tuple[dict, dict]:
    """The texts of inbound e-mails among these items, read from the provider before processing (its webhook
    carries metadata only): {delivery id: the item with its text}, and {delivery id: the error} for those the
    provider did not give (processed as failures, so retried)."""
    texts, unavailable = {}, {}
    waiting = InboundDelivery.unscoped_objects.filter(
        id__in=delivery_ids, state=InboundDelivery.State.RECEIVED, connection__kind=Kind.EMAIL
    ).values_list("id", "payload")
    for delivery_id, payload in waiting:
        item = item_from_payload(payload)
        if isinstance(item, InboundText) and not item.body:
            try:
                texts[delivery_id] = email_bodies.completed(item)
            except email_bodies.EmailBodyUnavailable as error:
                unavailable[delivery_id] = error
    return texts, unavailable


def _lock_contacts(contacts: list[tuple]) -> None:
    """One contact's messages are processed one at a time (transaction-level advisory locks on practice and
    sender): two workers must not both open an enquiry for the same new number."""
    if contacts:
        with database.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(key, 0)) FROM unnest(%s::text[]) AS key",
                [[f"{organization_id}:{sender}" for organization_id, sender in contacts]],
            )


def _count_failure(delivery_id, error: str) -> None:
    with transaction.atomic():
        delivery = InboundDelivery.unscoped_objects.select_for_update().filter(id=delivery_id).first()
        if delivery is None:
            return
        delivery.attempts += 1
        delivery.error = error[:200]
        if delivery.attempts >= MAX_PROCESS_ATTEMPTS:
            delivery.state = InboundDelivery.State.FAILED
        delivery.save(update_fields=["attempts", "error", "state", "updated_at"])


def _contact_patients(organization, address: str) -> list[Patient]:
    """The practice's unmerged patients with this number (as the stored digits may spell it: international, with
    00, or national) or this e-mail address, most recently updated first; at most one more than a contact may stand
    for."""
    if "@" in address:
        condition = Q(email__iexact=address)
    else:
        numbers = number_spellings(address)
        condition = Q(mobile_digits__in=numbers) | Q(other_digits__in=numbers)
    patients = (
        Patient.objects.for_org(organization)
        .filter(merged_into__isnull=True)
        .annotate(mobile_digits=digits_of("phone_mobile"), other_digits=digits_of("phone_other"))
        .filter(condition)
        .order_by("-updated_at", "id")
    )
    return list(patients[: MAX_PATIENTS_PER_CONTACT + 1])


def number_spellings(number: str) -> set[str]:
    """The digit strings a patient's stored number may have for this international number: +39 333 1234567 is
    393331234567, 00393331234567, 3331234567; +44 7700 900123 also 07700900123 (the national trunk prefix). Only
    the number's real country code is dropped (phonenumbers), never a guess at 1-3 leading digits."""
    digits = re.sub(r"\D", "", number)
    spellings = {digits, f"00{digits}"}
    try:
        parsed = phonenumbers.parse(f"+{digits}")
    except phonenumbers.NumberParseException:
        parsed = None
    if parsed is not None:
        spellings.add(phonenumbers.national_significant_number(parsed))
        spellings.add(re.sub(r"\D", "", phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.NATIONAL)))
    return {spelling for spelling in spellings if len(spelling) >= 6}


def _short_video_patients(organization, inbound: InboundText) -> list[Patient]:
    """The practice's patients behind a short-video user: the one whose conversation already has this platform user
    id (they wrote before, or a person linked them), else those whose customFields.shortVideoHandle is the sender's
    handle (with or without its @, any case), most recently updated first."""
    talked = (
        Conversation.objects.for_org(organization)
        .filter(channel=Kind.SHORT_VIDEO, contact_address=inbound.sender, patient__merged_into__isnull=True)
        .order_by("-last_message_at", "id")
        .values_list("patient_id", flat=True)[:1]
    )
    patients = Patient.objects.for_org(organization).filter(merged_into__isnull=True)
    found = list(patients.filter(id__in=list(talked)))
    if found:
        return found
    handle = short_video.normalised_handle(inbound.sender_name)
    if not handle:
        return []
    named = Q(custom_fields__shortVideoHandle__iexact=handle) | Q(custom_fields__shortVideoHandle__iexact=f"@{handle}")
    return list(patients.filter(named).order_by("-updated_at", "id")[: MAX_PATIENTS_PER_CONTACT + 1])


def _park_unmatched(organization, connection: ChannelConnection, inbound: InboundText) -> None:
    """A short-video user no patient of the practice stands for: a patient needs an e-mail or a mobile number, which
    the platform never gives, so no enquiry can be opened. The message is parked in the practice's ingest-review
    queue (reason sender_not_matched) instead; its receipt is released, so once a person records the handle on the
    patient (customFields.shortVideoHandle) replaying it into the connection delivers it."""
    ParkedCallback.objects.create(
        organization_id=organization.pk,
        kind=connection.kind,
        receiving_address=inbound.recipient,
        reason="sender_not_matched",
        items=[item_to_payload(inbound)],
    )
    ProviderReceipt.objects.for_org(organization).filter(
        connection=connection, digest=receipt_digest(inbound.provider_message_id)
    ).delete()
    logger.info("short-video message parked for review: no patient matches its sender")


def _enquiry(organization, connection: ChannelConnection, address: str) -> Patient:
    contact = {"email": address} if connection.kind == Kind.EMAIL else {"phone_mobile": address}
    data = {"first_name": "Unknown", "last_name": "", "status": PatientStatus.ENQUIRY, **contact}
    return patient_create(organization=organization, user=None, data=data)


def _store_message(organization, connection: ChannelConnection, inbound: InboundText, received_at) -> Message | None:
    # The sender's contact lock is held (inbound_process_many took it before any item).
    if connection.kind == Kind.SHORT_VIDEO:
        patients = _short_video_patients(organization, inbound)
        if not patients:
            _park_unmatched(organization, connection, inbound)
            return None
    else:
        patients = _contact_patients(organization, inbound.sender)
    patient = patients[0] if patients else _enquiry(organization, connection, inbound.sender)
    message = append_inbound(organization, connection, patient, inbound, received_at)
    _keywords(organization, connection, inbound, patients or [patient], message)
    return message


def append_inbound(
    organization, connection: ChannelConnection, patient, inbound: InboundText, now, message_id=None
) -> Message:
    """Store a patient's message on their conversation of the connection (opened, or reopened), with its files, the
    conversation and message events and the timeline entry. The caller holds the contact's lock. `message_id`: the
    id the message must have (one already given to its sender), else a new one."""
    conversation, created = (
        Conversation.objects.for_org(organization)
        .select_for_update()
        .get_or_create(
            organization=organization,
            patient=patient,
            connection=connection,
            defaults={
                "channel": connection.kind,
                "contact_address": inbound.sender,
                "provider_thread_id": inbound.thread,
                "last_message_at": now,
                "last_inbound_at": now,
            },
        )
    )
    reopened = not created and conversation.status != Conversation.State.OPEN
    if not created:
        conversation.status, conversation.snoozed_until = Conversation.State.OPEN, None
        # Never backwards: a retried or late item can arrive after a newer one was processed.
        conversation.last_message_at = max(conversation.last_message_at, now)
        conversation.last_inbound_at = max(filter(None, [conversation.last_inbound_at, now]))
        conversation.contact_address = inbound.sender
        conversation.provider_thread_id = inbound.thread or conversation.provider_thread_id
        conversation.save()
    message = Message.objects.for_org(organization).create(
        **({"id": message_id} if message_id else {}),
        organization=organization,
        conversation=conversation,
        direction=Message.Direction.INBOUND,
        channel=connection.kind,
        status=Message.State.RECEIVED,
        body=inbound.body,
        subject=inbound.subject[:998],
        provider_message_id=inbound.provider_message_id,
        occurred_at=now,
    )
    files = MessageAttachment.objects.for_org(organization).bulk_create(
        [
            MessageAttachment(
                organization=organization,
                message=message,
                position=position,
                content_type=media.get("contentType", "")[:100],
                provider_url=media.get("providerUrl", ""),
                provider_media_id=media.get("providerMediaId", ""),
            )
            for position, media in enumerate(inbound.media)
        ]
    )
    if files:
        transaction.on_commit(lambda: _request_copies([file.id for file in files]))
    subject = {"conversationId": str(conversation.id), "patientId": str(patient.id), "channel": connection.kind}
    if created or reopened:
        emit(
            organization=organization,
            type="conversation.created" if created else "conversation.updated",
            subject_type="conversation",
            subject_id=conversation.id,
            actor=Actor.system(),
            action=None if created else "reopened",
            data={**subject, "status": conversation.status},
        )
    emit(
        organization=organization,
        type="message.received",
        subject_type="message",
        subject_id=message.id,
        actor=Actor.system(),
        data={**subject, "direction": message.direction, "mediaCount": len(files)},
    )
    timeline_record(
        organization=organization,
        user=None,
        patient_id=patient.id,
        kind="message",
        data={**subject, "messageId": str(message.id), "direction": message.direction},
    )
    return message


def _keywords(organization, connection: ChannelConnection, inbound: InboundText, patients, message: Message) -> None:
    word = inbound.body.strip().upper().rstrip(".!")
    if word in STOP_WORDS:
        _stop(organization, connection, inbound.sender, patients, message)
    elif word in START_WORDS:
        _start(organization, connection, inbound.sender, patients, message)


def _stop(organization, connection, address: str, patients, message: Message) -> None:
    block, _ = (
        ContactBlock.objects.for_org(organization)
        .select_for_update()
        .get_or_create(
            organization=organization,
            channel=BLOCK_CHANNEL[connection.kind],
            address=address,
            defaults={"reason": "stop_keyword"},
        )
    )
    block.blocked, block.reason = True, "stop_keyword"
    if len(patients) > MAX_PATIENTS_PER_CONTACT:
        block.needs_review = True  # too many patients behind one contact: blocked, and a person decides
    else:
        for patient in patients:
            _consent(organization, connection, patient, MarketingConsent.State.WITHDRAWN, message)
    block.save()


def _start(organization, connection, address: str, patients, message: Message) -> None:
    block = (
        ContactBlock.objects.for_org(organization)
        .select_for_update()
        .filter(channel=BLOCK_CHANNEL[connection.kind], address=address)
        .first()
    )
    if block is None or not block.blocked or block.needs_review or connection.status != Status.ACTIVE:
        return  # nothing to lift, an overflow block (a person decides), or an inactive connection
    if len(patients) > MAX_PATIENTS_PER_CONTACT:  # more patients behind the contact since the STOP
        block.needs_review = True
        block.save(update_fields=["needs_review", "updated_at"])
        return
    block.blocked = False
    block.save(update_fields=["blocked", "updated_at"])
    for patient in patients:
        _consent(organization, connection, patient, MarketingConsent.State.GRANTED, message)


def _consent(organization, connection, patient, status: str, message: Message) -> None:
    if connection.kind not in CONSENT_CHANNEL:
        return  # a channel without marketing consent: the contact block alone stops it
    consent_record(
        organization=organization,
        user=None,
        patient=patient,
        channel=CONSENT_CHANNEL[connection.kind],
        status=status,
        source="inbound_keyword",
        evidence=f"{message.channel} keyword, message {message.id}",
    )


def _apply_status(organization, connection: ChannelConnection, status: StatusUpdate, received_at) -> None:
    """A delivery status of a message we sent on this connection: forward moves only, each emitting
    message.status_changed. A status for a message this service did not send (sent from the provider's console)
    changes nothing."""
    message = (
        Message.objects.for_org(organization)
        .select_for_update()
        .select_related("conversation")
        .filter(
            provider_message_id=status.provider_message_id,
            direction=Message.Direction.OUTBOUND,
            conversation__connection=connection,
        )
        .first()
    )
    recent = received_at > timezone.now() - timezone.timedelta(minutes=10)
    if message is None and recent and _send_in_flight(organization, connection):
        # Providers can report a status before the sender has committed the provider's id of its message: the
        # delivery is retried by the sweep (counted) rather than dropped. After ten minutes it is a status of a
        # message this service did not send (the provider's console): ignored like one.
        raise StatusBeforeSend()
    if message is None or not _moves_forward(message.status, status.status):
        return
    previous = message.status
    message.status, message.status_changed_at, message.error_code = status.status, received_at, status.error_code
    message.save(update_fields=["status", "status_changed_at", "error_code", "updated_at"])
    emit(
        organization=organization,
        type="message.status_changed",
        subject_type="message",
        subject_id=message.id,
        actor=Actor.system(),
        data={
            "conversationId": str(message.conversation_id),
            "patientId": str(message.conversation.patient_id),
            "channel": message.channel,
            "status": message.status,
            "previousStatus": previous,
            "errorCode": message.error_code or None,
        },
    )


class StatusBeforeSend(Exception):
    pass


def _send_in_flight(organization, connection: ChannelConnection) -> bool:
    """A message of this connection is in a sender's hands: leased (attempted, not held, due later)."""
    return (
        Message.objects.for_org(organization)
        .filter(status=Message.State.QUEUED, conversation__connection=connection, held_reason="", attempts__gt=0)
        .filter(next_attempt_at__gt=timezone.now())
        .exists()
    )


def _moves_forward(current: str, reported: str) -> bool:
    if current in FAILURES or current == reported:
        return False
    if reported in FAILURES:
        return STATUS_RANK.get(current, 0) < STATUS_RANK[Message.State.DELIVERED]
    return STATUS_RANK.get(reported, -1) > STATUS_RANK.get(current, -1)


def _suppress(organization, connection: ChannelConnection, suppression: Suppression, received_at) -> None:
    """A hard bounce or a complaint: the address is blocked for e-mail and the patients behind it (at most 25;
    more keeps it blocked for review) have e-mail consent withdrawn, with the event as evidence."""
    block, _ = (
        ContactBlock.objects.for_org(organization)
        .select_for_update()
        .get_or_create(
            organization=organization,
            channel=Kind.EMAIL,
            address=suppression.address,
            defaults={"reason": f"email_{suppression.reason}"},
        )
    )
    block.blocked, block.reason = True, f"email_{suppression.reason}"
    patients = _contact_patients(organization, suppression.address)
    if len(patients) > MAX_PATIENTS_PER_CONTACT:
        block.needs_review = True
    else:
        for patient in patients:
            consent_record(
                organization=organization,
                user=None,
                patient=patient,
                channel=MarketingConsent.Channel.EMAIL,
                status=MarketingConsent.State.WITHDRAWN,
                source=f"email_{suppression.reason}",
                evidence=f"e-mail provider {suppression.reason}, connection {connection.id}",
            )
    block.save()


HANDLERS = {"message": _store_message, "status": _apply_status, "suppression": _suppress}


def erase_inbound_of_patients(*, organization, patient_ids) -> None:
    """Erasure hook: what the patients sent that is not a message yet goes with them, in the erasure's transaction:
    items still waiting to be processed (which would otherwise re-create them as an enquiry) and parked items from
    their numbers and addresses (a parked callback left with nothing is deleted)."""
    patients = Patient.objects.for_org(organization).filter(id__in=list(patient_ids))
    addresses = set(
        Conversation.objects.for_org(organization)
        .filter(patient_id__in=list(patient_ids))
        .values_list("contact_address", flat=True)
    )
    for mobile, other, email in patients.values_list("phone_mobile", "phone_other", "email"):
        addresses |= {normalise_number(number) for number in (mobile, other) if number}
        addresses |= {email.lower()} if email else set()
    addresses.discard("")
    if not addresses:
        return
    InboundDelivery.objects.for_org(organization).filter(payload__sender__in=sorted(addresses)).delete()
    carrying = Q()
    for address in sorted(addresses):
        carrying |= Q(items__contains=[{"sender": address}])
    parked = ParkedCallback.objects.select_for_update().filter(carrying, organization=organization, state="parked")
    for row in parked.order_by("id"):
        kept = [item for item in row.items if item.get("sender") not in addresses]
        if len(kept) == len(row.items):
            continue
        if kept:
            row.items = kept
            row.save(update_fields=["items", "updated_at"])
        else:
            row.delete()


# --- the chat widget (apps.widget): a visitor's message, already authenticated by its visitor token -----------------


@transaction.atomic
def widget_message_received(
    *,
    organization,
    connection: ChannelConnection,
    patient,
    visitor_address: str,
    body: str,
    client_message_id: str,
    message_id=None,
    received_at=None,
) -> tuple[Message, bool]:
    """A widget visitor's message on their thread (the conversation of their patient on the widget's connection).
    Idempotent by the page's client message id: a retry answers the stored message, (message, False). A message
    acknowledged before it was stored keeps the id and time it was acknowledged with (message_id, received_at)."""
    _lock_contacts([(organization.pk, f"widget:{visitor_address}")])
    provider_id = f"widget:{client_message_id}" if client_message_id else ""
    if provider_id:
        stored = widget_message_stored(
            organization=organization, connection=connection, client_message_id=client_message_id
        )
        if stored is not None:
            return stored, False
    inbound = InboundText(provider_id, visitor_address, connection.address, body)
    now = received_at or timezone.now()
    return append_inbound(organization, connection, patient, inbound, now, message_id=message_id), True


def widget_message_stored(*, organization, connection: ChannelConnection, client_message_id: str) -> Message | None:
    """The widget message stored under this client message id (as widget_message_received was given it), if any."""
    stored = widget_messages_stored(
        organization=organization, connection=connection, client_message_ids=[client_message_id]
    )
    return stored.get(client_message_id)


def widget_messages_stored(
    *, organization, connection: ChannelConnection, client_message_ids: list[str]
) -> dict[str, Message]:
    """The widget messages stored under these client message ids, by client message id (one query)."""
    messages = Message.objects.for_org(organization).filter(
        provider_message_id__in=[f"widget:{client_id}" for client_id in client_message_ids],
        conversation__connection=connection,
    )
    return {message.provider_message_id.removeprefix("widget:"): message for message in messages}
