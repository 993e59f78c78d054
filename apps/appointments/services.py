"""Writes of the appointments area. Each runs in one transaction, records its event in the outbox and a line on the
patient's timeline. Events carry ids, status and times, never the notes.

No double booking: an appointment that holds time (booked, confirmed, arrived, completed) may not overlap another
of the same practitioner. The database's exclusion constraint decides, so two concurrent bookings of one slot
cannot both commit; the loser gets 409 APPOINTMENT_CONFLICT naming the appointment it clashes with.
"""

import itertools
import zoneinfo
from datetime import datetime
from functools import partial
from typing import Any

from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from apps.appointments import selectors
from apps.appointments.errors import AppointmentClosed, AppointmentConflict, AppointmentTransitionNotAllowed
from apps.appointments.hooks import FreedSlot, completed_after_commit, slot_freed_after_commit
from apps.appointments.hooks import erase_appointments_of_patients as appointments_erase_for_patients  # noqa: F401
from apps.appointments.hooks import repoint_appointments_to_survivor as appointments_repoint_to_survivor  # noqa: F401
from apps.appointments.models import ACTIVE_STATUSES, MAX_LENGTH, Appointment, AppointmentStatus, WorkingHours
from apps.core.errors import NotFound, ValidationFailed
from apps.core.writes import assign_fields
from apps.events.services import Actor, emit
from apps.patients.public import PatientMerged, timeline_record

NO_DOUBLE_BOOKING = "appointments_no_double_booking"
DEADLOCK_DETECTED = "40P01"  # SQLSTATE of a transaction PostgreSQL aborted to break a deadlock
SAVE_ATTEMPTS = 3

# Fields a create or update may set (validated data of the API serializers, snake_case; relations as records).
DETAIL_FIELDS = ("practitioner", "location", "treatment", "journey", "appointment_type", "notes")
# Set the given detail fields; the camelCase names of those whose value changed.
_assign = partial(
    assign_fields,
    fields=DETAIL_FIELDS,
    relations={key: key for key in ("practitioner", "location", "treatment", "journey")},
    blank_when_none=("notes",),
)

# status → the statuses POST /appointments/{id}/status may move it to (cancelling has its own route).
STATUS_MOVES: dict[str, tuple[str, ...]] = {
    AppointmentStatus.BOOKED: (AppointmentStatus.CONFIRMED, AppointmentStatus.ARRIVED, AppointmentStatus.NO_SHOW),
    AppointmentStatus.CONFIRMED: (AppointmentStatus.BOOKED, AppointmentStatus.ARRIVED, AppointmentStatus.NO_SHOW),
    AppointmentStatus.ARRIVED: (AppointmentStatus.COMPLETED, AppointmentStatus.CONFIRMED),
    AppointmentStatus.COMPLETED: (),
    AppointmentStatus.NO_SHOW: (AppointmentStatus.BOOKED,),  # marked by mistake: back in the diary if still free
    AppointmentStatus.CANCELLED: (),
}


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system()


def _event_data(appointment: Appointment) -> dict[str, Any]:
    return {
        "status": appointment.status,
        "patientId": str(appointment.patient_id),
        "practitionerId": str(appointment.practitioner_id),
        "locationId": str(appointment.location_id) if appointment.location_id else None,
        "treatmentId": str(appointment.treatment_id) if appointment.treatment_id else None,
        "startsAt": appointment.starts_at.isoformat(),
        "endsAt": appointment.ends_at.isoformat(),
    }


def _record(*, organization, user, appointment: Appointment, type: str, action: str, kind: str, **extra) -> None:
    """The outbox event and the patient's timeline line of one change."""
    data = _event_data(appointment) | extra.pop("data", {})
    emit(
        organization=organization,
        type=type,
        subject_type="appointment",
        subject_id=appointment.id,
        actor=_actor(user),
        data=data,
        action=action,
        changed_fields=extra.pop("changed_fields", None),
    )
    timeline_record(
        organization=organization,
        user=user,
        patient_id=appointment.patient_id,
        kind=kind,
        data={"appointmentId": str(appointment.id), **data},
    )


def _slot_freed(appointment: Appointment, *, reason: str, **previous) -> None:
    """Tell the slot-freed hooks (after the commit) that this appointment's time (or its previous one) is free."""
    slot = {
        "organization_id": appointment.organization_id,
        "appointment_id": appointment.id,
        "patient_id": appointment.patient_id,
        "practitioner_id": appointment.practitioner_id,
        "location_id": appointment.location_id,
        "appointment_type": appointment.appointment_type,
        "starts_at": appointment.starts_at,
        "ends_at": appointment.ends_at,
    }
    slot_freed_after_commit(FreedSlot(**(slot | previous), reason=reason))


