"""Outbound messages: queued in the caller's transaction, sent by Celery workers through the channel's provider.

Queueing (`queue_messages`, one call for one reply or a campaign's batch of hundreds): in one transaction and a fixed
number of queries, each patient's conversation on the connection is found or opened, each message is stored
`queued`, and after the commit sending is requested in groups of SEND_TOGETHER. What can be refused up front is:
no usable address, a blocked or suppressed contact, a marketing message without the channel's consent, a WhatsApp
text more than 24 hours after the patient last wrote (a template is needed then).

Sending (`send_batch`): the messages are leased (SELECT … FOR UPDATE SKIP LOCKED, so two workers never take one),
every rule is rechecked just before the provider call (a STOP or a withdrawn consent since queueing wins), then the
provider is called (apps.conversations.senders) and the result recorded: `sent` with the provider's id (message.sent),
or `failed` with the reason as error_code (message.status_changed), or — for timeouts, 429 and 5xx — queued again
with exponential backoff, five attempts in all. Marketing messages inside the practice's quiet hours wait queued
(held_reason QUIET_HOURS) until they end. Delivery statuses then come from the provider callbacks (inbound.py).
A worker that dies mid-batch leaves its lease to lapse and the sweep to send again: delivery is at least once (the
e-mail provider's idempotency key makes e-mail exactly once)."""

import logging
import time
import uuid
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta

import phonenumbers
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection as database
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from apps.conversations.connecting import credentials_for_sending
from apps.conversations.inbound import BLOCK_CHANNEL, CONSENT_CHANNEL
from apps.conversations.models import (
    ChannelConnection,
    ContactBlock,
    Conversation,
    Health,
    Kind,
    Message,
    MessagingSettings,
    Purpose,
    SandboxDelivery,
    Status,
)
from apps.conversations.senders import Envelope, SendFailed, transport
from apps.conversations.services import connection_credentials, connection_record_health
from apps.core.errors import ValidationFailed
from apps.events.services import Actor, PendingEvent, emit_many
from apps.patients.public import MarketingConsent, Patient, timeline_record_many
from apps.patients.public import Status as PatientStatus

logger = logging.getLogger("apps.conversations")

SEND_TOGETHER = 100  # messages one worker task sends
MAX_SEND_ATTEMPTS = 5
RETRY_BASE_SECONDS = 30  # 30 s, 1, 2, 4 min between attempts (or the provider's Retry-After when longer)
LEASE_SECONDS = 600  # a taken message is this worker's until then: longer than a task may live (hard limit 300 s)
SEND_BATCH_SECONDS = 60  # a batch to a real provider stops calling after this; the rest is handed on at once
RULES_FRESH_SECONDS = 10  # the rules are read again when a batch has been calling the provider this long
MAX_RETRY_COUNTDOWN = 3000  # below the broker's visibility timeout (3,600 s): later retries wait for the sweep
SWEEP_GRACE_SECONDS = 60  # a queued message's own send task has this long before the sweep asks again
CARE_WINDOW = timedelta(hours=24)  # WhatsApp: free-form text only this long after the patient last wrote
REPLY_WINDOW = timedelta(hours=48)  # the short-video platform: replies only this long after the person last wrote
SENDING_STATUSES = (Status.PENDING, Status.ACTIVE, Status.FAILING)
# Longest body each channel takes (Twilio's and Telnyx's 1,600 characters, WhatsApp's 4,096; e-mail is generous).
BODY_LIMITS = {
    Kind.SMS: 1600,
    Kind.TELEPHONY_MESSAGING: 1600,
    Kind.MESSAGING_APP: 4096,
    Kind.EMAIL: 100_000,
    Kind.WIDGET: 4096,
    Kind.SHORT_VIDEO: 6000,
}
MAX_HTML = 500_000

# Why a message was not queued, or failed before any provider saw it.
NO_ADDRESS = "NO_ADDRESS"
CONTACT_BLOCKED = "CONTACT_BLOCKED"
ADDRESS_SUPPRESSED = "ADDRESS_SUPPRESSED"
OPTED_OUT = "OPTED_OUT"
NO_CONSENT = "NO_CONSENT"
PATIENT_NOT_FOUND = "PATIENT_NOT_FOUND"
PATIENT_INACTIVE = "PATIENT_INACTIVE"  # deceased (any message), or archived (marketing)
SEND_ERROR = "SEND_ERROR"  # an unexpected error building or sending this message (logged with its type)
CONNECTION_UNAVAILABLE = "CONNECTION_UNAVAILABLE"
OUTSIDE_CARE_WINDOW = "OUTSIDE_CARE_WINDOW"
OUTSIDE_REPLY_WINDOW = "OUTSIDE_REPLY_WINDOW"
QUIET_HOURS = "QUIET_HOURS"
RETRYING = "RETRYING"

