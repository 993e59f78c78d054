"""Aggregate reads of journeys for the reports area (apps.reports): figures only.

The open pipeline is an index-only scan of journeys_open_report_idx (organization, pipeline, stage, currency) INCLUDE
(stage entered at, value, assignee), partial on open journeys, read in group order; journeys won or lost in a range
walk journeys_won_idx / journeys_lost_idx (organization, won_at / lost_at, partial on the status); treatment accepted
is a semi-join to journeys_won_patient_idx (organization, patient), partial on won (migration 0007, raw SQL).
"""

from django.db import connection
from django.db.models import Count, Q, Sum

from apps.journeys.models import Journey, JourneyStatus, Pipeline, Stage, StageKind
from apps.patients.public import Patient


def pipelines_of(*, organization) -> list[dict]:
    """The practice's pipelines ({id, name, is_default}), the default first."""
    return list(
        Pipeline.objects.for_org(organization).order_by("-is_default", "name").values("id", "name", "is_default")
    )


def open_stages(*, organization, pipeline_id) -> list[dict]:
    """The pipeline's open stages ({id, name}) in board order (archived ones left out)."""
    rows = Stage.objects.for_org(organization).filter(
        pipeline_id=pipeline_id, kind=StageKind.OPEN, archived_at__isnull=True
    )
    return list(rows.order_by("position").values("id", "name"))


_OPEN_SQL = """
SELECT stage_id, currency, COUNT(*) AS open_count, SUM(estimated_value) AS value,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM %(now)s - stage_entered_at)) AS median_seconds,
       AVG(EXTRACT(EPOCH FROM %(now)s - stage_entered_at)) AS average_seconds
FROM {journeys}
WHERE organization_id = %(org)s AND pipeline_id = %(pipeline)s AND status = 'open' {assignee_filter}
GROUP BY stage_id, currency
"""


def open_by_stage(*, organization, pipeline_id, now, assignee_id=None) -> list[dict]:
    """The pipeline's open journeys per stage and currency: open_count, value (Decimal, major units), and how long
    they have been in their stage so far (median_seconds, average_seconds, at `now`)."""
    params = {"org": getattr(organization, "pk", organization), "pipeline": pipeline_id, "now": now}
    assignee_filter = ""
    if assignee_id is not None:
        assignee_filter, params["assignee"] = "AND assignee_id = %(assignee)s", assignee_id
    sql = _OPEN_SQL.format(journeys=Journey._meta.db_table, assignee_filter=assignee_filter)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def closed_between(*, organization, pipeline_id, start, end, assignee_id=None) -> list[dict]:
    """Journeys of the pipeline won or lost in [start, end), per currency: won, won_value, lost."""
    rows = (
        Journey.objects.for_org(organization)
        .filter(pipeline_id=pipeline_id)
        .filter(
            Q(status=JourneyStatus.WON, won_at__gte=start, won_at__lt=end)
            | Q(status=JourneyStatus.LOST, lost_at__gte=start, lost_at__lt=end)
        )
    )
    if assignee_id is not None:
        rows = rows.filter(assignee_id=assignee_id)
    return list(
        rows.values("currency")
        .annotate(
            won=Count("id", filter=Q(status=JourneyStatus.WON)),
            won_value=Sum("estimated_value", filter=Q(status=JourneyStatus.WON)),
            lost=Count("id", filter=Q(status=JourneyStatus.LOST)),
        )
        .order_by("currency")
    )


_WON_PATIENTS_SQL = """
SELECT p.lead_source_id, COUNT(*) AS accepted
FROM {patients} p
WHERE p.organization_id = %(org)s AND p.created_at >= %(start)s AND p.created_at < %(end)s
  AND p.merged_into_id IS NULL {patient_filter}
  AND EXISTS (
      SELECT 1 FROM {journeys} j
      WHERE j.organization_id = %(org)s AND j.patient_id = p.id AND j.status = 'won'
  )
GROUP BY 1
"""


def won_patients_by_lead_source(*, organization, start, end, lead_source_id=None, location_id=None) -> dict:
    """Treatment accepted: of the patient records created in [start, end) (merged ones left out), how many have a
    won journey, per the record's lead source (None: no source). Read from the records created in the range (an
    index-only scan of patients_report_created_idx) with a semi-join to journeys_won_patient_idx, so the practice's
    other records are never read."""
    params = {"org": getattr(organization, "pk", organization), "start": start, "end": end}
    patient_filter = ""
    if lead_source_id is not None:
        patient_filter += " AND p.lead_source_id = %(source)s"
        params["source"] = lead_source_id
    if location_id is not None:
        patient_filter += " AND p.location_id = %(location)s"
        params["location"] = location_id
    sql = _WON_PATIENTS_SQL.format(
        patients=Patient._meta.db_table, journeys=Journey._meta.db_table, patient_filter=patient_filter
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict(cursor.fetchall())
