"""Wire shapes of the tasks area (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.core.fields import AwareDateTimeField, StrictUUIDField, TenantRelatedField, TextField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.journeys.public import Journey
from apps.patients.public import Patient
from apps.tasks.models import Priority, TaskStatus
from apps.tasks.renderers import TaskSerializer
from apps.tasks.selectors import VIEWS


class TaskWriteSerializer(StrictSerializer):
    title = TextField(min_length=1, max_length=200)
    description = TextField(max_length=5000, required=False, allow_blank=True, allow_null=True)
    due_at = AwareDateTimeField(required=False, allow_null=True)
    priority = serializers.ChoiceField(choices=Priority.choices, required=False)
    assignee_id = StrictUUIDField(
        required=False,
        allow_null=True,
        help_text="The user id of a member of the practice (GET /organization/members). Defaults to the creator.",
    )
    patient_id = TenantRelatedField(Patient, required=False, allow_null=True, source="patient")
    journey_id = TenantRelatedField(
        Journey,
        required=False,
        allow_null=True,
        source="journey",
        help_text="A journey of the task's patient. Without patientId the task takes the journey's patient; a "
        "journey of another patient than patientId is 400. null unlinks.",
    )

    def validate_title(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value


class TaskCreateSerializer(TaskWriteSerializer):
    class Meta:
        ref_name = "TaskCreate"


class TaskUpdateSerializer(TaskWriteSerializer):
    class Meta:
        ref_name = "TaskUpdate"


TaskPageSerializer = offset_page_serializer(TaskSerializer, "TaskPage")


class TaskListQuerySerializer(OffsetQuerySerializer):
    view = serializers.ChoiceField(
        choices=VIEWS,
        default="all",
        help_text="mine: assigned to me; overdue: open and due before now; due_today: open and due today in the "
        "practice's timezone (UTC until the practice has one); all: every task.",
    )
    assignee_id = StrictUUIDField(required=False, help_text="Tasks assigned to this member (user id).")
    patient_id = StrictUUIDField(required=False, help_text="Tasks about this patient.")
    journey_id = StrictUUIDField(required=False, help_text="Tasks linked to this journey.")
    status = serializers.ChoiceField(choices=TaskStatus.choices, required=False)
    priority = serializers.ChoiceField(choices=Priority.choices, required=False)
    due_before = AwareDateTimeField(required=False, help_text="Due strictly before this instant (with an offset).")
    due_after = AwareDateTimeField(required=False, help_text="Due at or after this instant (with an offset).")

    def validate(self, attrs):
        before, after = attrs.get("due_before"), attrs.get("due_after")
        if before is not None and after is not None and after >= before:
            raise serializers.ValidationError({"dueAfter": ["must be earlier than dueBefore"]})
        return attrs
