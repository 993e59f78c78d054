"""Writes of recalls: recall types, setting, booking, cancelling and completing recalls, and the reminder sweep.

Statuses: due → booked (an appointment linked) → completed, or cancelled. A booked recall whose appointment is
cancelled or missed goes back to due. When an appointment completes, the patient's open recalls of that appointment
type (or linked to it) complete and the next is set at the old due date plus the type's interval (or, when that is
not after the visit, the visit's date plus the interval).

Reminders: each recall type has offsets in days relative to the due date. A due recall carries `next_reminder_at`
(the next offset's moment: 09:00 practice time on that day); the sweep takes due rows in batches (SELECT … FOR UPDATE
SKIP LOCKED, so concurrent sweeps never take one recall twice), sends the latest offset that has come and records
earlier ones not yet attempted as skipped (SUPERSEDED): one message, not a burst. Every attempt is a RecallReminder
row (sent with its message id, or skipped with the pipeline's reason), unique per recall, due date and offset.
Practices inside their quiet hours are left for a later sweep."""

import calendar
import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.appointments.public import ACTIVE_STATUSES, Appointment, AppointmentStatus
from apps.core.errors import NotFound, ValidationFailed
from apps.patients.public import Patient, PatientMerged
from apps.recalls import messaging
from apps.recalls.errors import RecallTransitionNotAllowed, RecallTypeNameTaken
from apps.recalls.models import (
    OPEN_RECALL_STATUSES,
    Recall,
    RecallReminder,
    RecallStatus,
    RecallType,
    ReminderOutcome,
)

REMINDER_HOUR = time(9, 0)  # reminders go from 09:00 practice time on their day
SWEEP_BATCH = 200  # recalls one sweep transaction takes
SWEEP_MAX_BATCHES = 25  # a sweep stops after this many batches; the next beat goes on
SUPERSEDED = "SUPERSEDED"  # an earlier offset not sent because a later one had come too
RECALL_SOURCE = "recall"  # Message.source of reminders

# Seeded on a practice's first read of its recall types: (name, months, appointment type, reminder offsets).
SEED_TYPES = (
    ("Exam", 6, "review", [-14, 0, 14]),
    ("Hygiene", 6, "hygiene", [-14, 0, 14]),
)


