"""How a task row reads on the wire: the tasks routes and the Today view render it."""

from rest_framework import serializers

from apps.core.wire import Camelized, datetime_string, uuid_string
from apps.tasks.models import Priority, TaskStatus


class TaskSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    description = serializers.CharField()
    due_at = serializers.DateTimeField(allow_null=True)
    priority = serializers.ChoiceField(choices=Priority.choices)
    status = serializers.ChoiceField(choices=TaskStatus.choices)
    completed_at = serializers.DateTimeField(allow_null=True)
    cancelled_at = serializers.DateTimeField(allow_null=True)
    assignee_id = serializers.UUIDField(allow_null=True)
    patient_id = serializers.UUIDField(allow_null=True)
    journey_id = serializers.UUIDField(allow_null=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Task"


# The columns a task row is rendered from, read with .values() (the Today view).
TASK_VALUES = (
    "id",
    "title",
    "description",
    "due_at",
    "priority",
    "status",
    "completed_at",
    "cancelled_at",
    "assignee_id",
    "patient_id",
    "journey_id",
    "created_by_id",
    "created_at",
    "updated_at",
)


def task_row(values: dict) -> Camelized:
    """TaskSerializer's output as the renderer writes it (camelCase keys, same order and values) for a
    .values(*TASK_VALUES) row; tests/today prove it identical."""
    return Camelized(
        id=str(values["id"]),
        title=values["title"],
        description=values["description"],
        dueAt=datetime_string(values["due_at"]),
        priority=values["priority"],
        status=values["status"],
        completedAt=datetime_string(values["completed_at"]),
        cancelledAt=datetime_string(values["cancelled_at"]),
        assigneeId=uuid_string(values["assignee_id"]),
        patientId=uuid_string(values["patient_id"]),
        journeyId=uuid_string(values["journey_id"]),
        createdById=uuid_string(values["created_by_id"]),
        createdAt=datetime_string(values["created_at"]),
        updatedAt=datetime_string(values["updated_at"]),
    )
