"""The practice's journeys as export rows (apps.transfer's data export and the practice archive)."""

from apps.journeys.models import Journey

JOURNEY_EXPORT_COLUMNS = {  # CSV header → value path
    "id": "id",
    "patientId": "patient_id",
    "treatment": "treatment__name",
    "pipeline": "pipeline__name",
    "stage": "stage__name",
    "status": "status",
    "estimatedValue": "estimated_value",
    "currency": "currency",
    "source": "source",
    "assigneeId": "assignee_id",
    "stageEnteredAt": "stage_entered_at",
    "wonAt": "won_at",
    "lostAt": "lost_at",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}


def journeys_export(*, organization):
    """(header, rows): a values_list queryset in a stable order, to be read through a server-side cursor."""
    rows = (
        Journey.objects.for_org(organization).order_by("created_at", "id").values_list(*JOURNEY_EXPORT_COLUMNS.values())
    )
    return list(JOURNEY_EXPORT_COLUMNS), rows
