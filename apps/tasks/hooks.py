"""The tasks area's part in erasing and merging a patient (registered in TasksConfig.ready())."""

from apps.patients.public import repoint_rows_to_survivor
from apps.tasks.models import Task


def erase_tasks_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' tasks go with them, in the erasing transaction. No event is recorded for a
    task erased with its patient (the catalogue has no deletion event, and the erasure leaves no trace)."""
    Task.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_tasks_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's tasks now belong to the survivor; one task.updated per task moved (one INSERT)."""
    repoint_rows_to_survivor(
        organization=organization, model=Task, subject_type="task", survivor=survivor, duplicate=duplicate
    )
