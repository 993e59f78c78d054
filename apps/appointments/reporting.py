"""Aggregate reads of appointments for the reports area (apps.reports): figures only.

Appointments count by when they start, in [start, end): the read walks appointments_org_start_idx
(organization, starts_at).
"""

from django.db.models import Count, DateField, Q
from django.db.models.functions import TruncDay, TruncMonth, TruncWeek

from apps.appointments.models import Appointment, AppointmentStatus

_TRUNC = {"day": TruncDay, "week": TruncWeek, "month": TruncMonth}
_ATTENDED = (AppointmentStatus.ARRIVED, AppointmentStatus.COMPLETED)
_SCHEDULED = (AppointmentStatus.BOOKED, AppointmentStatus.CONFIRMED)


def _outcomes() -> dict:
    return {
        "booked": Count("id"),
        "scheduled": Count("id", filter=Q(status__in=_SCHEDULED)),
        "attended": Count("id", filter=Q(status__in=_ATTENDED)),
        "no_show": Count("id", filter=Q(status=AppointmentStatus.NO_SHOW)),
        "cancelled": Count("id", filter=Q(status=AppointmentStatus.CANCELLED)),
    }


def outcomes_between(
    *,
    organization,
    start,
    end,
    tzinfo,
    period: str = "week",
    practitioner_id=None,
    appointment_type=None,
    location_id=None,
) -> dict:
    """Appointments starting in [start, end): booked (every appointment made for the range), scheduled (booked or
    confirmed, not yet resolved), attended (arrived or completed), no_show, cancelled. Returns {"total": {...},
    "period": [...], "practitioner": [...], "type": [...]}; periods (day, week or month) in the practice's zone."""
    rows = Appointment.objects.for_org(organization).filter(starts_at__gte=start, starts_at__lt=end)
    if practitioner_id is not None:
        rows = rows.filter(practitioner_id=practitioner_id)
    if appointment_type is not None:
        rows = rows.filter(appointment_type=appointment_type)
    if location_id is not None:
        rows = rows.filter(location_id=location_id)
    outcomes = _outcomes()
    by_period = rows.annotate(period=_TRUNC[period]("starts_at", tzinfo=tzinfo, output_field=DateField())).values(
        "period"
    )
    return {
        "total": rows.aggregate(**outcomes),
        "period": list(by_period.annotate(**outcomes).order_by("period")),
        "practitioner": list(rows.values("practitioner_id").annotate(**outcomes).order_by()),
        "type": list(rows.values("appointment_type").annotate(**outcomes).order_by("appointment_type")),
    }
