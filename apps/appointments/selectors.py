"""Reads of the appointments area: lists, the calendar, and the free slots scheduling offers."""

from bisect import bisect_left
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import FloatField, QuerySet
from django.db.models.functions import Cast, Extract
from django.utils import timezone

from apps.appointments.models import BLOCKING_STATUSES, MAX_LENGTH, Appointment, AppointmentStatus, WorkingHours
from apps.tasks.public import practice_timezone

APPOINTMENT_RELATED = ("patient", "practitioner", "location", "treatment")
# What an appointment row shows of its relations (AppointmentSerializer); the patient table is wide.
APPOINTMENT_ROW = (
    *(field.name for field in Appointment._meta.concrete_fields),
    "patient__first_name",
    "patient__last_name",
    "practitioner__name",
    "location__name",
    "treatment__name",
)


def appointment_rows(queryset) -> QuerySet[Appointment]:
    """The queryset with just what an appointment row renders of its relations, in one query."""
    return queryset.select_related(*APPOINTMENT_RELATED).only(*APPOINTMENT_ROW)


def appointment_get(*, organization, appointment_id) -> Appointment | None:
    return appointment_rows(Appointment.objects.for_org(organization)).filter(id=appointment_id).first()


def appointments_between(
    *,
    organization,
    start: datetime,
    end: datetime,
    practitioner_ids=None,
    location_ids=None,
    include_cancelled: bool = False,
) -> QuerySet[Appointment]:
    """Appointments overlapping [start, end), soonest first, with what a diary row shows. No appointment lasts
    longer than MAX_LENGTH, so the start bound lets the (organization, starts_at) index read just the range."""
    rows = Appointment.objects.for_org(organization).filter(
        starts_at__gte=start - MAX_LENGTH, starts_at__lt=end, ends_at__gt=start
    )
    if practitioner_ids:
        rows = rows.filter(practitioner_id__in=practitioner_ids)
    if location_ids:
        rows = rows.filter(location_id__in=location_ids)
    if not include_cancelled:
        rows = rows.exclude(status=AppointmentStatus.CANCELLED)
    return appointment_rows(rows).order_by("starts_at", "id")


@dataclass(frozen=True)
class AppointmentQuery:
    patient_id: object = None
    practitioner_id: object = None
    location_id: object = None
    status: str | None = None
    starts_after: datetime | None = None
    starts_before: datetime | None = None


def appointment_page(*, organization, query: AppointmentQuery, limit: int, offset: int):
    """(rows, total) ordered by start, then id: two queries whatever the page size."""
    rows = Appointment.objects.for_org(organization)
    for value, lookup in (
        (query.patient_id, "patient_id"),
        (query.practitioner_id, "practitioner_id"),
        (query.location_id, "location_id"),
        (query.status, "status"),
        (query.starts_after, "starts_at__gte"),
        (query.starts_before, "starts_at__lt"),
    ):
        if value is not None:
            rows = rows.filter(**{lookup: value})
    total = rows.count()
    page = appointment_rows(rows).order_by("starts_at", "id")[offset : offset + limit]
    return list(page), total


def first_clash(*, organization, practitioner_id, starts_at, ends_at, exclude_id=None) -> Appointment | None:
    """The earliest appointment holding the practitioner's time within [starts_at, ends_at)."""
    rows = Appointment.objects.for_org(organization).filter(
        practitioner_id=practitioner_id,
        status__in=BLOCKING_STATUSES,
        starts_at__gte=starts_at - MAX_LENGTH,
        starts_at__lt=ends_at,
        ends_at__gt=starts_at,
    )
    if exclude_id is not None:
        rows = rows.exclude(id=exclude_id)
    return rows.order_by("starts_at", "id").first()


def working_hours_of(*, organization, practitioner_id) -> list[WorkingHours]:
    return list(
        WorkingHours.objects.for_org(organization)
        .filter(practitioner_id=practitioner_id)
        .order_by("weekday", "start_time", "id")
    )


