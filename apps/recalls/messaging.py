"""Messages to patients (recall reminders, waitlist offers) through the conversations pipeline.

They are care messages (purpose `service`): no marketing consent is needed, but the pipeline still refuses a
deceased patient, a contact that asked to stop (blocked) or a suppressed e-mail address, and a patient without an
address on the channel. The channel is the first the practice has connected and the patient has an address on, in
the order SMS, texting-enabled telephony number, e-mail (WhatsApp-type messaging is left out: outside the 24 hours
after a patient wrote it needs an approved template). Automatic messages wait out the practice's quiet hours: the
callers check `quiet_until` first."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from apps.conversations.public import (
    CONNECTION_UNAVAILABLE,
    NO_ADDRESS,
    Kind,
    MessagingSettings,
    OutboundMessage,
    Purpose,
    connections_of,
    patient_address,
    practice_region,
    queue_messages,
    quiet_hours_end,
)

PREFERRED_KINDS = (Kind.SMS, Kind.TELEPHONY_MESSAGING, Kind.EMAIL)


@dataclass(frozen=True)
class Note:
    """One message to one patient: `text` is the whole body; `subject` is used on e-mail."""

    reference: str
    patient: object  # a Patient with email and phone_mobile loaded
    subject: str
    text: str


@dataclass(frozen=True)
class Outcome:
    channel: str
    message_id: UUID | None
    skipped_reason: str | None


def quiet_until(organization, now: datetime) -> datetime | None:
    """The end of the practice's quiet hours when `now` is inside them (the conversations pipeline's own rule)."""
    rules = MessagingSettings.objects.for_org(organization).first() or MessagingSettings(organization=organization)
    return quiet_hours_end(rules, organization.timezone, now)


def send_care_messages(*, organization, notes: list[Note], source: str) -> dict[str, Outcome]:
    """Queue each note on the patient's channel; reference → what happened (queued with its message id, or skipped
    with the pipeline's reason). Runs in the caller's transaction (the messages commit or roll back with it)."""
    connections: dict[str, object] = {}
    for connection in connections_of(organization=organization).exclude(status="disconnected"):
        if connection.kind in PREFERRED_KINDS:
            connections.setdefault(connection.kind, connection)
    if not connections:
        return {note.reference: Outcome("", None, CONNECTION_UNAVAILABLE) for note in notes}
    outcomes: dict[str, Outcome] = {}
    groups: dict[object, list[Note]] = defaultdict(list)
    for note in notes:
        for kind in PREFERRED_KINDS:
            connection = connections.get(kind)
            if connection and patient_address(kind, note.patient, practice_region(connection, organization)):
                groups[connection].append(note)
                break
        else:
            outcomes[note.reference] = Outcome("", None, NO_ADDRESS)
    for connection, group in groups.items():
        email = connection.kind == Kind.EMAIL
        results = queue_messages(
            organization=organization,
            connection_id=connection.id,
            messages=[
                OutboundMessage(
                    patient_id=note.patient.id,
                    body=note.text,
                    subject=note.subject if email else "",
                    reference=note.reference,
                )
                for note in group
            ],
            purpose=Purpose.SERVICE,
            source=source,
        )
        for result in results:
            outcomes[result.reference] = Outcome(connection.kind, result.message_id, result.skipped_reason)
    return outcomes


def greeting(patient) -> str:
    first = (getattr(patient, "first_name", "") or "").strip()
    return f"Hi {first}, " if first else "Hello, "
