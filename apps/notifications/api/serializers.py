"""Wire shapes of the notifications area (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.core.serializers import StrictSerializer
from apps.notifications.models import Kind
from apps.notifications.renderers import NotificationSerializer


class NotificationPageSerializer(serializers.Serializer):
    items = NotificationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "NotificationPage"


class NotificationListQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False, help_text="nextCursor of the previous page.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, help_text="1 to 100, default 25.")
    unread = serializers.BooleanField(required=False, help_text="true: unread only.")


class UnreadCountSerializer(serializers.Serializer):
    count = serializers.IntegerField()

    class Meta:
        ref_name = "NotificationUnreadCount"


class ReadAllSerializer(serializers.Serializer):
    updated = serializers.IntegerField(help_text="How many were unread and are read now.")
    unread_count = serializers.IntegerField()

    class Meta:
        ref_name = "NotificationReadAll"


class PreferenceSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Kind.choices)
    label = serializers.CharField()
    in_app = serializers.BooleanField(help_text="Shown in your feed and pushed live; off: nothing is stored.")

    class Meta:
        ref_name = "NotificationPreference"


class PreferencesSerializer(serializers.Serializer):
    preferences = PreferenceSerializer(many=True)

    class Meta:
        ref_name = "NotificationPreferences"


class PreferenceChangeSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=Kind.choices)
    in_app = serializers.BooleanField()

    class Meta:
        ref_name = "NotificationPreferenceChange"

    def to_internal_value(self, data):
        if isinstance(data, dict) and "in_app" in data and not isinstance(data["in_app"], bool):
            raise serializers.ValidationError({"inApp": ["must be true or false"]})
        return super().to_internal_value(data)


class PreferencesUpdateSerializer(StrictSerializer):
    preferences = PreferenceChangeSerializer(many=True, allow_empty=False)

    class Meta:
        ref_name = "NotificationPreferencesUpdate"

    def validate_preferences(self, value):
        kinds = [item["kind"] for item in value]
        if len(kinds) != len(set(kinds)):
            raise serializers.ValidationError("each kind may appear once")
        return value
