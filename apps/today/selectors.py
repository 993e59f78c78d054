"""Reads of the Today view: the signed-in member's day in one request, a fixed number of queries.

Each section is a page query that stops at its limit in index order, plus one count when the page is full, so the
number of queries does not grow with the number of rows. Sections read the other areas' models through their
tenant managers (for_org); nothing here writes. Rows are `.values()` dicts of the columns the areas' row renderers
read (no model instances); apps.today.renderers writes them.
"""

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from apps.appointments.public import ACTIVE_STATUSES, APPOINTMENT_VALUES, Appointment, appointments_between
from apps.journeys.public import JOURNEY_VALUES, Journey, JourneyStatus
from apps.patients.public import LIST_COLUMNS, Patient, Status
from apps.tasks.public import TASK_VALUES, Task, TaskStatus, practice_timezone, today_bounds

# Rows per section: the first ones of each list, with its total (the full lists have their own routes).
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# A journey that has sat in its stage this long needs a look, whatever is planned for it.
STALE_AFTER_DAYS = 7

NO_NEXT_STEP = "no_next_step"
STALE = "stale"
NEEDS_ACTION_REASONS = (NO_NEXT_STEP, STALE)
JOURNEY_COLUMNS = (*JOURNEY_VALUES, "has_open_task", "has_coming_appointment")


@dataclass(frozen=True)
class Section:
    items: list
    total: int


@dataclass(frozen=True)
class TaskSection(Section):
    overdue_total: int


@dataclass(frozen=True)
class LeadSection(Section):
    since: datetime


@dataclass(frozen=True)
class JourneySection(Section):
    stale_after_days: int


@dataclass(frozen=True)
class Today:
    date: date
    timezone: str
    generated_at: datetime
    tasks: TaskSection
    appointments: Section | None
    new_leads: LeadSection | None
    journeys: JourneySection | None


def _first_rows(queryset: QuerySet, limit: int, columns, **counts) -> tuple[list, int, dict]:
    """(up to `limit` rows as dicts of `columns`, the total, extra filtered counts). The page is one query that can
    stop at `limit` in
    index order; the totals are one aggregate without the page's joins, skipped when the page already holds every
    row. (A window count on the page query would make PostgreSQL join and sort every matching row first.)"""
    rows = list(queryset.values(*columns)[:limit])
    if len(rows) < limit and not counts:
        return rows, len(rows), {}
    totals = queryset.order_by().aggregate(
        section_total=Count("pk"), **{name: Count("pk", filter=condition) for name, condition in counts.items()}
    )
    return rows, totals.pop("section_total"), totals


def my_tasks(*, organization, user, now: datetime, day_end: datetime, limit: int) -> TaskSection:
    """Open tasks assigned to the caller and due before the end of today (overdue ones included), soonest due first."""
    tasks = Task.objects.for_org(organization).filter(assignee_id=user.pk, status=TaskStatus.OPEN, due_at__lt=day_end)
    rows, total, extra = _first_rows(
        tasks.order_by("due_at", "created_at", "id"), limit, TASK_VALUES, overdue_total=Q(due_at__lt=now)
    )
    return TaskSection(items=rows, total=total, overdue_total=extra["overdue_total"])


def todays_appointments(*, organization, day_start: datetime, day_end: datetime, limit: int) -> Section:
    """The practice's appointments overlapping today (cancelled ones left out), soonest first."""
    appointments = appointments_between(organization=organization, start=day_start, end=day_end)
    rows, total, _ = _first_rows(appointments, limit, APPOINTMENT_VALUES)
    return Section(items=rows, total=total)


def new_leads(*, organization, since: datetime, limit: int) -> LeadSection:
    """Enquiries and leads created since `since` (the start of yesterday), neither archived nor merged, newest first."""
    patients = Patient.objects.for_org(organization).filter(
        created_at__gte=since,
        status__in=(Status.ENQUIRY, Status.LEAD),
        archived_at__isnull=True,
        merged_into__isnull=True,
    )
    rows, total, _ = _first_rows(patients.order_by("-created_at", "-id"), limit, LIST_COLUMNS)
    return LeadSection(items=rows, total=total, since=since)


def journeys_needing_action(*, organization, user, now: datetime, day_start: datetime, limit: int) -> JourneySection:
    """Open journeys assigned to the caller or to nobody that have no next step (their patient has no open task and
    no booked, confirmed or arrived appointment from today on) or have sat in their stage for STALE_AFTER_DAYS days
    or more. Longest in their stage first; each row says why (`needs_action_reasons`)."""
    stale_before = now - timedelta(days=STALE_AFTER_DAYS)
    open_task = Task.objects.for_org(organization).filter(patient_id=OuterRef("patient_id"), status=TaskStatus.OPEN)
    coming_appointment = Appointment.objects.for_org(organization).filter(
        patient_id=OuterRef("patient_id"), status__in=ACTIVE_STATUSES, starts_at__gte=day_start
    )
    journeys = (
        Journey.objects.for_org(organization)
        .filter(Q(assignee_id=user.pk) | Q(assignee__isnull=True), status=JourneyStatus.OPEN)
        .annotate(has_open_task=Exists(open_task), has_coming_appointment=Exists(coming_appointment))
        .filter(Q(has_open_task=False, has_coming_appointment=False) | Q(stage_entered_at__lt=stale_before))
    ).order_by("stage_entered_at", "id")
    rows, total, _ = _first_rows(journeys, limit, JOURNEY_COLUMNS)
    for journey in rows:
        journey["needs_action_reasons"] = [
            reason
            for reason, applies in (
                (NO_NEXT_STEP, not (journey["has_open_task"] or journey["has_coming_appointment"])),
                (STALE, journey["stage_entered_at"] < stale_before),
            )
            if applies
        ]
    return JourneySection(items=rows, total=total, stale_after_days=STALE_AFTER_DAYS)


SECTIONS = frozenset({"appointments", "new_leads", "journeys"})  # the optional ones; the caller's tasks always come


def today_for_member(
    *, organization, user, sections=SECTIONS, limit: int = DEFAULT_LIMIT, now: datetime | None = None
) -> Today:
    """The member's day: a fixed number of queries whatever the practice's size, up to `limit` rows per section.
    "Today" is the practice's calendar day. Sections left out of `sections` are None (and cost nothing)."""
    now = now or timezone.now()
    tz = practice_timezone(organization)
    day_start, day_end = today_bounds(organization, now)
    yesterday_start = datetime.combine(day_start.date() - timedelta(days=1), time.min, tzinfo=tz)
    return Today(
        date=day_start.date(),
        timezone=str(tz),
        generated_at=now,
        tasks=my_tasks(organization=organization, user=user, now=now, day_end=day_end, limit=limit),
        appointments=todays_appointments(organization=organization, day_start=day_start, day_end=day_end, limit=limit)
        if "appointments" in sections
        else None,
        new_leads=new_leads(organization=organization, since=yesterday_start, limit=limit)
        if "new_leads" in sections
        else None,
        journeys=journeys_needing_action(
            organization=organization, user=user, now=now, day_start=day_start, limit=limit
        )
        if "journeys" in sections
        else None,
    )
