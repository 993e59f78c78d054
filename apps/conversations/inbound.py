"""Inbound messages: receiving a provider callback (claim the receipt, store the raw delivery, enqueue) and
processing it in Celery (match the sender to the practice's patients or open an enquiry, find or open the
conversation, store the message, STOP/START keywords, events). Message bodies never go into events or logs."""

import logging
import re
from dataclasses import dataclass

from django.db import connection as database
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.conversations.models import (
    ChannelConnection,
    ContactBlock,
    Conversation,
    InboundDelivery,
    Kind,
    Message,
    ProviderReceipt,
    Status,
)
from apps.conversations.providers import InboundText, TwilioSms, receipt_digest
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
}
ADAPTERS = {Kind.SMS: TwilioSms}


@dataclass(frozen=True)
class Received:
    delivery: InboundDelivery | None  # None: a duplicate, already received


@transaction.atomic
def inbound_receive(*, connection: ChannelConnection, inbound: InboundText, content_type: str, raw: bytes) -> Received:
    """Claim the message's receipt, then store the raw callback, in one transaction; the processing task is
    published after the commit (a sweep picks up what a lost publication left). A duplicate stores nothing."""
    _, claimed = ProviderReceipt.objects.for_org(connection.organization_id).get_or_create(
        organization_id=connection.organization_id,
        connection=connection,
        digest=receipt_digest(inbound.provider_message_id),
    )
    if not claimed:
        return Received(None)
    delivery = InboundDelivery.objects.for_org(connection.organization_id).create(
        organization_id=connection.organization_id, connection=connection, content_type=content_type[:120], body=raw
    )
    if connection.status == Status.PENDING:  # a verified callback proves the connection works
        ChannelConnection.objects.for_org(connection.organization_id).filter(
            id=connection.id, status=Status.PENDING
        ).update(status=Status.ACTIVE, updated_at=timezone.now())
    transaction.on_commit(lambda: _publish(delivery.id))
    return Received(delivery)


def _publish(delivery_id) -> None:
    from apps.conversations.tasks import process_delivery

    try:
        process_delivery.delay(str(delivery_id))
    except Exception:  # the broker being down must not fail an acknowledged callback: the sweep takes it
        logger.warning("inbound delivery not published; the sweep will process it", exc_info=True)


def inbound_process(delivery_id) -> Message | None:
    """Process one stored delivery, once: the row is locked (SKIP LOCKED, so a second worker moves on) and deleted
    when its message is stored (the raw bytes are not kept past processing). A delivery that cannot be processed is
    marked failed with the reason (no body)."""
    with transaction.atomic():
        delivery = (
            # Only the delivery's own row: FOR UPDATE of the joined connection would make every other worker skip
            # all deliveries of that connection while one is being processed.
            InboundDelivery.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("connection", "organization")
            .filter(id=delivery_id, state=InboundDelivery.State.RECEIVED)
            .first()
        )
        if delivery is None:
            return None
        adapter = ADAPTERS[delivery.connection.kind]
        try:
            inbound = adapter.inbound(adapter.form(bytes(delivery.body)))
        except ValueError as error:
            delivery.state, delivery.error = InboundDelivery.State.FAILED, str(error)[:200]
            delivery.attempts += 1
            delivery.save(update_fields=["state", "error", "attempts", "updated_at"])
            return None
        message = _store_message(delivery.organization, delivery.connection, inbound)
        delivery.delete()
        return message


def _contact_patients(organization, address: str) -> list[Patient]:
    """The practice's unmerged patients with this number (exactly, or without a 1-3 digit country code) or this
    e-mail address, most recently updated first; at most one more than a contact may stand for."""
    if "@" in address:
        condition = Q(email__iexact=address)
    else:
        digits = re.sub(r"\D", "", address)
        numbers = {digits} | {digits[n:] for n in (1, 2, 3) if len(digits) - n >= 9}
        condition = Q(mobile_digits__in=numbers) | Q(other_digits__in=numbers)
    patients = (
        Patient.objects.for_org(organization)
        .filter(merged_into__isnull=True)
        .annotate(mobile_digits=digits_of("phone_mobile"), other_digits=digits_of("phone_other"))
        .filter(condition)
        .order_by("-updated_at", "id")
    )
    return list(patients[: MAX_PATIENTS_PER_CONTACT + 1])


def _enquiry(organization, connection: ChannelConnection, address: str) -> Patient:
    contact = {"email": address} if connection.kind == Kind.EMAIL else {"phone_mobile": address}
    data = {"first_name": "Unknown", "last_name": "", "status": PatientStatus.ENQUIRY, **contact}
    return patient_create(organization=organization, user=None, data=data)


def _store_message(organization, connection: ChannelConnection, inbound: InboundText) -> Message:
    # One contact's messages are processed one at a time (a transaction-level advisory lock on practice and sender):
    # two workers must not both open an enquiry for the same new number.
    with database.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{organization.pk}:{inbound.sender}"])
    now = timezone.now()
    patients = _contact_patients(organization, inbound.sender)
    patient = patients[0] if patients else _enquiry(organization, connection, inbound.sender)
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
                "last_message_at": now,
                "last_inbound_at": now,
            },
        )
    )
    reopened = not created and conversation.status != Conversation.State.OPEN
    if not created:
        conversation.status, conversation.snoozed_until = Conversation.State.OPEN, None
        conversation.last_message_at = conversation.last_inbound_at = now
        conversation.contact_address = inbound.sender
        conversation.save()
    message = Message.objects.for_org(organization).create(
        organization=organization,
        conversation=conversation,
        direction=Message.Direction.INBOUND,
        channel=connection.kind,
        status=Message.State.RECEIVED,
        body=inbound.body,
        provider_message_id=inbound.provider_message_id,
        occurred_at=now,
        attachments=inbound.media,
    )
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
        data={**subject, "direction": message.direction, "mediaCount": len(message.attachments)},
    )
    timeline_record(
        organization=organization,
        user=None,
        patient_id=patient.id,
        kind="message",
        data={**subject, "messageId": str(message.id), "direction": message.direction},
    )
    _keywords(organization, connection, inbound, patients or [patient], message)
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
            organization=organization, channel=connection.kind, address=address, defaults={"reason": "stop_keyword"}
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
        .filter(channel=connection.kind, address=address)
        .first()
    )
    if block is None or not block.blocked or block.needs_review or connection.status != Status.ACTIVE:
        return  # nothing to lift, an overflow block (a person decides), or an inactive connection
    block.blocked = False
    block.save(update_fields=["blocked", "updated_at"])
    for patient in patients:
        _consent(organization, connection, patient, MarketingConsent.State.GRANTED, message)


def _consent(organization, connection, patient, status: str, message: Message) -> None:
    consent_record(
        organization=organization,
        user=None,
        patient=patient,
        channel=CONSENT_CHANNEL[connection.kind],
        status=status,
        source="inbound_keyword",
        evidence=f"{message.channel} keyword, message {message.id}",
    )
