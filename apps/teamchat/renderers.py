"""How team chat rows read on the wire: the REST routes and the /today/ws pushes render them the same way."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.renderers import camelize
from apps.teamchat.models import Room

_NULLABLE_UUID = serializers.UUIDField(allow_null=True)


class TeamChatMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    channel_id = serializers.SerializerMethodField(help_text="The channel's id; null for a direct thread's message.")
    thread_id = serializers.SerializerMethodField(help_text="The direct thread's id; null for a channel's message.")
    author_id = serializers.UUIDField(allow_null=True, help_text="null once the author's account is gone.")
    body = serializers.CharField(help_text="Empty once deleted.")
    mention_user_ids = serializers.ListField(
        child=serializers.UUIDField(), help_text="The members mentioned (user ids); empty once deleted."
    )
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True)
    deleted_at = serializers.DateTimeField(allow_null=True)
    deleted = serializers.SerializerMethodField(help_text="A tombstone: the message was deleted by its author.")

    class Meta:
        ref_name = "TeamChatMessage"

    @extend_schema_field(_NULLABLE_UUID)
    def get_channel_id(self, message) -> str | None:
        return None if message.room.kind == Room.Kind.DIRECT else str(message.room_id)

    @extend_schema_field(_NULLABLE_UUID)
    def get_thread_id(self, message) -> str | None:
        return str(message.room_id) if message.room.kind == Room.Kind.DIRECT else None

    def get_deleted(self, message) -> bool:
        return message.deleted_at is not None


class TeamChatChannelSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    visibility = serializers.ChoiceField(
        source="kind",
        choices=[Room.Kind.PUBLIC, Room.Kind.PRIVATE],
        help_text="public: every member of the practice sees it and may join; private: its members only.",
    )
    name = serializers.CharField()
    created_by_id = serializers.UUIDField(allow_null=True)
    archived_at = serializers.DateTimeField(allow_null=True)
    is_member = serializers.BooleanField(help_text="You are a member of the channel.")
    member_count = serializers.IntegerField()
    unread_count = serializers.IntegerField(help_text="Messages after your read mark, not yours, not deleted.")
    unread_mention_count = serializers.IntegerField(help_text="Of those, the ones that mention you.")
    last_message_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "TeamChatChannel"


class TeamChatThreadSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    member_ids = serializers.SerializerMethodField(help_text="Every member of the thread (user ids), you included.")
    unread_count = serializers.IntegerField()
    unread_mention_count = serializers.IntegerField()
    last_message_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "TeamChatThread"

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_member_ids(self, room) -> list[str]:
        return [str(member.user_id) for member in room.current_members]


def message_data(message) -> dict:
    """A message as pushed over /today/ws (camelCase, as the REST routes render it)."""
    return camelize(TeamChatMessageSerializer(message).data)