OPT_OUT_FLAG = {
    MarketingConsent.Channel.SMS: "sms_opt_out",
    MarketingConsent.Channel.WHATSAPP: "whatsapp_opt_out",
    MarketingConsent.Channel.EMAIL: "email_opt_out",
}


@dataclass(frozen=True)
class OutboundMessage:
    patient_id: uuid.UUID
    body: str  # plain text as sent, already rendered
    subject: str = ""  # e-mail (required there)
    html: str = ""  # e-mail HTML part, already rendered with escaping
    unsubscribe_url: str = ""  # marketing e-mail: List-Unsubscribe + List-Unsubscribe-Post (RFC 8058)
    template: dict | None = None  # messaging_app: an approved provider template {"name", "language", "parameters"}
    reference: str = ""  # the caller's id, echoed in the result


@dataclass(frozen=True)
class QueueResult:
    reference: str
    message_id: uuid.UUID | None
    skipped_reason: str | None


# --- addresses and rules ------------------------------------------------------------------------------------------


def practice_region(connection: ChannelConnection, organization) -> str | None:
    """The country a national number the practice stored is in: its own number's, else the practice's country."""
    if connection.kind != Kind.EMAIL and connection.address.startswith("+"):
        try:
            region = phonenumbers.region_code_for_number(phonenumbers.parse(connection.address))
        except phonenumbers.NumberParseException:
            region = None
        if region and region != "ZZ":
            return region
    return (organization.country or "").upper() or None


def patient_address(kind: str, patient: Patient, region: str | None) -> str:
    """The patient's address on a channel: an E.164 mobile number or a lower-cased e-mail address; "" when none."""
    if kind == Kind.EMAIL:
        return (patient.email or "").strip().lower()
    if kind in (Kind.WIDGET, Kind.SHORT_VIDEO):
        return ""  # a widget visitor or a short-video user is reached only in reply (the conversation's address)
    raw = (patient.phone_mobile or "").strip()
    if not raw:
        return ""
    try:
        number = phonenumbers.parse(raw, None if raw.startswith("+") else region)
    except phonenumbers.NumberParseException:
        return ""
    if not phonenumbers.is_possible_number(number):
        return ""
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _blocks(organization_ids, pairs: set[tuple[str, str]]) -> dict[tuple, str]:
    """(organization id, block channel, address) → the block's reason, for the blocked contacts among `pairs`."""
    if not pairs:
        return {}
    rows = ContactBlock.unscoped_objects.filter(
        organization_id__in=organization_ids,
        blocked=True,
        channel__in={channel for channel, _ in pairs},
        address__in={address for _, address in pairs},
    ).values_list("organization_id", "channel", "address", "reason")
    return {(org, channel, address): reason for org, channel, address, reason in rows}


def _inactive(patient_ids: set) -> dict:
    """patient id → "deceased" or "archived" for those of `patient_ids` no message (deceased) or no marketing
    (archived) may reach."""
    rows = (
        Patient.unscoped_objects.filter(id__in=patient_ids)
        .filter(Q(status=PatientStatus.DECEASED) | Q(archived_at__isnull=False))
        .values_list("id", "status")
    )
    return {pid: "deceased" if status == PatientStatus.DECEASED else "archived" for pid, status in rows}


def _block_reason(reason: str) -> str:
    return ADDRESS_SUPPRESSED if reason.startswith("email_") else CONTACT_BLOCKED


def _marketing_refusals(patient_ids: set, channels: set[str]) -> dict[tuple, str]:
    """(patient id, consent channel) → OPTED_OUT or NO_CONSENT for those a marketing message may not reach: opted
    out of the channel, or whose latest consent record for it is not a grant (no record is no consent)."""
    if not patient_ids:
        return {}
    flags = {
        row["id"]: row
        for row in Patient.unscoped_objects.filter(id__in=patient_ids).values(
            "id", "sms_opt_out", "email_opt_out", "whatsapp_opt_out"
        )
    }
    latest = {
        (row["patient_id"], row["channel"]): row["status"]
        for row in MarketingConsent.unscoped_objects.filter(patient_id__in=patient_ids, channel__in=channels)
        .order_by("patient_id", "channel", "-recorded_at")
        .distinct("patient_id", "channel")
        .values("patient_id", "channel", "status")
    }
    refusals = {}
    for patient_id in patient_ids:
        for channel in channels:
            if flags.get(patient_id, {}).get(OPT_OUT_FLAG[channel], True):
                refusals[(patient_id, channel)] = OPTED_OUT
            elif latest.get((patient_id, channel)) != MarketingConsent.State.GRANTED:
                refusals[(patient_id, channel)] = NO_CONSENT
    return refusals


