"""Reads of the tasks area."""

import zoneinfo
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from django.db.models import F, QuerySet
from django.utils import timezone

from apps.tasks.models import Task, TaskStatus

VIEWS = ("all", "mine", "overdue", "due_today")


def practice_timezone(organization) -> zoneinfo.ZoneInfo:
    """The practice's timezone. Organization has no timezone field yet: when one is added (an IANA name on
    `organization.timezone`) it is used here; until then, and for an unknown name, UTC."""
    name = getattr(organization, "timezone", None) or "UTC"
    try:
        return zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def today_bounds(organization, now: datetime | None = None) -> tuple[datetime, datetime]:
    """[start of today, start of tomorrow) in the practice's timezone, as aware datetimes."""
    tz = practice_timezone(organization)
    today = (now or timezone.now()).astimezone(tz).date()
    start = datetime.combine(today, time.min, tzinfo=tz)
    end = datetime.combine(today + timedelta(days=1), time.min, tzinfo=tz)
    return start, end


@dataclass(frozen=True)
class TaskQuery:
    view: str = "all"
    assignee_id: object = None
    patient_id: object = None
    journey_id: object = None
    status: str | None = None
    priority: str | None = None
    due_before: datetime | None = None
    due_after: datetime | None = None


def task_filtered(*, organization, user, query: TaskQuery) -> QuerySet[Task]:
    """The practice's tasks matching the query.

    view=mine: assigned to the caller. view=overdue: open and due before now. view=due_today: open and due
    within today in the practice's timezone. view=all: every task. The other filters are ANDed on top.
    """
    tasks = Task.objects.for_org(organization)
    if query.view == "mine":
        tasks = tasks.filter(assignee_id=user.pk)
    elif query.view == "overdue":
        tasks = tasks.filter(status=TaskStatus.OPEN, due_at__lt=timezone.now())
    elif query.view == "due_today":
        start, end = today_bounds(organization)
        tasks = tasks.filter(status=TaskStatus.OPEN, due_at__gte=start, due_at__lt=end)
    if query.assignee_id is not None:
        tasks = tasks.filter(assignee_id=query.assignee_id)
    if query.patient_id is not None:
        tasks = tasks.filter(patient_id=query.patient_id)
    if query.journey_id is not None:
        tasks = tasks.filter(journey_id=query.journey_id)
    if query.status:
        tasks = tasks.filter(status=query.status)
    if query.priority:
        tasks = tasks.filter(priority=query.priority)
    if query.due_before is not None:
        tasks = tasks.filter(due_at__lt=query.due_before)
    if query.due_after is not None:
        tasks = tasks.filter(due_at__gte=query.due_after)
    return tasks


def task_page(*, organization, user, query: TaskQuery, limit: int, offset: int) -> tuple[list[Task], int]:
    """(rows of the page, total): two queries whatever the page size. Soonest due first, undated last, then
    oldest created."""
    matching = task_filtered(organization=organization, user=user, query=query)
    total = matching.count()
    rows = matching.order_by(F("due_at").asc(nulls_last=True), "created_at", "id")
    return list(rows[offset : offset + limit]), total


def task_get(*, organization, task_id) -> Task | None:
    return Task.objects.for_org(organization).filter(id=task_id).first()
