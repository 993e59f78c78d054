"""Shared helpers of the tasks tests."""

import uuid

from django.test import Client

from apps.events.models import Event
from apps.patients.models import Activity
from apps.tasks.models import Task

TASKS = "/tasks"


def post_json(client: Client, path: str, data=None):
    return client.post(path, {} if data is None else data, content_type="application/json")


def patch_json(client: Client, path: str, data):
    return client.patch(path, data, content_type="application/json")


def url(task, action: str = "") -> str:
    task_id = task if isinstance(task, (str, uuid.UUID)) else task.id if hasattr(task, "id") else task["id"]
    return f"{TASKS}/{task_id}" + (f"/{action}" if action else "")


def make_task(organization, **fields) -> Task:
    fields.setdefault("title", "Call back about the quote")
    return Task.objects.create(organization=organization, **fields)


def snapshot(organization) -> dict:
    """Everything a refused task request must leave untouched (tasks, events, timeline entries)."""
    return {
        "tasks": sorted(
            Task.objects.for_org(organization).values_list(
                "id",
                "title",
                "description",
                "status",
                "priority",
                "due_at",
                "assignee_id",
                "patient_id",
                "journey_id",
                "updated_at",
            )
        ),
        "events": sorted(Event.objects.for_org(organization).values_list("id", flat=True)),
        "timeline": sorted(Activity.objects.for_org(organization).values_list("id", flat=True)),
    }


def task_events(organization, task_id=None, type: str | None = None) -> list[Event]:
    events = Event.objects.for_org(organization).filter(subject_type="task")
    if task_id is not None:
        events = events.filter(subject_id=str(task_id))
    if type:
        events = events.filter(type=type)
    return list(events.order_by("created_at", "id"))