def validate_outbound(kind: str, message: OutboundMessage) -> None:
    """The per-channel rules a message must meet (raised as ValidationFailed naming the field)."""
    if not message.body.strip() and not message.template:
        raise ValidationFailed("body: must not be empty", details={"fields": {"body": ["must not be empty"]}})
    if len(message.body) > BODY_LIMITS[kind]:
        problem = f"is longer than {BODY_LIMITS[kind]} characters for {kind}"
        raise ValidationFailed(f"body: {problem}", details={"fields": {"body": [problem]}})
    if kind == Kind.EMAIL and not message.subject.strip():
        raise ValidationFailed("subject: required for e-mail", details={"fields": {"subject": ["required for e-mail"]}})
    if len(message.subject) > 998 or len(message.html) > MAX_HTML:
        name = "subject" if len(message.subject) > 998 else "html"
        raise ValidationFailed(f"{name}: too long", details={"fields": {name: ["too long"]}})
    if message.template and kind != Kind.MESSAGING_APP:
        raise ValidationFailed(
            "template: provider templates are for the messaging app only",
            details={"fields": {"template": ["provider templates are for the messaging app only"]}},
        )


# --- queueing -----------------------------------------------------------------------------------------------------


def queue_messages(
    *,
    organization,
    connection_id,
    messages: list[OutboundMessage],
    purpose: str,
    source: str,
    user=None,
    conversation: Conversation | None = None,
) -> list[QueueResult]:
    """Store `messages` queued on the connection (one transaction, a fixed number of queries however many) and
    request sending after the commit. `conversation` (a reply) sends to the address that conversation uses; otherwise
    each patient's current address. Returns one result per message, in order."""
    if purpose not in Purpose.values:
        raise ValueError(f"unknown purpose {purpose!r}")
    with transaction.atomic():
        connection = ChannelConnection.objects.for_org(organization).filter(id=connection_id).first()
        if connection is None or connection.status not in SENDING_STATUSES:
            return [QueueResult(m.reference, None, CONNECTION_UNAVAILABLE) for m in messages]
        kind = connection.kind
        for message in messages:
            validate_outbound(kind, message)
        patient_ids = {m.patient_id for m in messages}
        patients = {
            p.id: p
            for p in Patient.objects.for_org(organization)
            .filter(id__in=patient_ids, merged_into__isnull=True)
            .only("id", "email", "phone_mobile", "status", "archived_at")
        }
        conversations = {
            c.patient_id: c
            for c in Conversation.objects.for_org(organization).filter(connection=connection, patient_id__in=patients)
        }
        if conversation is not None:
            conversations[conversation.patient_id] = conversation
        region = practice_region(connection, organization)
        addresses = {}
        for patient_id, patient in patients.items():
            replying = conversation is not None and conversation.patient_id == patient_id
            addresses[patient_id] = conversation.contact_address if replying else patient_address(kind, patient, region)
        block_channel = BLOCK_CHANNEL[kind]
        blocks = _blocks([organization.pk], {(block_channel, a) for a in addresses.values() if a})
        consent_channel = CONSENT_CHANNEL.get(kind)
        marketing = purpose == Purpose.MARKETING
        refusals = _marketing_refusals(set(patients), {consent_channel}) if marketing and consent_channel else {}
        now = timezone.now()

        results: list[QueueResult] = []
        to_queue: list[tuple[OutboundMessage, str]] = []
        for message in messages:
            address = addresses.get(message.patient_id)
            reason = None
            patient = patients.get(message.patient_id)
            if patient is None:
                reason = PATIENT_NOT_FOUND
            elif patient.status == PatientStatus.DECEASED or (
                purpose == Purpose.MARKETING and patient.archived_at is not None
            ):
                reason = PATIENT_INACTIVE
            elif not address:
                reason = NO_ADDRESS
            elif (organization.pk, block_channel, address) in blocks:
                reason = _block_reason(blocks[(organization.pk, block_channel, address)])
            elif marketing and consent_channel is None:
                reason = NO_CONSENT  # a channel without marketing consent (the widget) carries no marketing
            elif (message.patient_id, consent_channel) in refusals:
                reason = refusals[(message.patient_id, consent_channel)]
            elif kind == Kind.MESSAGING_APP and not message.template:
                last = getattr(conversations.get(message.patient_id), "last_inbound_at", None)
                if last is None or last < now - CARE_WINDOW:
                    reason = OUTSIDE_CARE_WINDOW
            elif kind == Kind.SHORT_VIDEO:
                last = getattr(conversations.get(message.patient_id), "last_inbound_at", None)
                if last is None or last < now - REPLY_WINDOW:
                    reason = OUTSIDE_REPLY_WINDOW
            results.append(QueueResult(message.reference, None, reason))
            if reason is None:
                to_queue.append((message, address))
        if not to_queue:
            return results

        opened = _open_conversations(organization, connection, conversations, to_queue, now)
        rows = [
            Message(
                organization=organization,
                conversation=conversations[message.patient_id],
                direction=Message.Direction.OUTBOUND,
                channel=kind,
                status=Message.State.QUEUED,
                body=message.body,
                subject=message.subject,
                occurred_at=now,
                purpose=purpose,
                source=source,
                sent_by=user,
                outbound=_outbound_fields(message, address),
                next_attempt_at=now,
            )
            for message, address in to_queue
        ]
        Message.objects.bulk_create(rows)
        queued = iter(rows)
        results = [r if r.skipped_reason else QueueResult(r.reference, next(queued).id, None) for r in results]
        emit_many(
            organization=organization,
            actor=Actor.user(user) if user is not None else Actor.system(),
            events=[
                PendingEvent(
                    type="conversation.created",
                    subject_type="conversation",
                    subject_id=c.id,
                    data={
                        "conversationId": str(c.id),
                        "patientId": str(c.patient_id),
                        "channel": kind,
                        "status": c.status,
                    },
                )
                for c in opened
            ],
        )
        timeline_record_many(
            organization=organization,
            user=user,
            kind="message",
            entries=[
                (
                    row.conversation.patient_id,
                    {
                        "conversationId": str(row.conversation_id),
                        "messageId": str(row.id),
                        "direction": row.direction,
                        "channel": kind,
                    },
                )
                for row in rows
            ],
        )
        ids = [row.id for row in rows]
        transaction.on_commit(lambda: request_sending(ids))
    return results


