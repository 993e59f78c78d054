"""The practice's tasks as export rows (apps.transfer's data export and the practice archive)."""

from apps.tasks.models import Task

TASK_EXPORT_COLUMNS = {  # CSV header → value path
    "id": "id",
    "title": "title",
    "description": "description",
    "status": "status",
    "priority": "priority",
    "dueAt": "due_at",
    "completedAt": "completed_at",
    "cancelledAt": "cancelled_at",
    "assigneeId": "assignee_id",
    "createdById": "created_by_id",
    "patientId": "patient_id",
    "journeyId": "journey_id",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}


def tasks_export(*, organization):
    """(header, rows): a values_list queryset in a stable order, to be read through a server-side cursor."""
    rows = Task.objects.for_org(organization).order_by("created_at", "id").values_list(*TASK_EXPORT_COLUMNS.values())
    return list(TASK_EXPORT_COLUMNS), rows