def _check_times(starts_at: datetime, ends_at: datetime) -> None:
    if ends_at <= starts_at:
        raise ValidationFailed.for_field("endsAt", "must be after startsAt")
    if ends_at - starts_at > MAX_LENGTH:
        raise ValidationFailed.for_field(
            "endsAt", f"an appointment lasts at most {MAX_LENGTH.total_seconds() / 3600:g} hours"
        )


def _check_links(appointment: Appointment) -> None:
    if appointment.patient.merged_into_id is not None:
        raise PatientMerged(appointment.patient.merged_into_id)
    if appointment.journey_id is not None and appointment.journey.patient_id != appointment.patient_id:
        raise ValidationFailed.for_field("journeyId", "belongs to another patient")


def _is_deadlock(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == DEADLOCK_DETECTED


def _save_without_clash(*, organization, appointment: Appointment, **save_kwargs) -> None:
    """Save inside a savepoint; a clash with another appointment of the practitioner becomes 409 naming it.

    Two transactions inserting overlapping rows at the same instant can each find the other's uncommitted row and
    wait for it; PostgreSQL breaks that tie by aborting one with "deadlock detected". The loser saves again: by
    then it waits for the winner and meets the exclusion constraint, so it answers 409 rather than 503."""
    for attempt in itertools.count(1):
        try:
            with transaction.atomic():
                appointment.save(**save_kwargs)
            return
        except OperationalError as exc:
            if not _is_deadlock(exc) or attempt >= SAVE_ATTEMPTS:
                raise
        except IntegrityError as exc:
            if NO_DOUBLE_BOOKING not in str(exc):
                raise
            clash = selectors.first_clash(
                organization=organization,
                practitioner_id=appointment.practitioner_id,
                starts_at=appointment.starts_at,
                ends_at=appointment.ends_at,
                exclude_id=appointment.id,
            )
            raise AppointmentConflict(clash.id if clash else None) from None


@transaction.atomic
def appointment_create(*, organization, user, data: dict[str, Any]) -> Appointment:
    _check_times(data["starts_at"], data["ends_at"])
    appointment = Appointment(
        organization=organization,
        patient=data["patient"],
        starts_at=data["starts_at"],
        ends_at=data["ends_at"],
        created_by=user,
        status_changed_at=timezone.now(),
    )
    _assign(appointment, data)
    if appointment.treatment_id is None and appointment.journey_id is not None:
        appointment.treatment_id = appointment.journey.treatment_id
    _check_links(appointment)
    _save_without_clash(organization=organization, appointment=appointment, force_insert=True)
    _record(
        organization=organization,
        user=user,
        appointment=appointment,
        type="appointment.created",
        action="created",
        kind="appointment_booked",
    )
    return appointment


def _locked(*, organization, appointment_id) -> Appointment:
    appointment = (
        Appointment.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("patient")
        .filter(id=appointment_id)
        .first()
    )
    if appointment is None:
        raise NotFound("No such appointment.")
    return appointment


def _ensure_open(appointment: Appointment) -> None:
    if appointment.status not in ACTIVE_STATUSES:
        raise AppointmentClosed(appointment.status)


@transaction.atomic
def appointment_update(*, organization, user, appointment_id, data: dict[str, Any]) -> Appointment:
    """Change the details (practitioner, location, treatment, journey, type, notes). Times move by rescheduling."""
    appointment = _locked(organization=organization, appointment_id=appointment_id)
    _ensure_open(appointment)
    changed = _assign(appointment, data)
    if not changed:
        return appointment
    _check_links(appointment)
    _save_without_clash(organization=organization, appointment=appointment)
    emit(
        organization=organization,
        type="appointment.updated",
        subject_type="appointment",
        subject_id=appointment.id,
        actor=_actor(user),
        data=_event_data(appointment),
        action="updated",
        changed_fields=changed,
    )
    return appointment


@transaction.atomic
def appointment_reschedule(*, organization, user, appointment_id, data: dict[str, Any]) -> Appointment:
    """New times (and optionally another practitioner or location). A confirmed appointment goes back to booked:
    the patient has not confirmed the new time."""
    appointment = _locked(organization=organization, appointment_id=appointment_id)
    _ensure_open(appointment)
    if appointment.status == AppointmentStatus.ARRIVED:
        raise AppointmentClosed(appointment.status)
    _check_times(data["starts_at"], data["ends_at"])
    previous = {
        "previousStartsAt": appointment.starts_at.isoformat(),
        "previousEndsAt": appointment.ends_at.isoformat(),
    }
    freed = {
        "starts_at": appointment.starts_at,
        "ends_at": appointment.ends_at,
        "practitioner_id": appointment.practitioner_id,
        "location_id": appointment.location_id,
    }
    changed = [
        name
        for name, key in (("startsAt", "starts_at"), ("endsAt", "ends_at"))
        if getattr(appointment, key) != data[key]
    ]
    appointment.starts_at, appointment.ends_at = data["starts_at"], data["ends_at"]
    changed += _assign(appointment, {k: v for k, v in data.items() if k in ("practitioner", "location")})
    if not changed:
        return appointment
    if appointment.status == AppointmentStatus.CONFIRMED:
        appointment.status = AppointmentStatus.BOOKED
        appointment.status_changed_at = timezone.now()
        changed.append("status")
    _save_without_clash(organization=organization, appointment=appointment)
    _record(
        organization=organization,
        user=user,
        appointment=appointment,
        type="appointment.rescheduled",
        action="rescheduled",
        kind="appointment_rescheduled",
        data=previous,
        changed_fields=changed,
    )
    _slot_freed(appointment, reason="rescheduled", **freed)
    return appointment


def _move(*, organization, user, appointment: Appointment, target: str, action: str, reason: str = "") -> Appointment:
    previous = appointment.status
    appointment.status = target
    appointment.status_changed_at = timezone.now()
    changed = ["status", "statusChangedAt"]
    if reason:
        appointment.cancel_reason = reason
        changed.append("cancelReason")
    _save_without_clash(organization=organization, appointment=appointment)
    _record(
        organization=organization,
        user=user,
        appointment=appointment,
        type="appointment.status_changed",
        action=action,
        kind="appointment_cancelled" if target == AppointmentStatus.CANCELLED else "appointment_status_changed",
        data={"previousStatus": previous},
        changed_fields=changed,
    )
    return appointment


@transaction.atomic
def appointment_set_status(*, organization, user, appointment_id, status: str) -> Appointment:
    """Move along the day: booked ⇄ confirmed → arrived → completed, or no_show (undone back to booked)."""
    appointment = _locked(organization=organization, appointment_id=appointment_id)
    if status == appointment.status:
        return appointment
    allowed = STATUS_MOVES[appointment.status]
    if status not in allowed:
        raise AppointmentTransitionNotAllowed(status=appointment.status, target=status, allowed=list(allowed))
    appointment = _move(organization=organization, user=user, appointment=appointment, target=status, action=status)
    if status == AppointmentStatus.COMPLETED:
        completed_after_commit(organization_id=organization.id, appointment_id=appointment.id)
    elif status == AppointmentStatus.NO_SHOW and appointment.ends_at > timezone.now():
        _slot_freed(appointment, reason="no_show")  # marked ahead of time: the rest of the slot is free
    return appointment


@transaction.atomic
def appointment_cancel(*, organization, user, appointment_id, reason: str = "") -> Appointment:
    """Cancel a booked, confirmed or arrived appointment: its time is free again. Repeating is harmless."""
    appointment = _locked(organization=organization, appointment_id=appointment_id)
    if appointment.status == AppointmentStatus.CANCELLED:
        return appointment
    if appointment.status not in ACTIVE_STATUSES:
        raise AppointmentTransitionNotAllowed(status=appointment.status, target=AppointmentStatus.CANCELLED, allowed=[])
    appointment = _move(
        organization=organization,
        user=user,
        appointment=appointment,
        target=AppointmentStatus.CANCELLED,
        action="cancelled",
        reason=reason,
    )
    _slot_freed(appointment, reason="cancelled")
    return appointment


# --- practice scheduling settings ------------------------------------------------------------------------------------


@transaction.atomic
def practice_timezone_set(*, organization, name: str):
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationFailed.for_field("timezone", "is not an IANA timezone name (e.g. Europe/Rome)") from None
    type(organization).objects.filter(pk=organization.pk).update(timezone=name, updated_at=timezone.now())
    organization.timezone = name
    return organization


@transaction.atomic
def working_hours_replace(*, organization, practitioner, intervals: list[dict[str, Any]]) -> list[WorkingHours]:
    """Replace the practitioner's whole regular week. Intervals of one weekday may not overlap."""
    by_day: dict[int, list[dict[str, Any]]] = {}
    for index, interval in enumerate(intervals):
        if interval["end_time"] <= interval["start_time"]:
            raise ValidationFailed.for_field(f"intervals[{index}].endTime", "must be after startTime")
        by_day.setdefault(interval["weekday"], []).append(interval)
    for day, day_intervals in by_day.items():
        ordered = sorted(day_intervals, key=lambda i: i["start_time"])
        for before, after in itertools.pairwise(ordered):
            if after["start_time"] < before["end_time"]:
                raise ValidationFailed.for_field("intervals", f"intervals of weekday {day} overlap")
    WorkingHours.objects.for_org(organization).filter(practitioner=practitioner).delete()
    rows = [
        WorkingHours(
            organization=organization,
            practitioner=practitioner,
            weekday=interval["weekday"],
            start_time=interval["start_time"],
            end_time=interval["end_time"],
            location=interval.get("location"),
        )
        for interval in intervals
    ]
    WorkingHours.objects.bulk_create(rows)
    return sorted(rows, key=lambda row: (row.weekday, row.start_time))