def _outbound_fields(message: OutboundMessage, address: str) -> dict:
    fields = {"to": address}
    if message.html:
        fields["html"] = message.html
    if message.unsubscribe_url:
        fields["unsubscribeUrl"] = message.unsubscribe_url
    if message.template:
        fields["template"] = {
            "name": str(message.template["name"]),
            "language": str(message.template["language"]),
            "parameters": [str(value) for value in message.template.get("parameters", [])],
        }
    return fields


def _open_conversations(organization, connection, conversations: dict, to_queue, now) -> list[Conversation]:
    """Find or open each patient's conversation; existing ones move to now (never backwards). Returns the opened."""
    missing = {}
    for message, address in to_queue:
        if message.patient_id not in conversations and message.patient_id not in missing:
            missing[message.patient_id] = Conversation(
                organization=organization,
                patient_id=message.patient_id,
                connection=connection,
                channel=connection.kind,
                contact_address=address,
                last_message_at=now,
            )
    opened = []
    if missing:
        # A patient writing in at this moment may open the same conversation: theirs stands, ours is re-read.
        Conversation.objects.bulk_create(list(missing.values()), ignore_conflicts=True)
        found = Conversation.objects.for_org(organization).filter(connection=connection, patient_id__in=missing)
        for existing in found:
            if existing.id == missing[existing.patient_id].id:
                opened.append(existing)
            conversations[existing.patient_id] = existing
    earlier = [c.id for pid, c in conversations.items() if pid not in missing]
    if earlier:
        Conversation.objects.for_org(organization).filter(id__in=earlier).update(
            last_message_at=Greatest(F("last_message_at"), now), updated_at=now
        )
    return opened


def request_sending(message_ids: list) -> None:
    """After the commit: one task per SEND_TOGETHER messages. A broker outage leaves them to the sweep."""
    from apps.conversations.tasks import send_messages

    for start in range(0, len(message_ids), SEND_TOGETHER):
        group = [str(i) for i in message_ids[start : start + SEND_TOGETHER]]
        try:
            send_messages.delay(group)
        except Exception:
            logger.warning("sending of %s messages not requested (broker); left to the sweep", len(group))


# --- sending ------------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    message: Message
    provider_message_id: str = ""
    failure: str = ""  # final: the message fails with this code
    retry_at: datetime | None = None  # queued again until then
    held: str = ""  # waits (quiet hours) until retry_at, not counted as an attempt
    error: str = ""  # the last error of a retry
    request: object = None  # the sandbox's recorded request
    sandbox: bool = False
    credentials_refused: bool = False


