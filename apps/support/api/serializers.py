from rest_framework import serializers

from apps.core.fields import TextField
from apps.core.serializers import StrictSerializer
from apps.support.models import BODY_MAX
from apps.support.renderers import SupportMessageSerializer


class SupportMessageCreateSerializer(StrictSerializer):
    body = TextField(min_length=1, max_length=BODY_MAX, help_text="Plain text; leading and trailing spaces trimmed.")

    class Meta:
        ref_name = "SupportMessageCreate"


class SupportMessagePageSerializer(serializers.Serializer):
    items = SupportMessageSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for older messages.")

    class Meta:
        ref_name = "SupportMessagePage"


class SupportThreadSerializer(serializers.Serializer):
    id = serializers.UUIDField(allow_null=True, help_text="null until you write for the first time.")
    organization_id = serializers.UUIDField(allow_null=True, help_text="The practice you last wrote from.")
    last_message_at = serializers.DateTimeField(allow_null=True)
    awaiting_reply = serializers.BooleanField(help_text="You wrote last: support will reply here.")
    unread_reply_count = serializers.IntegerField(help_text="Replies from support since you last read the thread.")

    class Meta:
        ref_name = "SupportThread"


class PageQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False, help_text="nextCursor of the previous page.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, help_text="Page size, 50 by default.")
