"""The actions of a rule: each is planned (its target resolved, reading only) and then done through the owning
area's public services, in a transaction of its own.

`plan` is what a dry run shows; `perform` does a planned action. A plan that finds no target (no patient, no open
journey in the stage's pipeline, no connection for the template's channel) is a skipped action, not a failure.
"""

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from apps.accounts.models import Membership
from apps.campaigns.public import MessageTemplate, template_send
from apps.conversations.public import connections_of
from apps.journeys.public import Journey, JourneyStatus, Stage, journey_move
from apps.patients.public import Patient, patient_update, patients_bulk_tags
from apps.tasks.public import Task, TaskStatus, task_create

NO_PATIENT = "NO_PATIENT"
NO_JOURNEY = "NO_JOURNEY"
NO_CONNECTION = "NO_CONNECTION"
GONE = "TARGET_GONE"


@dataclass
class Plan:
    type: str
    target: dict = field(default_factory=dict)
    skip: str | None = None  # why the action has nothing to act on


def _member_for_role(organization, role: str):
    """The member of `role` with the fewest open tasks (the longest-standing one on a tie); None without one."""
    members = list(
        Membership.objects.for_org(organization)
        .filter(role=role)
        .order_by("created_at", "id")
        .values_list("user_id", flat=True)
    )
    if not members:
        return None
    load = dict(
        Task.objects.for_org(organization)
        .filter(assignee_id__in=members, status=TaskStatus.OPEN)
        .values("assignee_id")
        .annotate(n=Count("id"))
        .values_list("assignee_id", "n")
    )
    return min(members, key=lambda user_id: load.get(user_id, 0))


def _journey_for(organization, subject, stage: Stage):
    if subject.journey_id:
        return Journey.objects.for_org(organization).filter(id=subject.journey_id).first()
    if subject.patient is None:
        return None
    return (
        Journey.objects.for_org(organization)
        .filter(patient_id=subject.patient.id, pipeline_id=stage.pipeline_id, status=JourneyStatus.OPEN)
        .order_by("-updated_at", "-id")
        .first()
    )


def plan(organization, action: dict, subject) -> Plan:
    kind, params = action["type"], action["params"]
    patient = subject.patient
    patient_id = str(patient.id) if patient else None
    if kind == "create_task":
        assignee = params.get("assignee_id")
        if params.get("assignee_role"):
            assignee = _member_for_role(organization, params["assignee_role"])
        due = params.get("due_in_minutes")
        return Plan(
            kind,
            {
                "title": params["title"],
                "assigneeId": str(assignee) if assignee else None,
                "assigneeRole": params.get("assignee_role"),
                "priority": params.get("priority", "normal"),
                "dueAt": (timezone.now() + timedelta(minutes=due)).isoformat() if due is not None else None,
                "patientId": patient_id,
                "journeyId": subject.journey_id,
            },
        )
    if patient is None and kind != "move_stage":
        return Plan(kind, {}, NO_PATIENT)
    if kind == "send_template":
        template = MessageTemplate.objects.for_org(organization).filter(id=params["template_id"]).first()
        if template is None:
            return Plan(kind, {"templateId": params["template_id"]}, GONE)
        connection = connections_of(organization=organization, kind=template.channel).exclude(status="disconnected")
        connection = connection.first()
        target = {"patientId": patient_id, "templateId": str(template.id), "channel": template.channel}
        if connection is None:
            return Plan(kind, target, NO_CONNECTION)
        return Plan(kind, {**target, "connectionId": str(connection.id)})
    if kind == "move_stage":
        stage = Stage.objects.for_org(organization).filter(id=params["stage_id"]).first()
        if stage is None:
            return Plan(kind, {"stageId": params["stage_id"]}, GONE)
        journey = _journey_for(organization, subject, stage)
        if journey is None:
            return Plan(kind, {"stageId": str(stage.id), "patientId": patient_id}, NO_JOURNEY)
        return Plan(
            kind, {"journeyId": str(journey.id), "stageId": str(stage.id), "fromStageId": str(journey.stage_id)}
        )
    if kind in ("add_tag", "remove_tag"):
        return Plan(kind, {"patientId": patient_id, "tagId": params["tag_id"]})
    return Plan(kind, {"patientId": patient_id, "status": params["status"]})  # set_patient_status


def perform(organization, step: Plan) -> dict:
    """Do a planned action in its own transaction. Returns what it did (ids); raises the services' errors."""
    target = step.target
    with transaction.atomic():
        if step.type == "create_task":
            data = {
                "title": target["title"],
                "assignee_id": uuid.UUID(target["assigneeId"]) if target["assigneeId"] else None,
                "priority": target["priority"],
                "due_at": datetime.fromisoformat(target["dueAt"]) if target["dueAt"] else None,
            }
            if target["patientId"]:
                data["patient"] = Patient.objects.for_org(organization).get(id=target["patientId"])
            if target["journeyId"]:
                journey = Journey.objects.for_org(organization).filter(id=target["journeyId"]).first()
                if journey is not None and str(journey.patient_id) == target["patientId"]:
                    data["journey"] = journey
            task = task_create(organization=organization, user=None, data=data)
            return {"taskId": str(task.id)}
        if step.type == "send_template":
            sent = template_send(
                organization=organization,
                user=None,
                template=MessageTemplate.objects.for_org(organization).get(id=target["templateId"]),
                patient=Patient.objects.for_org(organization).get(id=target["patientId"]),
                connection=connections_of(organization=organization).get(id=target["connectionId"]),
            )
            return {"messageId": str(sent.message_id)}
        if step.type == "move_stage":
            journey = journey_move(
                organization=organization,
                user=None,
                journey=Journey.objects.for_org(organization).get(id=target["journeyId"]),
                stage=Stage.objects.for_org(organization).get(id=target["stageId"]),
            )
            return {"journeyId": str(journey.id), "stageId": str(journey.stage_id)}
        if step.type in ("add_tag", "remove_tag"):
            tag_ids = [uuid.UUID(target["tagId"])]
            result = patients_bulk_tags(
                organization=organization,
                user=None,
                patient_ids=[uuid.UUID(target["patientId"])],
                add_tag_ids=tag_ids if step.type == "add_tag" else [],
                remove_tag_ids=tag_ids if step.type == "remove_tag" else [],
            )
            return {"changed": bool(result.updated)}
        patient = Patient.objects.for_org(organization).get(id=target["patientId"])
        patient = patient_update(
            organization=organization, user=None, patient=patient, data={"status": target["status"]}
        )
        return {"status": patient.status}