def _lease(message_ids: list) -> tuple[list[Message], datetime]:
    now = timezone.now()
    lease = now + timedelta(seconds=LEASE_SECONDS)
    with transaction.atomic():
        messages = list(
            Message.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("conversation", "conversation__connection", "organization")
            .filter(
                id__in=message_ids,
                status=Message.State.QUEUED,
                direction=Message.Direction.OUTBOUND,
                next_attempt_at__lte=now,
            )
            .order_by("created_at", "id")
        )
        if messages:
            Message.unscoped_objects.filter(id__in=[m.id for m in messages]).update(
                next_attempt_at=lease, attempts=F("attempts") + 1, held_reason=""
            )
    for message in messages:
        message.attempts += 1
    return messages, lease


def _hand_on(messages: list[Message], lease: datetime) -> None:
    """Messages a batch did not get to (its time ran out): due again at once, the attempt not counted, and a send
    requested for them."""
    ids = [m.id for m in messages]
    if not ids:
        return
    Message.unscoped_objects.filter(id__in=ids, status=Message.State.QUEUED, next_attempt_at=lease).update(
        next_attempt_at=timezone.now(), attempts=F("attempts") - 1
    )
    request_sending(ids)


class _Rules:
    """Everything the sending rules need for a batch, read in a few queries."""

    def __init__(self, messages: list[Message]):
        organization_ids = {m.organization_id for m in messages}
        pairs = {(BLOCK_CHANNEL[m.channel], m.outbound.get("to", "")) for m in messages}
        self.blocks = _blocks(organization_ids, pairs)
        self.inactive = _inactive({m.conversation.patient_id for m in messages})
        marketing = [m for m in messages if m.purpose == Purpose.MARKETING]
        self.refusals = _marketing_refusals(
            {m.conversation.patient_id for m in marketing}, {CONSENT_CHANNEL[m.channel] for m in marketing}
        )
        self.quiet = {}
        if marketing:
            settings_rows = {
                s.organization_id: s
                for s in MessagingSettings.unscoped_objects.filter(organization_id__in=organization_ids)
            }
            for message in marketing:
                self.quiet[message.organization_id] = settings_rows.get(message.organization_id) or MessagingSettings()

    def refusal(self, message: Message) -> str:
        connection = message.conversation.connection
        if connection.status not in SENDING_STATUSES:
            return CONNECTION_UNAVAILABLE
        block = self.blocks.get((message.organization_id, BLOCK_CHANNEL[message.channel], message.outbound.get("to")))
        if block is not None:
            return _block_reason(block)
        inactive = self.inactive.get(message.conversation.patient_id)
        if inactive == "deceased" or (inactive and message.purpose == Purpose.MARKETING):
            return PATIENT_INACTIVE
        if message.purpose == Purpose.MARKETING:
            return self.refusals.get((message.conversation.patient_id, CONSENT_CHANNEL[message.channel]), "")
        return ""

    def quiet_until(self, message: Message, now: datetime) -> datetime | None:
        if message.purpose != Purpose.MARKETING:
            return None
        return quiet_hours_end(self.quiet[message.organization_id], message.organization.timezone, now)