@dataclass(frozen=True)
class Slot:
    practitioner_id: object
    location_id: object
    starts_at: datetime
    ends_at: datetime


def availability(
    *,
    organization,
    first_day: date,
    last_day: date,
    duration: timedelta,
    step: timedelta,
    practitioner_ids=None,
    location_id=None,
    limit: int = 500,
) -> list[Slot]:
    """Free slots of `duration`, starting every `step` within each practitioner's working hours (practice local
    time, so a daylight-saving change moves them with the clock), that clash with no appointment holding time and
    start in the future. Two queries: the working hours and the appointments of the range."""
    tz = practice_timezone(organization)
    hours = WorkingHours.objects.for_org(organization).order_by("practitioner_id", "weekday", "start_time")
    if practitioner_ids:
        hours = hours.filter(practitioner_id__in=practitioner_ids)
    if location_id is not None:
        hours = hours.filter(location_id=location_id)
    hours = list(hours.filter(practitioner__archived_at__isnull=True))
    if not hours:
        return []
    range_start = datetime.combine(first_day, datetime.min.time(), tzinfo=tz)
    range_end = datetime.combine(last_day + timedelta(days=1), datetime.min.time(), tzinfo=tz)
    # Busy times as Unix seconds (double precision: exact to the microsecond at these magnitudes): a 4-week range
    # of a busy practice has thousands of appointments, and reading them as floats costs a fraction of datetimes.
    busy: dict[object, list[tuple[float, float]]] = {}
    for practitioner_id, starts_at, ends_at in (
        Appointment.objects.for_org(organization)
        .filter(
            practitioner_id__in={h.practitioner_id for h in hours},
            status__in=BLOCKING_STATUSES,
            starts_at__gte=range_start - MAX_LENGTH,
            starts_at__lt=range_end,
            ends_at__gt=range_start,
        )
        .annotate(
            start_epoch=Cast(Extract("starts_at", "epoch"), FloatField()),
            end_epoch=Cast(Extract("ends_at", "epoch"), FloatField()),
        )
        .values_list("practitioner_id", "start_epoch", "end_epoch")
    ):
        busy.setdefault(practitioner_id, []).append((starts_at, ends_at))
    # Per practitioner: the appointments by start and the longest of them, so a slot's clash check looks only at
    # those starting within that length before it (bisect) rather than at every appointment of the range.
    ordered = {pid: sorted(rows) for pid, rows in busy.items()}
    starts = {pid: [row[0] for row in rows] for pid, rows in ordered.items()}
    longest = {pid: max(end - start for start, end in rows) for pid, rows in ordered.items()}
    now = timezone.now().timestamp()
    length = duration.total_seconds()
    slots: list[Slot] = []
    day = first_day
    while day <= last_day and len(slots) < limit:
        for interval in (h for h in hours if h.weekday == day.weekday()):
            # Local wall times become instants first, then step in UTC: stepping an aware datetime in its own zone
            # is wall-clock arithmetic, which across a daylight-saving change yields times that do not exist
            # (zero-length slots) or lasts an hour longer than asked.
            start = datetime.combine(day, interval.start_time, tzinfo=tz).astimezone(UTC)
            close = datetime.combine(day, interval.end_time, tzinfo=tz).astimezone(UTC)
            pid = interval.practitioner_id
            taken, taken_starts = ordered.get(pid, ()), starts.get(pid, ())
            while start + duration <= close:
                start_at = start.timestamp()
                end_at = start_at + length
                free = start_at >= now
                if free and taken:
                    index = bisect_left(taken_starts, start_at - longest[pid])
                    while index < len(taken) and taken[index][0] < end_at:
                        if taken[index][1] > start_at:
                            free = False
                            break
                        index += 1
                if free:
                    slots.append(Slot(pid, interval.location_id, start, start + duration))
                start += step
        day += timedelta(days=1)
    # By start, then practitioner id (a UUID orders by its value, which is the order of its canonical text).
    slots.sort(key=lambda slot: (slot.starts_at, slot.practitioner_id))
    return slots[:limit]
