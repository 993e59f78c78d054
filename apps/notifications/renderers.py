"""The wire shape of a notification: the API's schema and the frames pushed over /today/ws share it."""

from djangorestframework_camel_case.util import camelize
from rest_framework import serializers

from apps.notifications.models import Kind


class NotificationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=Kind.choices)
    title = serializers.CharField(help_text="Short; no patient free text beyond what you may see anyway.")
    subject_type = serializers.CharField(help_text="What it is about: conversation, task, patient, teamchat_message…")
    subject_id = serializers.CharField()
    data = serializers.DictField(help_text="Ids and small facts for the client to link to (camelCase keys).")
    read = serializers.SerializerMethodField()
    read_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Notification"

    def get_read(self, notification) -> bool:
        return notification.read_at is not None


def notification_frame(notification) -> dict:
    """The notification as the API renders it (camelCase), for a live frame."""
    return camelize(dict(NotificationSerializer(notification).data))
