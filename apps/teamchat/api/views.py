"""Team chat routes (tag "Team chat"): thin views that find the room the member can see, call one service or
selector, and render.

Every route needs teamchat:use (every role holds it) and a browser session: team chat is between people, so API keys
and OAuth tokens answer 403 BROWSER_SESSION_REQUIRED (no integration or AI agent reads colleagues' channels and
direct threads, or posts as a person)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.core.errors import NotFound, ValidationFailed
from apps.core.pagination import NewestFirstCursorPagination, offset_page
from apps.core.views import BaseApiView
from apps.teamchat import selectors, services
from apps.teamchat.api import serializers as s
from apps.teamchat.models import Message, Room
from apps.teamchat.renderers import TeamChatChannelSerializer, TeamChatMessageSerializer, TeamChatThreadSerializer

TAGS = ["Team chat"]
USE = "teamchat:use"
ACCESS = (
    "Permission teamchat:use (every role). Browser session only: team chat is between people, so an API key or OAuth "
    "token answers 403 BROWSER_SESSION_REQUIRED. "
)
CHANNEL_404 = "Another practice's channel, and a private channel you are not in, answer 404. "
THREAD_404 = "Another practice's thread, and a thread you are not in, answer 404. "
MANAGER = "Only the channel's creator or a member whose role holds teamchat:manage (owner, manager); others get 403. "


class MessagePagination(NewestFirstCursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50


class ThreadPagination(NewestFirstCursorPagination):
    ordering = ("-activity_at", "-id")


class TeamChatView(BaseApiView):
    permission = USE
    scope_area = "conversations"
    browser_session_only = True

    @property
    def actor(self):
        membership = self.membership
        membership.user = self.request.user  # the same person: no second read
        return membership

    def channel(self, id) -> Room:
        room = selectors.room_get(
            organization=self.organization, user=self.request.user, room_id=id, kinds=selectors.CHANNEL_KINDS
        )
        if room is None:
            raise NotFound("No such channel.")
        return room

    def thread(self, id) -> Room:
        room = selectors.room_get(
            organization=self.organization, user=self.request.user, room_id=id, kinds=[Room.Kind.DIRECT]
        )
        if room is None:
            raise NotFound("No such thread.")
        return room

    def render_channel(self, room: Room, status: int = 200) -> Response:
        fresh = selectors.channel_row(organization=self.organization, user=self.request.user, channel_id=room.id)
        return Response(TeamChatChannelSerializer(fresh).data, status=status)

    def render_thread(self, room: Room, status: int = 200) -> Response:
        fresh = selectors.thread_get(organization=self.organization, user=self.request.user, thread_id=room.id)
        return Response(TeamChatThreadSerializer(fresh).data, status=status)


# --- channels -------------------------------------------------------------------------------------------------


class ChannelListView(TeamChatView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channels_list",
        parameters=[s.ChannelListQuerySerializer],
        responses={200: s.ChannelPageSerializer},
        summary="The channels you can see: every public channel and the private ones you are in",
        description=ACCESS + "By name; offset paging. Filters: joined (true: yours; false: public ones you have "
        "not joined), visibility, search (part of the name), includeArchived (false by default). Each channel "
        "carries your unreadCount and unreadMentionCount (0 where you are not a member).",
    )
    def get(self, request):
        data = self.parse_query(s.ChannelListQuerySerializer).validated_data
        rows = selectors.channels_of(
            organization=self.organization,
            user=request.user,
            query=selectors.ChannelQuery(
                joined=data.get("joined"),
                visibility=data.get("visibility"),
                include_archived=data["include_archived"],
                search=data.get("search"),
            ),
        )
        total = rows.count()
        page = rows[data["offset"] : data["offset"] + data["limit"]]
        items = TeamChatChannelSerializer(page, many=True).data
        return offset_page(items, total, limit=data["limit"], offset=data["offset"])

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channels_create",
        request=s.ChannelCreateSerializer,
        responses={201: TeamChatChannelSerializer},
        summary="Create a channel (you are its first member)",
        description=ACCESS + "Public by default (every member of the practice sees it and may join) or private (its "
        "members only). memberIds must be members of the practice (400 naming them otherwise). A name another "
        "active channel has (any case) answers 409 CHANNEL_NAME_TAKEN. The members added are told live "
        "(teamchat.channel.updated).",
    )
    def post(self, request):
        data = self.parse_body(s.ChannelCreateSerializer).validated_data
        room = services.channel_create(
            organization=self.organization,
            actor=self.actor,
            name=data["name"],
            visibility=data["visibility"],
            member_ids=data.get("member_ids", []),
        )
        return self.render_channel(room, status=201)


class ChannelView(TeamChatView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channels_read",
        responses={200: TeamChatChannelSerializer},
        summary="One channel",
        description=ACCESS + CHANNEL_404,
    )
    def get(self, request, id):
        return self.render_channel(self.channel(id))

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channels_rename",
        request=s.ChannelUpdateSerializer,
        responses={200: TeamChatChannelSerializer},
        summary="Rename a channel",
        description=ACCESS + CHANNEL_404 + MANAGER + "A name another active channel has answers 409 "
        "CHANNEL_NAME_TAKEN; an archived channel 409 CHANNEL_ARCHIVED.",
    )
    def patch(self, request, id):
        room = self.channel(id)
        data = self.parse_body(s.ChannelUpdateSerializer).validated_data
        room = services.channel_rename(organization=self.organization, actor=self.actor, room_id=room.id, **data)
        return self.render_channel(room)


def _channel_action(*, operation_id: str, summary: str, description: str, act):
    """POST /team-chat/channels/{id}/<action> without a body: `act(view, room)` does it; the answer is the channel
    as the caller now sees it."""

    class ActionView(TeamChatView):
        error_statuses = ("409",)

        @extend_schema(
            tags=TAGS,
            operation_id=operation_id,
            request=None,
            responses={200: TeamChatChannelSerializer},
            summary=summary,
            description=ACCESS + CHANNEL_404 + description,
        )
        def post(self, request, id):
            room = act(self, self.channel(id))
            return self.render_channel(room)

    ActionView.__name__ = ActionView.__qualname__ = operation_id.title().replace("_", "") + "View"
    return ActionView


ChannelArchiveView = _channel_action(
    operation_id="teamchat_channels_archive",
    summary="Archive a channel (read-only from then on)",
    description=MANAGER + "An archived channel keeps its history; nobody posts, edits, joins or adds members until "
    "it is unarchived. Archiving twice changes nothing.",
    act=lambda view, room: services.channel_set_archived(
        organization=view.organization, actor=view.actor, room_id=room.id, archived=True
    ),
)
ChannelUnarchiveView = _channel_action(
    operation_id="teamchat_channels_unarchive",
    summary="Unarchive a channel",
    description=MANAGER + "409 CHANNEL_NAME_TAKEN when an active channel took its name meanwhile (rename that one "
    "first).",
    act=lambda view, room: services.channel_set_archived(
        organization=view.organization, actor=view.actor, room_id=room.id, archived=False
    ),
)
ChannelJoinView = _channel_action(
    operation_id="teamchat_channels_join",
    summary="Join a public channel",
    description="Private channels are joined by being added by a member. Messages before you joined count as "
    "read. Joining twice changes nothing; an archived channel answers 409 CHANNEL_ARCHIVED.",
    act=lambda view, room: services.channel_join(organization=view.organization, actor=view.actor, room_id=room.id),
)
ChannelLeaveView = _channel_action(
    operation_id="teamchat_channels_leave",
    summary="Leave a channel",
    description="Not a member: 404. A private channel you leave is no longer visible to you (404 afterwards); "
    "one left without members is archived.",
    act=lambda view, room: services.channel_remove_member(
        organization=view.organization, actor=view.actor, room_id=room.id, user_id=view.request.user.pk
    ),
)


class ChannelMembersView(TeamChatView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channel_members_list",
        responses={200: s.ChannelMemberListSerializer},
        summary="A channel's members",
        description=ACCESS + CHANNEL_404 + "Members of the practice in the channel, in the order they joined.",
    )
    def get(self, request, id):
        members = selectors.channel_members(organization=self.organization, room=self.channel(id))
        return Response({"items": s.ChannelMemberSerializer(members, many=True).data})

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channel_members_add",
        request=s.MembersAddSerializer,
        responses={200: TeamChatChannelSerializer},
        summary="Add members to a channel",
        description=ACCESS + CHANNEL_404 + "Any member of the channel may add members of the practice (400 naming "
        "userIds otherwise); not being a member of a public channel answers 409 CHANNEL_MEMBERSHIP_REQUIRED, an "
        "archived channel 409 CHANNEL_ARCHIVED. Those already in are left as they are; the new ones start with "
        "the history read.",
    )
    def post(self, request, id):
        room = self.channel(id)
        data = self.parse_body(s.MembersAddSerializer).validated_data
        room = services.channel_add_members(
            organization=self.organization, actor=self.actor, room_id=room.id, user_ids=data["user_ids"]
        )
        return self.render_channel(room)


class ChannelMemberView(TeamChatView):
    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channel_members_remove",
        responses={200: TeamChatChannelSerializer},
        summary="Remove a member from a channel (or yourself: leave)",
        description=ACCESS + CHANNEL_404 + "Removing someone else: " + MANAGER + "Someone not in the channel: 404. "
        "The person removed is told live. A private channel left without members is archived; removing yourself "
        "from a private channel answers with the channel as it is now, after which it answers 404 to you.",
    )
    def delete(self, request, id, user_id):
        room = self.channel(id)
        room = services.channel_remove_member(
            organization=self.organization, actor=self.actor, room_id=room.id, user_id=user_id
        )
        return self.render_channel(room)


# --- direct threads -------------------------------------------------------------------------------------------


class ThreadListView(TeamChatView):
    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_threads_list",
        parameters=[s.PageQuerySerializer],
        responses={200: s.ThreadPageSerializer},
        summary="Your direct threads, latest activity first",
        description=ACCESS + "Cursor paging (cursor, limit ≤ 100). Each thread lists its members and your unread "
        "counts.",
    )
    def get(self, request):
        self.parse_query(s.PageQuerySerializer)
        paginator = ThreadPagination()
        page = paginator.paginate_queryset(
            selectors.threads_of(organization=self.organization, user=request.user), request, view=self
        )
        return Response(paginator.get_paginated_response_data(TeamChatThreadSerializer(page, many=True).data))

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_threads_open",
        request=s.ThreadOpenSerializer,
        responses={200: TeamChatThreadSerializer, 201: TeamChatThreadSerializer},
        summary="Find or start the direct thread with these members",
        description=ACCESS + "One thread per set of members: the thread of exactly you and memberIds is answered "
        "(200) if it exists, else created (201). memberIds are the others (you are added; naming yourself changes "
        "nothing): members of the practice (400 naming them otherwise), 1 to 8 of them. A thread's members never "
        "change: another set is another thread.",
    )
    def post(self, request):
        data = self.parse_body(s.ThreadOpenSerializer).validated_data
        room, created = services.thread_open(
            organization=self.organization, actor=self.actor, member_ids=data["member_ids"]
        )
        return self.render_thread(room, status=201 if created else 200)


class ThreadView(TeamChatView):
    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_threads_read",
        responses={200: TeamChatThreadSerializer},
        summary="One direct thread",
        description=ACCESS + THREAD_404,
    )
    def get(self, request, id):
        return self.render_thread(self.thread(id))


# --- messages -------------------------------------------------------------------------------------------------


class RoomMessagesView(TeamChatView):
    error_statuses = ("409",)
    room_kind = "channel"

    def room(self, id) -> Room:
        return self.channel(id) if self.room_kind == "channel" else self.thread(id)

    def get(self, request, id):
        self.parse_query(s.PageQuerySerializer)
        room = self.room(id)
        paginator = MessagePagination()
        page = paginator.paginate_queryset(
            selectors.messages_of(organization=self.organization, room=room), request, view=self
        )
        return Response(paginator.get_paginated_response_data(TeamChatMessageSerializer(page, many=True).data))

    def post(self, request, id):
        room = self.room(id)
        data = self.parse_body(s.MessageCreateSerializer).validated_data
        message = services.message_post(
            organization=self.organization,
            actor=self.actor,
            room_id=room.id,
            body=data["body"],
            mention_user_ids=data.get("mention_user_ids", []),
        )
        return Response(TeamChatMessageSerializer(message).data, status=201)


HISTORY = (
    "Newest first, cursor paging (cursor, limit ≤ 100, 50 by default). Deleted messages stay as tombstones "
    "(deleted true, body empty). Reading does not move your read mark (POST …/read does). "
)
POSTING = (
    "mentionUserIds: members of the practice and of this {room} (400 naming them otherwise; none is fine); each "
    "is notified (kind mention), except you. The message counts as read by you; the {room}'s members get it live "
    "(teamchat.message.created on /today/ws). "
)


class ChannelMessagesView(RoomMessagesView):
    room_kind = "channel"

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channel_messages_list",
        parameters=[s.PageQuerySerializer],
        responses={200: s.MessagePageSerializer},
        summary="A channel's messages, newest first",
        description=ACCESS + CHANNEL_404 + HISTORY + "Members of the practice may read a public channel's history "
        "without joining it.",
    )
    def get(self, request, id):
        return super().get(request, id)

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channel_messages_post",
        request=s.MessageCreateSerializer,
        responses={201: TeamChatMessageSerializer},
        summary="Post a message in a channel",
        description=ACCESS + CHANNEL_404 + POSTING.format(room="channel") + "Not a member of a public channel: "
        "409 CHANNEL_MEMBERSHIP_REQUIRED (join it first); an archived channel: 409 CHANNEL_ARCHIVED.",
    )
    def post(self, request, id):
        return super().post(request, id)


class ThreadMessagesView(RoomMessagesView):
    room_kind = "thread"

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_thread_messages_list",
        parameters=[s.PageQuerySerializer],
        responses={200: s.MessagePageSerializer},
        summary="A direct thread's messages, newest first",
        description=ACCESS + THREAD_404 + HISTORY,
    )
    def get(self, request, id):
        return super().get(request, id)

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_thread_messages_post",
        request=s.MessageCreateSerializer,
        responses={201: TeamChatMessageSerializer},
        summary="Post a message in a direct thread",
        description=ACCESS + THREAD_404 + POSTING.format(room="thread"),
    )
    def post(self, request, id):
        return super().post(request, id)


class MessageView(TeamChatView):
    error_statuses = ("409",)

    def message(self, id) -> Message:
        message = selectors.message_get(organization=self.organization, user=self.request.user, message_id=id)
        if message is None:
            raise NotFound("No such message.")
        return message

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_messages_edit",
        request=s.MessageUpdateSerializer,
        responses={200: TeamChatMessageSerializer},
        summary="Edit your message (body and/or mentions)",
        description=ACCESS + "A message of another practice, or of a private channel or thread you are not in, "
        "answers 404; someone else's message 403. A deleted message answers 409 MESSAGE_DELETED, one in an "
        "archived channel 409 CHANNEL_ARCHIVED. Sets editedAt when something changed; members newly mentioned "
        "are notified; the room's members get teamchat.message.updated live.",
    )
    def patch(self, request, id):
        message = self.message(id)
        data = self.parse_body(s.MessageUpdateSerializer).validated_data
        message = services.message_edit(
            organization=self.organization,
            actor=self.actor,
            message_id=message.id,
            body=data.get("body"),
            mention_user_ids=data.get("mention_user_ids"),
        )
        return Response(TeamChatMessageSerializer(message).data)

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_messages_delete",
        responses={200: TeamChatMessageSerializer},
        summary="Delete your message (a tombstone stays)",
        description=ACCESS + "404 and 403 as for editing. The message stays in the history as a tombstone "
        "(deleted true, body and mentions empty, deletedAt set) and leaves the unread counts; deleting again "
        "changes nothing. The room's members get teamchat.message.deleted live.",
    )
    def delete(self, request, id):
        message = services.message_delete(
            organization=self.organization, actor=self.actor, message_id=self.message(id).id
        )
        return Response(TeamChatMessageSerializer(message).data)


# --- read marks and unread counts -----------------------------------------------------------------------------


class RoomReadView(TeamChatView):
    error_statuses = ("409",)
    room_kind = "channel"

    def post(self, request, id):
        room = self.channel(id) if self.room_kind == "channel" else self.thread(id)
        data = {}
        if int(request.META.get("CONTENT_LENGTH") or 0):
            data = self.parse_body(s.MarkReadSerializer).validated_data
        up_to = None
        if data.get("message_id") is not None:
            up_to = Message.objects.for_org(self.organization).filter(id=data["message_id"], room=room).first()
            if up_to is None:
                raise ValidationFailed.for_field("messageId", f"is not a message of this {self.room_kind}")
        unread = services.room_mark_read(organization=self.organization, actor=self.actor, room=room, up_to=up_to)
        return Response(s.RoomUnreadSerializer(unread).data)


READ = (
    "The body is optional: {{}} or none reads up to the latest message; messageId reads up to that message. The mark "
    "only moves forward. Answers your unread counts for this {room} and in total; your other tabs and devices get "
    "them live (teamchat.read). "
)


class ChannelReadView(RoomReadView):
    room_kind = "channel"

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_channels_mark_read",
        request=s.MarkReadSerializer,
        responses={200: s.RoomUnreadSerializer},
        summary="Mark a channel read (up to a message, or all of it)",
        description=ACCESS + CHANNEL_404 + READ.format(room="channel") + "Not a member: 409 "
        "CHANNEL_MEMBERSHIP_REQUIRED.",
    )
    def post(self, request, id):
        return super().post(request, id)


class ThreadReadView(RoomReadView):
    room_kind = "thread"

    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_threads_mark_read",
        request=s.MarkReadSerializer,
        responses={200: s.RoomUnreadSerializer},
        summary="Mark a direct thread read (up to a message, or all of it)",
        description=ACCESS + THREAD_404 + READ.format(room="thread"),
    )
    def post(self, request, id):
        return super().post(request, id)


class UnreadView(TeamChatView):
    @extend_schema(
        tags=TAGS,
        operation_id="teamchat_unread",
        responses={200: s.UnreadSummarySerializer},
        summary="Your unread team chat messages: per channel and thread, and in total",
        description=ACCESS + "Counts messages after your read mark that are not yours and not deleted, in the "
        "channels and threads you are in (archived channels left out); mentions counts those that mention you.",
    )
    def get(self, request):
        return Response(
            s.UnreadSummarySerializer(selectors.unread_summary(organization=self.organization, user=request.user)).data
        )
