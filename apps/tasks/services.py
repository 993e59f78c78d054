"""Writes of the tasks area. Each runs in one transaction and records its event in the outbox.

Events carry ids and field names only (never the title or description): data.action, data.changedFields and
the ids of the assignee, patient and journey. A task about a patient also writes its creation and transitions on the
patient's timeline (ids only), in the same transaction.
"""

from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Membership
from apps.core.errors import NotFound, ValidationFailed
from apps.core.writes import assign_fields
from apps.events.services import Actor, emit
from apps.patients.public import Activity, PatientMerged, timeline_record
from apps.tasks.errors import TaskTransitionNotAllowed
from apps.tasks.hooks import erase_tasks_of_patients as tasks_erase_for_patients  # noqa: F401  (former home)
from apps.tasks.hooks import repoint_tasks_to_survivor as tasks_repoint_to_survivor  # noqa: F401
from apps.tasks.models import Task, TaskStatus

# Fields a create or update may set (validated data of the API serializers, snake_case).
WRITABLE = ("title", "description", "due_at", "priority", "assignee_id", "patient", "journey")
# Related records among them → their wire names.
RELATED = {"patient": "patientId", "journey": "journeyId"}
# Set the given fields; the camelCase names of those whose value changed.
_assign = partial(
    assign_fields, fields=WRITABLE, relations={key: key for key in RELATED}, blank_when_none=("description",)
)


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system()


def _ids(task: Task) -> dict[str, Any]:
    return {
        "status": task.status,
        "priority": task.priority,
        "assigneeId": str(task.assignee_id) if task.assignee_id else None,
        "patientId": str(task.patient_id) if task.patient_id else None,
        "journeyId": str(task.journey_id) if task.journey_id else None,
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


def _with_journey_patient(*, task: Task | None, data: dict[str, Any]) -> dict[str, Any]:
    """A task linked to a journey is about the journey's patient. Given a journey without patientId, the task takes
    the journey's patient; a patientId of someone else is refused (400), as is clearing the patient of a task that
    keeps its journey. `task` is None on create (where patientId null is the same as leaving it out)."""
    if "journey" in data:
        journey = data["journey"]
    elif task is not None and task.journey_id is not None and "patient" in data:
        journey = task.journey
    else:
        return data
    if journey is None:
        return data
    patient = data.get("patient")
    if patient is None:
        if "patient" in data and task is not None:
            raise ValidationFailed.for_field(
                "patientId", "cannot be cleared while the task is linked to a journey (clear journeyId with it)"
            )
        return {**data, "patient": journey.patient}
    if patient.pk != journey.patient_id:
        if "journey" in data:
            raise ValidationFailed.for_field("journeyId", "is a journey of another patient than patientId")
        raise ValidationFailed.for_field(
            "patientId", "is not the patient of the task's journey (change or clear journeyId with it)"
        )
    return data


# Task transitions (and creation) → the entry they write on the task's patient's timeline.
TIMELINE_KINDS = {
    "created": Activity.Kind.TASK_CREATED,
    "completed": Activity.Kind.TASK_COMPLETED,
    "cancelled": Activity.Kind.TASK_CANCELLED,
    "reopened": Activity.Kind.TASK_REOPENED,
}


def _timeline(*, organization, user, task: Task, action: str) -> None:
    """The task's entry on its patient's timeline: ids only (the title and description stay on the task)."""
    if task.patient_id is None:
        return
    data = {"taskId": str(task.id), **_ids(task)}
    del data["patientId"]  # the entry belongs to the patient (and follows a merge to the survivor)
    timeline_record(
        organization=organization, user=user, patient_id=task.patient_id, kind=TIMELINE_KINDS[action], data=data
    )


@transaction.atomic
def task_create(*, organization, user, data: dict[str, Any]) -> Task:
    """A new open task. Without assigneeId it is assigned to its creator (when a person creates it)."""
    data = dict(data)
    if "assignee_id" not in data:
        data["assignee_id"] = user.pk if user is not None else None
    _check_assignee(organization=organization, user_id=data["assignee_id"])
    data = _with_journey_patient(task=None, data=data)
    _check_patient(data.get("patient"))
    task = Task(organization=organization, created_by=user)
    _assign(task, data)
    task.save(force_insert=True)
    _event(organization=organization, user=user, task=task, type="task.created", action="created")
    _timeline(organization=organization, user=user, task=task, action="created")
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
    data = _with_journey_patient(task=task, data=data)
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
    _timeline(organization=organization, user=user, task=task, action=action)
    return task
