"""Aggregate reads of appointments for the reports area (apps.reports): figures only.

Appointments count by when they start, in [start, end): one statement walks appointments_org_start_idx
(organization, starts_at) and counts the rows once per grouping set (total, period, practitioner, type).
"""

from django.db import connection
from django.utils import timezone

from apps.appointments.models import Appointment, AppointmentStatus

_TRUNC = ("day", "week", "month")
_ATTENDED = (AppointmentStatus.ARRIVED, AppointmentStatus.COMPLETED)
_SCHEDULED = (AppointmentStatus.BOOKED, AppointmentStatus.CONFIRMED)


_OUTCOMES_SQL = """
SELECT GROUPING(period) AS no_period, GROUPING(practitioner_id) AS no_practitioner,
       GROUPING(appointment_type) AS no_type, period, practitioner_id, appointment_type,
       COUNT(*) AS booked,
       COUNT(*) FILTER (WHERE status = ANY(%(scheduled)s)) AS scheduled,
       COUNT(*) FILTER (WHERE status = ANY(%(attended)s)) AS attended,
       COUNT(*) FILTER (WHERE status = %(no_show)s) AS no_show,
       COUNT(*) FILTER (WHERE status = %(cancelled)s) AS cancelled
FROM (
    SELECT DATE_TRUNC(%(period)s, starts_at AT TIME ZONE %(zone)s)::date AS period, practitioner_id,
           appointment_type, status
    FROM {appointments}
    WHERE organization_id = %(org)s AND starts_at >= %(start)s AND starts_at < %(end)s {filters}
) a
GROUP BY GROUPING SETS ((), (period), (practitioner_id), (appointment_type))
"""
_COUNTS = ("booked", "scheduled", "attended", "no_show", "cancelled")


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
    "period": [...], "practitioner": [...], "type": [...]}; periods (day, week or month) in the practice's zone.
    One statement: the range's rows are read once and counted per grouping set."""
    if period not in _TRUNC:
        raise ValueError(f"unknown period {period!r}")
    params = {
        "org": getattr(organization, "pk", organization),
        "start": start,
        "end": end,
        "period": period,
        "zone": timezone._get_timezone_name(tzinfo),
        "scheduled": [str(s) for s in _SCHEDULED],
        "attended": [str(s) for s in _ATTENDED],
        "no_show": str(AppointmentStatus.NO_SHOW),
        "cancelled": str(AppointmentStatus.CANCELLED),
    }
    filters = ""
    for column, value in (
        ("practitioner_id", practitioner_id),
        ("appointment_type", appointment_type),
        ("location_id", location_id),
    ):
        if value is not None:
            filters += f" AND {column} = %({column})s"
            params[column] = value
    sql = _OUTCOMES_SQL.format(appointments=Appointment._meta.db_table, filters=filters)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    total = dict.fromkeys(_COUNTS, 0)
    by_period, by_practitioner, by_type = [], [], []
    for row in found:
        counts = {name: row[name] for name in _COUNTS}
        if row["no_period"] and row["no_practitioner"] and row["no_type"]:
            total = counts
        elif not row["no_period"]:
            by_period.append({"period": row["period"], **counts})
        elif not row["no_practitioner"]:
            by_practitioner.append({"practitioner_id": row["practitioner_id"], **counts})
        else:
            by_type.append({"appointment_type": row["appointment_type"], **counts})
    by_period.sort(key=lambda r: r["period"])
    by_type.sort(key=lambda r: r["appointment_type"])
    return {"total": total, "period": by_period, "practitioner": by_practitioner, "type": by_type}
