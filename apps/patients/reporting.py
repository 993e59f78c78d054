"""Aggregate reads of patients for the reports area (apps.reports): figures only, never a patient's details.

Every read names its practice and a created-at range [start, end) (aware datetimes), so it is an index-only scan of
patients_report_created_idx (organization, created_at) INCLUDE (id, lead source, location, status, status before
archive, merged into); the first contact of each record is one index-only probe of patients_first_contact_idx
(organization, patient, created_at, id) INCLUDE (actor), partial on the outbound calls and messages (both added by
migration 0016, raw SQL). Merged records are left out (they live on in their survivor).
"""

from django.db import connection
from django.db.models import Case, Count, F, Q, When

from apps.patients.models import Activity, LeadSource, Location, Patient, Practitioner, Status

# The funnel's stages a record has reached, from its status (an archived record counts by the status it had):
# every record is an enquiry; a lead, patient or inactive one went past enquiry; a patient or inactive one became a
# patient. A deceased record counts as an enquiry only.
_PAST_ENQUIRY = (Status.LEAD, Status.PATIENT, Status.INACTIVE)
_BECAME_PATIENT = (Status.PATIENT, Status.INACTIVE)


def _created_in(organization, start, end, *, lead_source_id=None, location_id=None):
    rows = Patient.objects.for_org(organization).filter(
        created_at__gte=start, created_at__lt=end, merged_into__isnull=True
    )
    if lead_source_id is not None:
        rows = rows.filter(lead_source_id=lead_source_id)
    if location_id is not None:
        rows = rows.filter(location_id=location_id)
    return rows


def funnel_by_lead_source(*, organization, start, end, lead_source_id=None, location_id=None) -> list[dict]:
    """Per lead source (None: no source) of the records created in [start, end): enquiries, leads, patients."""
    reached = Case(When(status=Status.ARCHIVED, then=F("status_before_archive")), default=F("status"))
    return list(
        _created_in(organization, start, end, lead_source_id=lead_source_id, location_id=location_id)
        .annotate(reached=reached)
        .values("lead_source_id")
        .annotate(
            enquiries=Count("id"),
            leads=Count("id", filter=Q(reached__in=_PAST_ENQUIRY)),
            patients=Count("id", filter=Q(reached__in=_BECAME_PATIENT)),
        )
        .order_by()
    )


_FIRST_CONTACT_SQL = """
WITH created AS (
    SELECT p.id, p.lead_source_id, p.created_at
    FROM {patients} p
    WHERE p.organization_id = %(org)s AND p.created_at >= %(start)s AND p.created_at < %(end)s
      AND p.merged_into_id IS NULL {source_filter}
), firsts AS (
    SELECT c.lead_source_id, fc.actor_id, EXTRACT(EPOCH FROM fc.created_at - c.created_at) AS seconds
    FROM created c
    LEFT JOIN LATERAL (
        SELECT a.created_at, a.actor_id
        FROM {activities} a
        WHERE a.organization_id = %(org)s AND a.patient_id = c.id AND a.kind IN ('call', 'message')
          AND COALESCE(a.data ->> 'direction', 'outbound') <> 'inbound'
        ORDER BY a.created_at, a.id
        LIMIT 1
    ) fc ON true
    {member_filter}
)
SELECT GROUPING(lead_source_id) AS by_source_off, GROUPING(actor_id) AS by_member_off, lead_source_id, actor_id,
       COUNT(*) AS leads, COUNT(seconds) AS contacted,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY seconds) AS median_seconds,
       PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY seconds) AS p90_seconds,
       COUNT(*) FILTER (WHERE seconds <= 300) AS within_5_minutes,
       COUNT(*) FILTER (WHERE seconds <= 3600) AS within_1_hour
FROM firsts
GROUP BY GROUPING SETS ((), (lead_source_id), (actor_id))
"""


def first_contact_times(*, organization, start, end, lead_source_id=None, member_user_id=None) -> list[dict]:
    """Speed to lead: for the records created in [start, end), the first outbound call or message on the timeline
    (a contact attempt, a sent message, a dialer call) and who made it. One row for the whole practice (group
    "all"), one per lead source ("source", key the source id) and one per first-contact member ("member", key the
    user id; None: not contacted yet, or contacted by the system). Seconds are from the record's creation."""
    params = {"org": getattr(organization, "pk", organization), "start": start, "end": end}
    source_filter = member_filter = ""
    if lead_source_id is not None:
        source_filter, params["source"] = "AND p.lead_source_id = %(source)s", lead_source_id
    if member_user_id is not None:
        member_filter, params["member"] = "WHERE fc.actor_id = %(member)s", member_user_id
    sql = _FIRST_CONTACT_SQL.format(
        patients=Patient._meta.db_table,
        activities=Activity._meta.db_table,
        source_filter=source_filter,
        member_filter=member_filter,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        source_off, member_off = row.pop("by_source_off"), row.pop("by_member_off")
        row["group"] = "all" if source_off and member_off else ("member" if source_off else "source")
        row["key"] = row["actor_id"] if row["group"] == "member" else row["lead_source_id"]
        del row["actor_id"], row["lead_source_id"]
    return rows


_NAMED = {"lead_source": LeadSource, "location": Location, "practitioner": Practitioner}


def names_of(*, organization, kind: str) -> dict:
    """Every lead source, location or practitioner (kind) of the practice, archived ones too (old records still
    point at them): id → name."""
    return dict(_NAMED[kind].objects.for_org(organization).values_list("id", "name"))
