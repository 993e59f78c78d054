"""Reads of recalls and the waitlist, for one practice."""

from dataclasses import dataclass
from datetime import date

from django.db.models import Count, F, Q, Window

from apps.appointments.public import Appointment
from apps.recalls.models import (
    OPEN_RECALL_STATUSES,
    OfferStatus,
    Recall,
    RecallReminder,
    RecallStatus,
    RecallType,
    WaitlistEntry,
    WaitlistOffer,
)
from apps.recalls.services import practice_today


def appointment_types() -> tuple[str, ...]:
    """The appointment types of the diary (apps.appointments): a recall type or waitlist entry names one."""
    return tuple(value for value, _ in Appointment._meta.get_field("appointment_type").choices)


def recall_types_of(*, organization, include_archived: bool = False):
    rows = RecallType.objects.for_org(organization).order_by("name", "id")
    return rows if include_archived else rows.filter(archived_at__isnull=True)


RECALL_ROW = (
    "id",
    "patient_id",
    "recall_type_id",
    "practitioner_id",
    "due_date",
    "status",
    "appointment_id",
    "next_reminder_at",
    "completed_at",
    "cancelled_at",
    "created_at",
    "updated_at",
)


@dataclass(frozen=True)
class RecallQuery:
    status: tuple[str, ...] = tuple(OPEN_RECALL_STATUSES)
    due_from: date | None = None
    due_to: date | None = None
    overdue: bool = False
    recall_type_id: object = None
    practitioner_id: object = None
    patient_id: object = None


def recall_rows(*, organization, query: RecallQuery, limit: int, offset: int) -> tuple[list[dict], int]:
    """One page of the practice's recalls, soonest due first, with the patient's name and the type's name, and the
    total: one query (the total is a window count over the filtered rows; a page past the end counts apart)."""
    rows = Recall.objects.for_org(organization).filter(status__in=query.status)
    if query.due_from is not None:
        rows = rows.filter(due_date__gte=query.due_from)
    if query.due_to is not None:
        rows = rows.filter(due_date__lte=query.due_to)
    if query.overdue:
        rows = rows.filter(status=RecallStatus.DUE, due_date__lt=practice_today(organization))
    if query.recall_type_id is not None:
        rows = rows.filter(recall_type_id=query.recall_type_id)
    if query.practitioner_id is not None:
        rows = rows.filter(practitioner_id=query.practitioner_id)
    if query.patient_id is not None:
        rows = rows.filter(patient_id=query.patient_id)
    page = list(
        rows.annotate(
            total=Window(Count("id")),
            patient_first_name=F("patient__first_name"),
            patient_last_name=F("patient__last_name"),
            recall_type_name=F("recall_type__name"),
        )
        .order_by("due_date", "id")
        .values(*RECALL_ROW, "total", "patient_first_name", "patient_last_name", "recall_type_name")[
            offset : offset + limit
        ]
    )
    total = page[0]["total"] if page else (rows.count() if offset else 0)
    return page, total


def recall_detail(*, organization, recall_id) -> dict | None:
    """One recall as a list row, with its reminder attempts (oldest first)."""
    row = (
        Recall.objects.for_org(organization)
        .filter(id=recall_id)
        .annotate(
            patient_first_name=F("patient__first_name"),
            patient_last_name=F("patient__last_name"),
            recall_type_name=F("recall_type__name"),
        )
        .values(*RECALL_ROW, "patient_first_name", "patient_last_name", "recall_type_name")
        .first()
    )
    if row is None:
        return None
    row["reminders"] = list(
        RecallReminder.objects.for_org(organization)
        .filter(recall_id=recall_id)
        .order_by("created_at", "offset_days")
        .values("due_date", "offset_days", "outcome", "skipped_reason", "channel", "message_id", "created_at")
    )
    return row


@dataclass(frozen=True)
class WaitlistQuery:
    status: tuple[str, ...] = ("waiting", "offered")
    appointment_type: str | None = None
    practitioner_id: object = None
    patient_id: object = None


def waitlist_rows(*, organization, query: WaitlistQuery, limit: int, offset: int) -> tuple[list[WaitlistEntry], int]:
    """The practice's waitlist, most urgent first (priority 1 first, then the longest waiting)."""
    rows = WaitlistEntry.objects.for_org(organization).filter(status__in=query.status)
    if query.appointment_type:
        rows = rows.filter(appointment_type=query.appointment_type)
    if query.practitioner_id is not None:
        rows = rows.filter(Q(practitioner_id=query.practitioner_id) | Q(practitioner__isnull=True))
    if query.patient_id is not None:
        rows = rows.filter(patient_id=query.patient_id)
    page = list(
        rows.annotate(total=Window(Count("id")))
        .select_related("patient")
        .order_by("priority", "created_at", "id")[offset : offset + limit]
    )
    total = page[0].total if page else (rows.count() if offset else 0)
    return page, total


def offers_of(*, organization, status: tuple[str, ...] = (OfferStatus.OPEN,)):
    """Offers the team sees (open ones by default), soonest slot first."""
    return (
        WaitlistOffer.objects.for_org(organization)
        .filter(status__in=status)
        .select_related("patient")
        .order_by("starts_at", "id")
    )