def practice_zone(organization) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(getattr(organization, "timezone", None) or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def practice_today(organization, now: datetime | None = None) -> date:
    return (now or timezone.now()).astimezone(practice_zone(organization)).date()


def reminder_moment(organization, due_date: date, offset: int) -> datetime:
    return datetime.combine(due_date + timedelta(days=offset), REMINDER_HOUR, tzinfo=practice_zone(organization))


def _first_reminder_at(organization, recall_type: RecallType, due_date: date) -> datetime | None:
    offsets = recall_type.reminder_offsets
    return reminder_moment(organization, due_date, min(offsets)) if offsets else None


# --- recall types -----------------------------------------------------------------------------------------------------


def recall_types_seed(*, organization) -> None:
    """The two usual types, once: only while the practice has none (renamed or archived ones are kept)."""
    if RecallType.objects.for_org(organization).exists():
        return
    RecallType.objects.bulk_create(
        [
            RecallType(
                organization=organization,
                name=name,
                interval_months=months,
                appointment_type=kind,
                reminder_offsets=offsets,
            )
            for name, months, kind, offsets in SEED_TYPES
        ],
        ignore_conflicts=True,  # two first reads at once: one set of rows
    )


def _save_type(recall_type: RecallType, **kwargs) -> None:
    try:
        with transaction.atomic():
            recall_type.save(**kwargs)
    except IntegrityError as exc:
        if "recalls_type_name_unique" in str(exc):
            raise RecallTypeNameTaken(details={"name": recall_type.name}) from None
        raise


@transaction.atomic
def recall_type_create(*, organization, data: dict[str, Any]) -> RecallType:
    recall_type = RecallType(organization=organization, **data)
    recall_type.reminder_offsets = sorted(set(recall_type.reminder_offsets))
    _save_type(recall_type, force_insert=True)
    return recall_type


@transaction.atomic
def recall_type_update(*, organization, recall_type_id, data: dict[str, Any]) -> RecallType:
    """Change a type. New reminder offsets apply to its due recalls from the next sweep (offsets already attempted
    for a due date are never sent again)."""
    recall_type = RecallType.objects.for_org(organization).select_for_update().filter(id=recall_type_id).first()
    if recall_type is None:
        raise NotFound("No such recall type.")
    archived = data.pop("archived", None)
    if archived is not None:
        recall_type.archived_at = (recall_type.archived_at or timezone.now()) if archived else None
    for key, value in data.items():
        setattr(recall_type, key, sorted(set(value)) if key == "reminder_offsets" else value)
    _save_type(recall_type)
    if "reminder_offsets" in data:
        due = Recall.objects.for_org(organization).filter(recall_type=recall_type, status=RecallStatus.DUE)
        due.update(next_reminder_at=timezone.now() if recall_type.reminder_offsets else None)
    return recall_type


# --- recalls ----------------------------------------------------------------------------------------------------------


def _locked_recall(*, organization, recall_id) -> Recall:
    recall = (
        Recall.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("recall_type")
        .filter(id=recall_id)
        .first()
    )
    if recall is None:
        raise NotFound("No such recall.")
    return recall


@dataclass(frozen=True)
class SetResult:
    recall: Recall
    created: bool


@transaction.atomic
def recall_set(
    *, organization, user, patient: Patient, recall_type: RecallType, due_date: date, practitioner=None
) -> SetResult:
    """Set when the patient is due for this type: the open recall of the type moves to the new date (and keeps its
    status), or a new due one is made."""
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    if recall_type.archived_at is not None:
        raise ValidationFailed.for_field("recallTypeId", "is archived")
    for _ in range(2):
        recall = (
            Recall.objects.for_org(organization)
            .select_for_update(of=("self",))
            .filter(patient=patient, recall_type=recall_type, status__in=OPEN_RECALL_STATUSES)
            .first()
        )
        if recall is not None:
            recall.due_date = due_date
            if practitioner is not None:
                recall.practitioner = practitioner
            if recall.status == RecallStatus.DUE:
                recall.next_reminder_at = _first_reminder_at(organization, recall_type, due_date)
            recall.save()
            return SetResult(recall, False)
        recall = Recall(
            organization=organization,
            patient=patient,
            recall_type=recall_type,
            practitioner=practitioner,
            due_date=due_date,
            next_reminder_at=_first_reminder_at(organization, recall_type, due_date),
            created_by=user,
        )
        try:
            with transaction.atomic():
                recall.save(force_insert=True)
            return SetResult(recall, True)
        except IntegrityError as exc:
            if "recalls_one_open_per_type" not in str(exc):
                raise
            # Set at the same moment by someone else: update theirs on the second turn.
    raise RuntimeError("unreachable: the open recall vanished between two reads")


@transaction.atomic
def recall_book(*, organization, user, recall_id, appointment) -> Recall:
    """Link the appointment that books this recall: due → booked (reminders stop)."""
    recall = _locked_recall(organization=organization, recall_id=recall_id)
    if recall.status not in OPEN_RECALL_STATUSES:
        raise RecallTransitionNotAllowed(status=recall.status, target=RecallStatus.BOOKED)
    if appointment.patient_id != recall.patient_id:
        raise ValidationFailed.for_field("appointmentId", "is an appointment of another patient")
    if appointment.status not in ACTIVE_STATUSES:
        raise ValidationFailed.for_field("appointmentId", f"is {appointment.status}")
    recall.status = RecallStatus.BOOKED
    recall.appointment = appointment
    recall.next_reminder_at = None
    recall.save()
    return recall


@transaction.atomic
def recall_cancel(*, organization, user, recall_id) -> Recall:
    """Cancel a due or booked recall (no more reminders). Repeating is harmless; a completed one cannot be."""
    recall = _locked_recall(organization=organization, recall_id=recall_id)
    if recall.status == RecallStatus.CANCELLED:
        return recall
    if recall.status == RecallStatus.COMPLETED:
        raise RecallTransitionNotAllowed(status=recall.status, target=RecallStatus.CANCELLED)
    recall.status = RecallStatus.CANCELLED
    recall.cancelled_at = timezone.now()
    recall.next_reminder_at = None
    recall.save()
    return recall


def add_months(day: date, months: int) -> date:
    """The same day `months` later (the month's last day when it is shorter: 31 Aug + 6 months is 28/29 Feb)."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def next_due_date(recall: Recall, visit_date: date) -> date:
    months = recall.recall_type.interval_months
    following = add_months(recall.due_date, months)
    return following if following > visit_date else add_months(visit_date, months)


@transaction.atomic
def recalls_complete_for_appointment(*, organization, appointment_id) -> list[Recall]:
    """A completed appointment completes the patient's open recalls linked to it or of its appointment type, and sets
    the next of each. Safe to run twice: a second run finds them completed already (and the new ones were made by
    this appointment)."""
    appointment = (
        Appointment.objects.for_org(organization)
        .filter(id=appointment_id, status=AppointmentStatus.COMPLETED)
        .only("id", "patient_id", "practitioner_id", "appointment_type", "status_changed_at", "starts_at")
        .first()
    )
    if appointment is None:
        return []
    made_by_it = Q(previous__appointment_id=appointment.id)
    recalls = list(
        Recall.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("recall_type")
        .filter(patient_id=appointment.patient_id, status__in=OPEN_RECALL_STATUSES)
        .filter(Q(appointment_id=appointment.id) | Q(recall_type__appointment_type=appointment.appointment_type))
        .exclude(made_by_it)
        .order_by("id")
    )
    visited = (appointment.status_changed_at or timezone.now()).astimezone(practice_zone(organization)).date()
    made = []
    for recall in recalls:
        recall.status = RecallStatus.COMPLETED
        recall.completed_at = timezone.now()
        recall.appointment_id = appointment.id
        recall.next_reminder_at = None
        recall.save()
        due = next_due_date(recall, visited)
        made.append(
            Recall.objects.create(
                organization=organization,
                patient_id=recall.patient_id,
                recall_type=recall.recall_type,
                practitioner_id=recall.practitioner_id or appointment.practitioner_id,
                due_date=due,
                next_reminder_at=_first_reminder_at(organization, recall.recall_type, due),
                previous=recall,
            )
        )
    return made


@transaction.atomic
def recalls_reopen_for_appointment(*, organization, appointment_id) -> int:
    """The appointment that booked recalls was cancelled or missed: they are due again (reminders from now)."""
    recalls = list(
        Recall.objects.for_org(organization)
        .select_for_update(of=("self",))
        .filter(appointment_id=appointment_id, status=RecallStatus.BOOKED)
    )
    for recall in recalls:
        recall.status = RecallStatus.DUE
        recall.appointment = None
        recall.next_reminder_at = timezone.now()
        recall.save()
    return len(recalls)


# --- reminders --------------------------------------------------------------------------------------------------------


def _reminder_text(organization, recall: Recall, offset: int) -> tuple[str, str]:
    name = recall.recall_type.name.lower()
    practice = organization.name
    when = recall.due_date.strftime("%d %b %Y")
    if offset < 0:
        line = f"your {name} at {practice} is due on {when}."
    elif offset == 0:
        line = f"your {name} at {practice} is due today."
    else:
        line = f"your {name} at {practice} was due on {when}."
    body = f"{messaging.greeting(recall.patient)}{line} Please call us or reply to book a time."
    return f"Your {name} is due", body


@dataclass
class SweepReport:
    sent: int = 0
    skipped: int = 0
    deferred: int = 0


def _plan(organization, recall: Recall, attempted: set[int], now: datetime) -> tuple[list[int], datetime | None]:
    """The offsets that have come and were not attempted for this due date (oldest first), and the next moment."""
    come, later = [], []
    for offset in recall.recall_type.reminder_offsets:
        moment = reminder_moment(organization, recall.due_date, offset)
        (come if moment <= now else later).append((moment, offset))
    pending = [offset for _, offset in sorted(come) if offset not in attempted]
    return pending, (min(later)[0] if later else None)


def _sweep_organization(organization, recalls: list[Recall], now: datetime, report: SweepReport) -> None:
    quiet = messaging.quiet_until(organization, now)
    if quiet is not None:
        Recall.objects.for_org(organization).filter(id__in=[r.id for r in recalls]).update(
            next_reminder_at=quiet, updated_at=now
        )
        report.deferred += len(recalls)
        return
    attempted: dict = {}
    for recall_id, due, offset in (
        RecallReminder.objects.for_org(organization)
        .filter(recall_id__in=[r.id for r in recalls])
        .values_list("recall_id", "due_date", "offset_days")
    ):
        attempted.setdefault((recall_id, due), set()).add(offset)
    patients = {
        p.id: p
        for p in Patient.objects.for_org(organization)
        .filter(id__in={r.patient_id for r in recalls})
        .only("id", "first_name", "email", "phone_mobile")
    }
    rows: list[RecallReminder] = []
    notes: list[tuple[Recall, int, messaging.Note]] = []
    for recall in recalls:
        patient = patients.get(recall.patient_id)
        if patient is not None:
            recall.patient = patient  # the loaded columns only (name and addresses)
        pending, recall.next_reminder_at = _plan(
            organization, recall, attempted.get((recall.id, recall.due_date), set()), now
        )
        for offset in pending[:-1]:
            rows.append(_reminder(recall, offset, ReminderOutcome.SKIPPED, SUPERSEDED))
        if pending and patient is not None:
            subject, text = _reminder_text(organization, recall, pending[-1])
            notes.append((recall, pending[-1], messaging.Note(str(recall.id), recall.patient, subject, text)))
    outcomes = messaging.send_care_messages(
        organization=organization, notes=[note for _, _, note in notes], source=RECALL_SOURCE
    )
    for recall, offset, note in notes:
        outcome = outcomes[note.reference]
        if outcome.message_id is not None:
            rows.append(_reminder(recall, offset, ReminderOutcome.SENT, "", outcome))
        else:
            rows.append(_reminder(recall, offset, ReminderOutcome.SKIPPED, outcome.skipped_reason or "", outcome))
    RecallReminder.objects.bulk_create(rows)  # a second attempt at one offset breaks the unique constraint
    report.sent += sum(row.outcome == ReminderOutcome.SENT for row in rows)
    report.skipped += sum(row.outcome == ReminderOutcome.SKIPPED for row in rows)
    for recall in recalls:
        recall.updated_at = now
    Recall.unscoped_objects.bulk_update(recalls, ["next_reminder_at", "updated_at"])


def _reminder(recall: Recall, offset: int, outcome: str, reason: str, sent=None) -> RecallReminder:
    return RecallReminder(
        organization_id=recall.organization_id,
        recall=recall,
        due_date=recall.due_date,
        offset_days=offset,
        outcome=outcome,
        skipped_reason=reason,
        channel=sent.channel if sent else "",
        message_id=sent.message_id if sent else None,
    )


def reminders_sweep(*, now: datetime | None = None) -> SweepReport:
    """Send the reminders whose moment has come, in batches of SWEEP_BATCH recalls per transaction."""
    report = SweepReport()
    for _ in range(SWEEP_MAX_BATCHES):
        current = now or timezone.now()
        with transaction.atomic():
            recalls = list(
                Recall.objects.unscoped()
                .select_for_update(of=("self",), skip_locked=True)
                .select_related("recall_type", "organization")
                .filter(status=RecallStatus.DUE, next_reminder_at__lte=current)
                .order_by("next_reminder_at")[:SWEEP_BATCH]
            )
            by_organization: dict = {}
            for recall in recalls:
                by_organization.setdefault(recall.organization_id, []).append(recall)
            for group in by_organization.values():
                _sweep_organization(group[0].organization, group, current, report)
        if len(recalls) < SWEEP_BATCH:
            break
    return report
