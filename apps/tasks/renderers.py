"""How a task row reads on the wire: the tasks routes and the Today view render it."""

from rest_framework import serializers

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