def quiet_hours_end(rules: MessagingSettings, time_zone: str, now: datetime) -> datetime | None:
    """When the practice's quiet hours end, if `now` is inside them (they may run past midnight); else None."""
    start, end = rules.quiet_hours_start, rules.quiet_hours_end
    if not rules.quiet_hours_enabled or start == end:
        return None
    try:
        zone = zoneinfo.ZoneInfo(time_zone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = zoneinfo.ZoneInfo("UTC")
    local = now.astimezone(zone)
    clock = local.time()
    inside = start <= clock < end if start < end else (clock >= start or clock < end)
    if not inside:
        return None
    day = local.date() if clock < end else local.date() + timedelta(days=1)
    return datetime.combine(day, end, tzinfo=zone)


def _envelope(message: Message) -> Envelope:
    return _envelope_of(
        message.conversation.connection,
        message.organization,
        message_id=message.id,
        to=message.outbound.get("to", ""),
        body=message.body,
        subject=message.subject,
        outbound=message.outbound,
        thread_id=message.conversation.provider_thread_id,
    )


def _envelope_of(
    connection, organization, *, message_id, to: str, body: str, subject: str, outbound: dict, thread_id: str = ""
) -> Envelope:
    token = connection.routing_token
    callback = {
        Kind.SMS: f"{settings.SVC_BASE_URL}/webhooks/sms/{token}/status",
        Kind.TELEPHONY_MESSAGING: f"{settings.SVC_BASE_URL}/webhooks/telephony-messaging/{token}",
    }.get(connection.kind, "")
    return Envelope(
        message_id=message_id,
        kind=connection.kind,
        from_address=connection.address,
        to_address=to.lstrip("+") if connection.kind == Kind.MESSAGING_APP else to,
        body=body,
        subject=subject,
        html=outbound.get("html", ""),
        unsubscribe_url=outbound.get("unsubscribeUrl", ""),
        template=outbound.get("template"),
        sender_name=" ".join(organization.name.split())[:78],  # no line break can reach a header
        status_callback_url=callback,
        thread_id=thread_id,
    )


# --- test sends: a sample to a member's own address ---------------------------------------------------------------


def send_test_message(*, organization, connection_id, to_address: str, message: OutboundMessage) -> None:
    """A sample of a message for a member's own number or address (a campaign's test send): validated like any
    message, then sent after the commit by a worker through the connection's adapter and transport, exactly as a
    patient would get it. It is not a conversation's message (nothing in the inbox, no events) and no patient rule
    applies: the member asked for it. The sandbox records it like the rest."""
    connection = ChannelConnection.objects.for_org(organization).filter(id=connection_id).first()
    if connection is None or connection.status not in SENDING_STATUSES:
        from apps.conversations.errors import SendRefused

        raise SendRefused(CONNECTION_UNAVAILABLE)
    validate_outbound(connection.kind, message)
    payload = {
        "organization_id": str(organization.pk),
        "connection_id": str(connection.id),
        "to": to_address,
        "body": message.body,
        "subject": message.subject,
        "outbound": _outbound_fields(message, to_address),
    }
    from apps.conversations.tasks import send_test_message as task

    transaction.on_commit(lambda: task.delay(payload))


def deliver_test_message(payload: dict) -> str:
    """The worker's half of send_test_message: the provider's id of the sample. Raises SendFailed."""
    connection = (
        ChannelConnection.unscoped_objects.select_related("organization")
        .filter(id=payload["connection_id"], organization_id=payload["organization_id"])
        .first()
    )
    if connection is None or connection.status not in SENDING_STATUSES:
        raise SendFailed(CONNECTION_UNAVAILABLE)
    envelope = _envelope_of(
        connection,
        connection.organization,
        message_id=uuid.uuid4(),
        to=payload["to"],
        body=payload["body"],
        subject=payload["subject"],
        outbound=payload["outbound"],
    )
    sender = transport()
    try:
        provider_id, request = sender.send(envelope, connection_credentials(connection))
    finally:
        sender.close()
    if sender.sandbox:
        SandboxDelivery.objects.create(
            organization_id=connection.organization_id,
            message=None,
            provider=connection.kind,
            method=request.method,
            url=request.url[:500],
            request=request.recordable(),
        )
    return provider_id


def _backoff(attempts: int, retry_after: int | None) -> timedelta:
    return timedelta(seconds=max(RETRY_BASE_SECONDS * 2 ** max(attempts - 1, 0), retry_after or 0))


def send_batch(message_ids: list) -> int:
    """Send the queued, due messages among `message_ids` that no other worker holds. Returns how many were sent.

    To a real provider each result is committed as soon as the provider answers (its status callback may come within
    a second), the rules are read again every RULES_FRESH_SECONDS, and after SEND_BATCH_SECONDS (or the task's soft
    time limit) the messages not yet tried are handed on, so a slow provider never outlives the lease."""
    messages, lease = _lease(message_ids)
    if not messages:
        return 0
    rules, rules_read = _Rules(messages), time.monotonic()
    sender = transport()
    started = time.monotonic()
    credentials: dict = {}
    outcomes: list[Outcome] = []
    try:
        for position, message in enumerate(messages):
            if position and not sender.sandbox and time.monotonic() - started > SEND_BATCH_SECONDS:
                _hand_on(messages[position:], lease)
                break
            if time.monotonic() - rules_read > RULES_FRESH_SECONDS:
                rules, rules_read = _Rules(messages[position:]), time.monotonic()
            outcome = _attempt(message, rules, sender, credentials)
            outcomes.append(outcome)
            if not sender.sandbox:
                _record([outcome], lease)
        if sender.sandbox:
            _record(outcomes, lease)
    except SoftTimeLimitExceeded:
        _hand_on(messages[len(outcomes) :], lease)
        raise
    finally:
        sender.close()
    return sum(1 for outcome in outcomes if outcome.provider_message_id)


def _attempt(message: Message, rules: _Rules, sender, credentials: dict) -> Outcome:
    """One message's fate. Whatever goes wrong with this message alone (a practice name an e-mail header cannot
    carry, credentials that no longer decrypt) fails it with SEND_ERROR, never the batch."""
    try:
        return _try(message, rules, sender, credentials)
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:
        logger.warning("message %s not sent: %s", message.id, type(exc).__name__)
        return Outcome(message, failure=SEND_ERROR)


def _try(message: Message, rules: _Rules, sender, credentials: dict) -> Outcome:
    now = timezone.now()
    refusal = rules.refusal(message)
    if refusal:
        return Outcome(message, failure=refusal)
    quiet_end = rules.quiet_until(message, now)
    if quiet_end is not None:
        return Outcome(message, held=QUIET_HOURS, retry_at=quiet_end)
    connection = message.conversation.connection
    try:
        if connection.id not in credentials:  # a short-video token due is refreshed first (SendFailed if it fails)
            credentials[connection.id] = credentials_for_sending(connection, refresh=not sender.sandbox)
        provider_id, request = sender.send(_envelope(message), credentials[connection.id])
    except SendFailed as failed:
        if failed.retryable and message.attempts < MAX_SEND_ATTEMPTS:
            return Outcome(message, retry_at=now + _backoff(message.attempts, failed.retry_after), error=failed.code)
        return Outcome(message, failure=failed.code, credentials_refused=failed.credentials_refused)
    sandbox = sender.sandbox and message.channel != Kind.WIDGET  # the widget is delivered for real in both
    return Outcome(message, provider_message_id=provider_id, request=request, sandbox=sandbox)


def _record(outcomes: list[Outcome], lease: datetime) -> None:
    """Write the batch's results — only onto messages still queued under this batch's lease, so a worker that
    outlived its lease never overwrites what another did since — then their events, after the commit the retries."""
    now = timezone.now()
    events: dict = {}
    sandbox_rows = []
    retries = []
    refused = {}
    changes = []
    with transaction.atomic():
        for outcome in outcomes:
            message = outcome.message
            previous = message.status
            if outcome.provider_message_id:
                message.status, message.provider_message_id = Message.State.SENT, outcome.provider_message_id
                message.status_changed_at, message.next_attempt_at = now, None
                message.error_code, message.held_reason, message.sandbox = "", "", outcome.sandbox
                if outcome.sandbox:
                    sandbox_rows.append(_sandbox_row(message, outcome.request))
            elif outcome.failure:
                message.status, message.error_code = Message.State.FAILED, outcome.failure
                message.status_changed_at, message.next_attempt_at, message.held_reason = now, None, ""
                if outcome.credentials_refused:
                    refused[message.conversation.connection_id] = message.conversation.connection
            else:
                message.next_attempt_at = outcome.retry_at
                message.held_reason = outcome.held or RETRYING
                if outcome.held:
                    message.attempts -= 1  # waiting for the quiet hours to end is not an attempt
                else:
                    message.error_code = outcome.error
                    retries.append(message)
            changes.append((message, previous))
        written = _write_outcomes([o.message for o in outcomes], now, lease=lease)
        for message, previous in changes:
            if message.id in written and message.status != previous:
                events.setdefault(message.organization_id, (message.organization, []))[1].append(
                    _status_event(message, previous)
                )
        sandbox_rows = [row for row in sandbox_rows if row.message_id in written]
        retries = [message for message in retries if message.id in written]
        if sandbox_rows:
            SandboxDelivery.objects.bulk_create(sandbox_rows)
        for organization, pending in events.values():
            emit_many(organization=organization, actor=Actor.system("sender"), events=pending)
        for connection in refused.values():
            connection_record_health(
                connection=connection, health=Health.UNHEALTHY, reason="the provider refused the credentials"
            )
    for message in retries:
        _request_retry(message)


def _write_outcomes(messages: list[Message], now: datetime, *, lease: datetime | None = None) -> set:
    """One UPDATE … FROM unnest(…) for the batch (Django's bulk_update builds a CASE per column and row, which cost
    five times the rest of a sandbox batch), onto rows still queued (and under `lease` when given). Returns the ids
    written."""
    columns = {
        "status": ("text", [m.status for m in messages]),
        "provider_message_id": ("text", [m.provider_message_id for m in messages]),
        "status_changed_at": ("timestamptz", [m.status_changed_at for m in messages]),
        "next_attempt_at": ("timestamptz", [m.next_attempt_at for m in messages]),
        "error_code": ("text", [m.error_code for m in messages]),
        "held_reason": ("text", [m.held_reason for m in messages]),
        "sandbox": ("boolean", [m.sandbox for m in messages]),
        "attempts": ("integer", [m.attempts for m in messages]),
    }
    names = ", ".join(columns)
    casts = ", ".join(f"%s::{kind}[]" for kind, _ in columns.values())
    assignments = ", ".join(f"{name} = v.{name}" for name in columns)
    with database.cursor() as cursor:
        cursor.execute(
            # Table and column names are this module's constants; every value is a bound parameter.
            f"UPDATE {Message._meta.db_table} AS m SET {assignments}, updated_at = %s "  # noqa: S608
            f"FROM unnest(%s::uuid[], {casts}) AS v(id, {names}) "
            "WHERE m.id = v.id AND m.status = 'queued' AND (%s::timestamptz IS NULL OR m.next_attempt_at = %s) "
            "RETURNING m.id",
            [now, [m.id for m in messages], *(values for _, values in columns.values()), lease, lease],
        )
        return {row[0] for row in cursor.fetchall()}


def _status_event(message: Message, previous: str) -> PendingEvent:
    data = {
        "conversationId": str(message.conversation_id),
        "patientId": str(message.conversation.patient_id),
        "channel": message.channel,
        "purpose": message.purpose,
        "status": message.status,
    }
    if message.status == Message.State.SENT:
        return PendingEvent(
            type="message.sent",
            subject_type="message",
            subject_id=message.id,
            data={**data, "sandbox": message.sandbox},
        )
    return PendingEvent(
        type="message.status_changed",
        subject_type="message",
        subject_id=message.id,
        data={**data, "previousStatus": previous, "errorCode": message.error_code or None},
    )


def _sandbox_row(message: Message, request) -> SandboxDelivery:
    return SandboxDelivery(
        organization_id=message.organization_id,
        message=message,
        provider=message.conversation.connection.kind,
        method=request.method,
        url=request.url[:500],
        request=request.recordable(),
    )


def _request_retry(message: Message) -> None:
    from apps.conversations.tasks import send_messages

    delay = max(1, int((message.next_attempt_at - timezone.now()).total_seconds()) + 1)
    if delay > MAX_RETRY_COUNTDOWN:
        return  # past the broker's visibility timeout: the sweep sends it when it is due
    try:
        send_messages.apply_async(([str(message.id)],), countdown=delay)
    except Exception:
        logger.warning("retry of message %s not scheduled (broker); left to the sweep", message.id)


def withdraw_queued(*, organization, message_ids, reason: str) -> int:
    """Fail the messages among `message_ids` that are still queued and not in a sender's hands (waiting for their
    first send, a retry or the end of quiet hours) with `reason` as their error code, each emitting
    message.status_changed: a cancelled campaign's messages never go. A message a worker holds right now may still
    be sent. Returns how many were withdrawn."""
    now = timezone.now()
    with transaction.atomic():
        messages = list(
            Message.objects.for_org(organization)
            .select_for_update(skip_locked=True, of=("self",))
            .select_related("conversation")
            .filter(id__in=message_ids, status=Message.State.QUEUED)
            .exclude(attempts__gt=0, held_reason="", next_attempt_at__gt=now)  # leased: being sent
        )
        for message in messages:
            message.status, message.error_code, message.status_changed_at = Message.State.FAILED, reason[:32], now
            message.next_attempt_at, message.held_reason = None, ""
        written = _write_outcomes(messages, now) if messages else set()
        if written:
            emit_many(
                organization=organization,
                actor=Actor.system("sender"),
                events=[_status_event(m, Message.State.QUEUED) for m in messages if m.id in written],
            )
    return len(written)


def due_messages(limit: int) -> list:
    """Queued messages whose time has come and that no worker holds: retries, the end of quiet hours, sends whose
    request was lost with the broker, leases of dead workers."""
    now = timezone.now()
    return list(
        Message.unscoped_objects.filter(status=Message.State.QUEUED, next_attempt_at__lte=now)
        .filter(direction=Message.Direction.OUTBOUND)
        # A fresh message's own send task is probably still in the queue: asked for again only after a grace.
        .filter(
            Q(attempts__gt=0)
            | Q(held_reason=QUIET_HOURS)
            | Q(created_at__lt=now - timedelta(seconds=SWEEP_GRACE_SECONDS))
        )
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:limit]
    )


def sweep_due(limit: int = 5000) -> int:
    ids = due_messages(limit)
    request_sending(ids)
    return len(ids)
