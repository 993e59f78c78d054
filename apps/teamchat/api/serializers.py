"""Wire shapes of team chat requests (camelCase on the wire; snake_case here). Responses: apps.teamchat.renderers."""

from rest_framework import serializers

from apps.core.fields import StrictUUIDField, TextField
from apps.core.serializers import (
    NonEmptyPatchSerializer,
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.teamchat.models import BODY_MAX, DIRECT_OTHERS_MAX, MENTIONS_MAX, NAME_MAX, Room
from apps.teamchat.renderers import TeamChatChannelSerializer, TeamChatMessageSerializer, TeamChatThreadSerializer

VISIBILITIES = [Room.Kind.PUBLIC, Room.Kind.PRIVATE]


def _user_ids(help_text: str, *, max_length: int, min_length: int = 0, required: bool = True):
    return serializers.ListField(
        child=StrictUUIDField(),
        min_length=min_length,
        max_length=max_length,
        required=required,
        help_text=help_text,
    )


class ChannelCreateSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=NAME_MAX, help_text="Unique among the practice's active channels.")
    visibility = serializers.ChoiceField(
        choices=VISIBILITIES,
        default=Room.Kind.PUBLIC,
        help_text="public (default): every member sees it and may join; private: its members only.",
    )
    member_ids = _user_ids("Members of the practice (user ids) to add besides you.", max_length=100, required=False)

    class Meta:
        ref_name = "TeamChatChannelCreate"


class ChannelUpdateSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=NAME_MAX)

    class Meta:
        ref_name = "TeamChatChannelUpdate"


class ChannelListQuerySerializer(OffsetQuerySerializer):
    joined = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="true: channels you are in; false: the others."
    )
    visibility = serializers.ChoiceField(choices=VISIBILITIES, required=False)
    include_archived = serializers.BooleanField(default=False)
    search = TextField(required=False, max_length=NAME_MAX, help_text="Part of the name, any case.")


class MembersAddSerializer(StrictSerializer):
    user_ids = _user_ids(
        "Members of the practice (user ids); those already in are left as they are.", max_length=100, min_length=1
    )

    class Meta:
        ref_name = "TeamChatMembersAdd"


class ThreadOpenSerializer(StrictSerializer):
    member_ids = _user_ids(
        f"The other members of the practice in the thread (user ids; you are always in it): 1 for a one-to-one "
        f"thread, up to {DIRECT_OTHERS_MAX} for a small group.",
        max_length=50,
        min_length=1,
    )

    class Meta:
        ref_name = "TeamChatThreadOpen"


class MessageCreateSerializer(StrictSerializer):
    body = TextField(min_length=1, max_length=BODY_MAX, help_text="Plain text; leading and trailing spaces trimmed.")
    mention_user_ids = _user_ids(
        "Members mentioned (user ids): each a member of the practice and of this channel or thread. Each is "
        "notified (kind mention), except you.",
        max_length=MENTIONS_MAX,
        required=False,
    )

    class Meta:
        ref_name = "TeamChatMessageCreate"


class MessageUpdateSerializer(NonEmptyPatchSerializer):
    body = TextField(min_length=1, max_length=BODY_MAX, required=False)
    mention_user_ids = _user_ids(
        "Replaces the mentions (members newly mentioned are notified); not sent: kept.",
        max_length=MENTIONS_MAX,
        required=False,
    )

    class Meta:
        ref_name = "TeamChatMessageUpdate"


class MarkReadSerializer(StrictSerializer):
    message_id = StrictUUIDField(
        required=False, help_text="Read up to this message of the room; without it, up to the latest."
    )

    class Meta:
        ref_name = "TeamChatMarkRead"


class PageQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False, help_text="nextCursor of the previous page.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, help_text="Page size, 50 by default.")


class ChannelMemberSerializer(serializers.Serializer):
    user_id = serializers.UUIDField()
    name = serializers.CharField(source="user.name")
    joined_at = serializers.DateTimeField(source="created_at")

    class Meta:
        ref_name = "TeamChatChannelMember"


class ChannelMemberListSerializer(serializers.Serializer):
    items = ChannelMemberSerializer(many=True)

    class Meta:
        ref_name = "TeamChatChannelMemberList"


class MessagePageSerializer(serializers.Serializer):
    items = TeamChatMessageSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for older messages.")

    class Meta:
        ref_name = "TeamChatMessagePage"


class ThreadPageSerializer(serializers.Serializer):
    items = TeamChatThreadSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "TeamChatThreadPage"


ChannelPageSerializer = offset_page_serializer(TeamChatChannelSerializer, "TeamChatChannelPage")


class UnreadItemSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=["channel", "thread"])
    unread_count = serializers.IntegerField()
    unread_mention_count = serializers.IntegerField()

    class Meta:
        ref_name = "TeamChatUnreadItem"


class UnreadSummarySerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="Unread messages in every channel and thread you are in.")
    mentions = serializers.IntegerField(help_text="Of those, the ones that mention you.")
    items = UnreadItemSerializer(many=True, help_text="The rooms with unread messages, latest activity first.")

    class Meta:
        ref_name = "TeamChatUnreadSummary"


class RoomUnreadSerializer(serializers.Serializer):
    unread_count = serializers.IntegerField()
    unread_mention_count = serializers.IntegerField()
    total_unread_count = serializers.IntegerField()
    total_unread_mention_count = serializers.IntegerField()

    class Meta:
        ref_name = "TeamChatRoomUnread"
