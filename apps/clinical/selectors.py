"""Reads of the clinical workspace hub."""

import zoneinfo
from datetime import date, datetime, time, timedelta

from django.db.models import CharField, F, Func, Q
from django.utils import timezone

from apps.accounts.models import Membership
from apps.appointments.public import Appointment, AppointmentStatus
from apps.clinical.models import AppointmentVisit, Chair, ClinicalDocument, PractitionerLink
from apps.conversations.public import Conversation

# What the day list reads, in one query: the appointment, its patient, practitioner and location, its visit (chair,
# arrival, seating, completion) and the practitioner's linked member (LEFT JOINs; at most one of each).
DAY_LIST_VALUES = (
    "id",
    "status",
    "appointment_type",
    "patient_id",
    "patient__first_name",
    "patient__last_name",
    "practitioner_id",
    "practitioner__name",
    "practitioner__clinical_link__user_id",
    "practitioner__clinical_link__user__name",
    "location_id",
    "location__name",
    "clinical_visit__chair_id",
    "clinical_visit__chair__name",
    "clinical_visit__chair__position",
    "clinical_visit__arrived_at",
    "clinical_visit__seated_at",
    "clinical_visit__completed_at",
)


class UtcWireTime(Func):
    """A timestamp as the API writes it (DRF's DateTimeField under our settings: UTC, microseconds, "Z"), made by
    PostgreSQL: the day list's times reach Python as strings, not parsed and formatted again per row."""

    template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    output_field = CharField()


def practitioner_of_user(organization, user):
    """The practitioner profile linked to this member in this practice, or None."""
    link = (
        PractitionerLink.objects.for_org(organization)
        .select_related("practitioner")
        .filter(user_id=getattr(user, "pk", user))
        .first()
    )
    return link.practitioner if link else None


def member_of_practice(*, organization, user_id):
    """The member account with this id if it is a member of this practice (any role), else None."""
    membership = Membership.objects.for_org(organization).select_related("user").filter(user_id=user_id).first()
    return membership.user if membership else None


def link_of_practitioner(*, organization, practitioner_id) -> PractitionerLink | None:
    return (
        PractitionerLink.objects.for_org(organization)
        .select_related("user")
        .filter(practitioner_id=practitioner_id)
        .first()
    )


def practice_timezone(organization) -> zoneinfo.ZoneInfo:
    """The practice's IANA timezone (UTC when unset or unknown)."""
    try:
        return zoneinfo.ZoneInfo(str(getattr(organization, "timezone", None) or "UTC"))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def practice_today(organization) -> date:
    return timezone.now().astimezone(practice_timezone(organization)).date()


def day_bounds(organization, day: date) -> tuple[datetime, datetime]:
    """[the day's first instant, the next day's first instant) in the practice's timezone."""
    tz = practice_timezone(organization)
    return datetime.combine(day, time.min, tzinfo=tz), datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)


def day_list_rows(*, organization, day: date, practitioner_id=None, location_id=None) -> list[dict]:
    """The day's appointments (cancelled ones left out) as flat rows, by start: one query."""
    start, end = day_bounds(organization, day)
    rows = (
        Appointment.objects.for_org(organization)
        .filter(starts_at__gte=start, starts_at__lt=end)
        .exclude(status=AppointmentStatus.CANCELLED)
    )
    if practitioner_id:
        rows = rows.filter(practitioner_id=practitioner_id)
    if location_id:
        rows = rows.filter(location_id=location_id)
    return list(
        rows.order_by("starts_at", "id").values(
            *DAY_LIST_VALUES, starts_at_wire=UtcWireTime(F("starts_at")), ends_at_wire=UtcWireTime(F("ends_at"))
        )
    )


def chairs_of(*, organization, location_id=None, include_inactive: bool = True):
    chairs = Chair.objects.for_org(organization).select_related("location")
    if location_id:
        chairs = chairs.filter(location_id=location_id)
    if not include_inactive:
        chairs = chairs.filter(active=True)
    return chairs.order_by("location__name", "position", "name", "id")


def visit_of(*, organization, appointment_id) -> AppointmentVisit | None:
    return (
        AppointmentVisit.objects.for_org(organization)
        .select_related("chair")
        .filter(appointment_id=appointment_id)
        .first()
    )


def chair_has_upcoming(*, organization, chair) -> bool:
    """Whether an appointment still to come (booked, confirmed, arrived) sits in this chair."""
    return (
        AppointmentVisit.objects.for_org(organization)
        .filter(chair=chair, appointment__ends_at__gt=timezone.now())
        .filter(
            Q(appointment__status=AppointmentStatus.BOOKED)
            | Q(appointment__status=AppointmentStatus.CONFIRMED)
            | Q(appointment__status=AppointmentStatus.ARRIVED)
        )
        .exists()
    )


def documents_of(*, organization, patient_id):
    return ClinicalDocument.objects.for_org(organization).filter(patient_id=patient_id).order_by("-created_at", "-id")


def pms_conversations(*, organization, filters: dict):
    """The practice's conversations with the inbox's filters (channel, status, patient, assignee id or "none"),
    unordered (the paginator orders by last activity)."""
    conversations = Conversation.objects.for_org(organization).select_related("patient")
    for key in ("channel", "status"):
        if filters.get(key):
            conversations = conversations.filter(**{key: filters[key]})
    if filters.get("patient"):
        conversations = conversations.filter(patient_id=filters["patient"].id)
    if filters.get("assignee") == "none":
        conversations = conversations.filter(assignee__isnull=True)
    elif filters.get("assignee"):
        conversations = conversations.filter(assignee_id=filters["assignee"])
    return conversations
