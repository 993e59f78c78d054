"""Reads of team chat. A room is visible to a member when it is a public channel of their practice or they are one
of its members; everything else (another practice's rooms, private channels and threads they are not in) is not
there for them."""

from dataclasses import dataclass

from django.db.models import Count, Exists, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Lower

from apps.accounts.models import Membership
from apps.teamchat.models import Message, Room, RoomMember

CHANNEL_KINDS = (Room.Kind.PUBLIC, Room.Kind.PRIVATE)


def current_members(organization) -> QuerySet[RoomMember]:
    """Room memberships of people who are still members of the practice (a removed member's rows stay behind, and
    count for nothing)."""
    in_practice = Membership.objects.for_org(organization).filter(user_id=OuterRef("user_id"))
    return RoomMember.objects.for_org(organization).filter(Exists(in_practice))


def _mine(organization, user) -> QuerySet[RoomMember]:
    return RoomMember.objects.for_org(organization).filter(room_id=OuterRef("id"), user_id=user.pk)


def visible_rooms(*, organization, user) -> QuerySet[Room]:
    return Room.objects.for_org(organization).filter(Q(kind=Room.Kind.PUBLIC) | Exists(_mine(organization, user)))


def _count(queryset: QuerySet) -> Coalesce:
    """COUNT(*) of a correlated subquery, 0 when nothing matches."""
    counted = queryset.order_by().values("room_id").annotate(n=Count("id")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def _unread(organization, user, *, mentions: bool = False) -> Coalesce:
    """Messages after the annotated `my_read_seq`, not deleted, not the user's own (none when not a member)."""
    messages = (
        Message.objects.for_org(organization)
        .filter(room_id=OuterRef("id"), seq__gt=OuterRef("my_read_seq"), deleted_at__isnull=True)
        .exclude(author_id=user.pk)
    )
    if mentions:
        messages = messages.filter(mention_user_ids__contains=[user.pk])
    return _count(messages)


def with_reader(rooms: QuerySet[Room], *, organization, user) -> QuerySet[Room]:
    """Each room annotated for this reader: is_member, my_read_seq, unread_count, unread_mention_count."""
    mine = _mine(organization, user)
    return rooms.annotate(
        is_member=Exists(mine),
        my_read_seq=Subquery(mine.values("read_seq")[:1]),
    ).annotate(
        unread_count=_unread(organization, user),
        unread_mention_count=_unread(organization, user, mentions=True),
    )


def _channel_rows(rooms: QuerySet[Room], *, organization, user) -> QuerySet[Room]:
    """Channels annotated for this reader, with their member counts."""
    rooms = with_reader(rooms, organization=organization, user=user)
    return rooms.annotate(member_count=_count(current_members(organization).filter(room_id=OuterRef("id"))))


# --- channels -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelQuery:
    joined: bool | None = None
    visibility: str | None = None
    include_archived: bool = False
    search: str | None = None


def channels_of(*, organization, user, query: ChannelQuery = ChannelQuery()) -> QuerySet[Room]:
    """The channels the member can see, annotated for them, by name."""
    rooms = visible_rooms(organization=organization, user=user).filter(kind__in=CHANNEL_KINDS)
    if not query.include_archived:
        rooms = rooms.filter(archived_at__isnull=True)
    if query.visibility:
        rooms = rooms.filter(kind=query.visibility)
    if query.search:
        rooms = rooms.filter(name__icontains=query.search)
    rooms = _channel_rows(rooms, organization=organization, user=user)
    if query.joined is not None:
        rooms = rooms.filter(is_member=query.joined)
    return rooms.order_by(Lower("name"), "id")


def channel_row(*, organization, user, channel_id) -> Room | None:
    """One channel annotated for this reader, whether or not they may still see it: the answer to a change they
    just made (a private channel they left included). Reads go through room_get first."""
    rooms = Room.objects.for_org(organization).filter(id=channel_id, kind__in=CHANNEL_KINDS)
    return _channel_rows(rooms, organization=organization, user=user).first()


def channel_members(*, organization, room: Room) -> QuerySet[RoomMember]:
    return current_members(organization).filter(room=room).select_related("user").order_by("created_at", "id")


# --- direct threads -------------------------------------------------------------------------------------------


def threads_of(*, organization, user) -> QuerySet[Room]:
    """The member's direct threads, annotated for them, with their current members prefetched (one query)."""
    rooms = Room.objects.for_org(organization).filter(kind=Room.Kind.DIRECT, id__in=_my_room_ids(organization, user))
    members = Prefetch(
        "memberships", queryset=current_members(organization).order_by("created_at", "id"), to_attr="current_members"
    )
    return with_reader(rooms, organization=organization, user=user).prefetch_related(members)


def _my_room_ids(organization, user) -> QuerySet:
    return RoomMember.objects.for_org(organization).filter(user_id=user.pk).values("room_id")


def thread_get(*, organization, user, thread_id) -> Room | None:
    return threads_of(organization=organization, user=user).filter(id=thread_id).first()


# --- rooms and messages ----------------------------------------------------------------------------------------


def room_get(*, organization, user, room_id, kinds) -> Room | None:
    """A room of these kinds the member can see (no annotations)."""
    return visible_rooms(organization=organization, user=user).filter(id=room_id, kind__in=kinds).first()


def is_member(*, organization, room: Room, user_id) -> bool:
    return current_members(organization).filter(room=room, user_id=user_id).exists()


def member_ids(*, organization, room: Room) -> list:
    """The room's current members (user ids): who is told about its messages."""
    return list(current_members(organization).filter(room=room).values_list("user_id", flat=True))


def messages_of(*, organization, room: Room) -> QuerySet[Message]:
    """The room's history, unordered (the paginator orders it newest first)."""
    return Message.objects.for_org(organization).filter(room=room).select_related("room")


def message_get(*, organization, user, message_id) -> Message | None:
    """A message of a room the member can see."""
    visible = visible_rooms(organization=organization, user=user).values("id")
    return (
        Message.objects.for_org(organization).filter(id=message_id, room_id__in=visible).select_related("room").first()
    )


def unread_summary(*, organization, user) -> dict:
    """The member's unread messages in each room they belong to (archived channels left out): one query."""
    rooms = Room.objects.for_org(organization).filter(id__in=_my_room_ids(organization, user), archived_at__isnull=True)
    rows = (
        with_reader(rooms, organization=organization, user=user)
        .filter(unread_count__gt=0)
        .order_by("-last_message_at", "id")
        .values("id", "kind", "unread_count", "unread_mention_count")
    )
    items = [
        {
            "id": row["id"],
            "kind": "thread" if row["kind"] == Room.Kind.DIRECT else "channel",
            "unread_count": row["unread_count"],
            "unread_mention_count": row["unread_mention_count"],
        }
        for row in rows
    ]
    return {
        "total": sum(item["unread_count"] for item in items),
        "mentions": sum(item["unread_mention_count"] for item in items),
        "items": items,
    }


def room_unread(*, organization, user, room: Room) -> dict:
    """This room's unread counts for the member, and their totals (one query)."""
    summary = unread_summary(organization=organization, user=user)
    mine = next((item for item in summary["items"] if item["id"] == room.id), None)
    return {
        "unread_count": mine["unread_count"] if mine else 0,
        "unread_mention_count": mine["unread_mention_count"] if mine else 0,
        "total_unread_count": summary["total"],
        "total_unread_mention_count": summary["mentions"],
    }
