"""Writes of the tasks area. Each runs in one transaction and records its event in the outbox.

Events carry ids and field names only (never the title or description): data.action, data.changedFields and
the ids of the assignee and patient.
"""

from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Membership
from apps.core.errors import NotFound, ValidationFailed
from apps.core.naming import to_camel as camel
from apps.events.services import Actor, PendingEvent, emit, emit_many
from apps.patients.errors import PatientMerged
from apps.tasks.errors import TaskTransitionNotAllowed
from apps.tasks.models import Task, TaskStatus

# Fields a create or update may set (validated data of the API serializers, snake_case).
WRITABLE = ("title", "description", "due_at", "priority", "assignee_id", "patient")


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system()


def _ids(task: Task) -> dict[str, Any]:
    return {
        "status": task.status,
        "priority": task.priority,
        "assigneeId": str(task.assignee_id) if task.assignee_id else None,
        "patientId": str(task.patient_id) if task.patient_id else None,
    }


def _event(*, organization, user, task: Task, type: str, action: str, changed_fields: list[str] | None = None):
    emit(
        organization=organization,
        type=type,
        subject_type="task",
        subject_id=task.id,
        actor=_actor(user),
        data=_ids(task),
        action=action,
        changed_fields=changed_fields,
    )


def _check_assignee(*, organization, user_id) -> None:
    """The assignee must be a member of the practice (another practice's member is the same 400 as nobody)."""
    if user_id is None:
        return
    if not Membership.objects.for_org(organization).filter(user_id=user_id).exists():
        raise ValidationFailed.for_field("assigneeId", "is not a member of this practice")


def _check_patient(patient) -> None:
    if patient is not None and patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)


def _assign(task: Task, data: dict[str, Any]) -> list[str]:
    """Set the given fields; return the camelCase names of those whose value changed."""
    changed = []
    for key in WRITABLE:
        if key not in data:
            continue
        value = data[key]
        if key == "description" and value is None:
            value = ""
        if key == "patient":
            if task.patient_id != (value.pk if value is not None else None):
                changed.append("patientId")
            task.patient = value
            continue
        if getattr(task, key) != value:
            changed.append(camel(key))
        setattr(task, key, value)
    return changed


@transaction.atomic
def task_create(*, organization, user, data: dict[str, Any]) -> Task:
    """A new open task. Without assigneeId it is assigned to its creator (when a person creates it)."""
    data = dict(data)
    if "assignee_id" not in data:
        data["assignee_id"] = user.pk if user is not None else None
    _check_assignee(organization=organization, user_id=data["assignee_id"])
    _check_patient(data.get("patient"))
    task = Task(organization=organization, created_by=user)
    _assign(task, data)
    task.save(force_insert=True)
    _event(organization=organization, user=user, task=task, type="task.created", action="created")
    return task


def _locked(*, organization, task_id) -> Task:
    task = Task.objects.for_org(organization).select_for_update().filter(id=task_id).first()
    if task is None:
        raise NotFound("No such task.")
    return task


@transaction.atomic
def task_update(*, organization, user, task_id, data: dict[str, Any]) -> Task:
    task = _locked(organization=organization, task_id=task_id)
    if "assignee_id" in data and data["assignee_id"] != task.assignee_id:
        _check_assignee(organization=organization, user_id=data["assignee_id"])
    if "patient" in data and data["patient"] is not None and data["patient"].pk != task.patient_id:
        _check_patient(data["patient"])
    changed = _assign(task, data)
    if not changed:
        return task
    task.save()
    _event(
        organization=organization, user=user, task=task, type="task.updated", action="updated", changed_fields=changed
    )
    return task


# action → (event type, statuses it may start from, the status it leads to)
TRANSITIONS = {
    "completed": ("task.completed", (TaskStatus.OPEN,), TaskStatus.COMPLETED),
    "reopened": ("task.reopened", (TaskStatus.COMPLETED, TaskStatus.CANCELLED), TaskStatus.OPEN),
    "cancelled": ("task.cancelled", (TaskStatus.OPEN,), TaskStatus.CANCELLED),
}


@transaction.atomic
def task_transition(*, organization, user, task_id, action: str) -> Task:
    """complete (open → completed), cancel (open → cancelled), reopen (completed or cancelled → open).

    The row is locked, so two racing requests cannot both move it; the loser gets TASK_TRANSITION_NOT_ALLOWED.
    """
    event_type, allowed_from, target = TRANSITIONS[action]
    task = _locked(organization=organization, task_id=task_id)
    if task.status not in allowed_from:
        raise TaskTransitionNotAllowed(action=action, status=task.status, allowed_from=[str(s) for s in allowed_from])
    changed = ["status"]
    now = timezone.now()
    if task.completed_at is not None:
        task.completed_at = None
        changed.append("completedAt")
    if task.cancelled_at is not None:
        task.cancelled_at = None
        changed.append("cancelledAt")
    if target == TaskStatus.COMPLETED:
        task.completed_at = now
        changed.append("completedAt")
    elif target == TaskStatus.CANCELLED:
        task.cancelled_at = now
        changed.append("cancelledAt")
    task.status = target
    task.save()
    _event(organization=organization, user=user, task=task, type=event_type, action=action, changed_fields=changed)
    return task


# --- the patients area's erasure and merge hooks (registered in TasksConfig.ready) ------------------------------


def tasks_erase_for_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' tasks go with them, in the erasing transaction. No event is recorded for a
    task erased with its patient (the catalogue has no deletion event, and the erasure leaves no trace)."""
    Task.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def tasks_repoint_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's tasks now belong to the survivor; one task.updated per task moved (one INSERT)."""
    moved = list(Task.objects.for_org(organization).filter(patient_id=duplicate.pk).values_list("id", flat=True))
    if not moved:
        return
    Task.objects.for_org(organization).filter(id__in=moved).update(patient_id=survivor.pk, updated_at=timezone.now())
    emit_many(
        organization=organization,
        actor=Actor.system(),
        events=[
            PendingEvent(
                type="task.updated",
                subject_type="task",
                subject_id=task_id,
                data={"patientId": str(survivor.pk), "mergedPatientId": str(duplicate.pk)},
                action="patient_merged",
                changed_fields=("patientId",),
            )
            for task_id in moved
        ],
    )
