"""Writes of team chat. Each runs in one transaction; what members see live is pushed after the commit (apps.teamchat
.live), and a mention notifies the member mentioned (apps.notifications). Team chat records no outbox event: the
catalogue has none for it, and colleagues' messages are never sent to webhooks or agents.

The callers (api views) have already found the room among those the member can see; here the room is locked by id
(select_for_update) so posts, renames and membership changes of one room happen one at a time.
"""

from django.db import IntegrityError, transaction
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from apps.accounts.models import Membership
from apps.accounts.roles import role_has_permission
from apps.core.errors import NotFound, ValidationFailed
from apps.notifications.public import Kind, notify
from apps.teamchat import live, selectors
from apps.teamchat.errors import (
    ChannelArchived,
    ChannelMembershipRequired,
    ChannelNameTaken,
    MessageDeleted,
    NotChannelManager,
    NotMessageAuthor,
)
from apps.teamchat.models import DIRECT_OTHERS_MAX, Message, Room, RoomMember

MANAGE = "teamchat:manage"


# --- checks ---------------------------------------------------------------------------------------------------


def _invalid(field: str, problems: list[str]) -> ValidationFailed:
    return ValidationFailed(f"{field}: {problems[0]}", details={"fields": {field: problems}})


def _unique(ids) -> list:
    return list(dict.fromkeys(ids))


def _practice_members(organization, user_ids, *, field: str) -> list:
    """The ids, deduplicated, each a member of the practice (400 naming the field and the ids otherwise: another
    practice's member is the same as nobody)."""
    ids = _unique(user_ids)
    found = set(Membership.objects.for_org(organization).filter(user_id__in=ids).values_list("user_id", flat=True))
    missing = [str(user_id) for user_id in ids if user_id not in found]
    if missing:
        raise _invalid(field, [f"{user_id} is not a member of this practice" for user_id in missing])
    return ids


def _where(room: Room) -> str:
    return "thread" if room.kind == Room.Kind.DIRECT else "channel"


def _mentions(organization, room: Room, user_ids) -> list:
    """Mentioned ids, deduplicated: members of the practice and of the room."""
    ids = _practice_members(organization, user_ids, field="mentionUserIds")
    in_room = set(
        selectors.current_members(organization).filter(room=room, user_id__in=ids).values_list("user_id", flat=True)
    )
    missing = [str(user_id) for user_id in ids if user_id not in in_room]
    if missing:
        raise _invalid("mentionUserIds", [f"{user_id} is not a member of this {_where(room)}" for user_id in missing])
    return ids


def _locked(organization, room_id) -> Room:
    room = Room.objects.for_org(organization).select_for_update().filter(id=room_id).first()
    if room is None:
        raise NotFound("No such channel or thread.")
    return room


def _require_manager(actor: Membership, room: Room) -> None:
    if room.created_by_id != actor.user_id and not role_has_permission(actor.role, MANAGE):
        raise NotChannelManager()


def _require_member(organization, room: Room, user_id) -> None:
    if not selectors.is_member(organization=organization, room=room, user_id=user_id):
        raise ChannelMembershipRequired()


def _require_active(room: Room) -> None:
    if room.archived_at is not None:
        raise ChannelArchived()


def _check_name_free(organization, room: Room, name: str) -> None:
    taken = (
        Room.objects.for_org(organization)
        .filter(kind__in=selectors.CHANNEL_KINDS, archived_at__isnull=True, name__iexact=name)
        .exclude(id=room.id)
        .exists()
    )
    if taken:
        raise ChannelNameTaken(name)


def _save_named(room: Room, **kwargs) -> None:
    """Save a channel whose active name must be unique; a racing twin is the same 409 as one seen first."""
    try:
        with transaction.atomic():
            room.save(**kwargs)
    except IntegrityError:
        raise ChannelNameTaken(room.name) from None


# --- channels -------------------------------------------------------------------------------------------------


@transaction.atomic
def channel_create(*, organization, actor: Membership, name: str, visibility: str, member_ids=()) -> Room:
    """A new channel; its creator is its first member, with the members named (members of the practice)."""
    others = [u for u in _practice_members(organization, member_ids, field="memberIds") if u != actor.user_id]
    room = Room(
        organization=organization, kind=visibility, name=name, created_by_id=actor.user_id, activity_at=timezone.now()
    )
    _check_name_free(organization, room, name)
    _save_named(room, force_insert=True)
    RoomMember.objects.bulk_create(
        RoomMember(organization=organization, room=room, user_id=user_id) for user_id in [actor.user_id, *others]
    )
    if others:
        live.push_channel(
            organization=organization, room=room, change="members_added", recipients=others, user_ids=others
        )
    return room


@transaction.atomic
def channel_rename(*, organization, actor: Membership, room_id, name: str) -> Room:
    room = _locked(organization, room_id)
    _require_manager(actor, room)
    _require_active(room)
    if room.name == name:
        return room
    _check_name_free(organization, room, name)
    room.name = name
    _save_named(room, update_fields=["name", "updated_at"])
    live.push_channel(
        organization=organization,
        room=room,
        change="renamed",
        recipients=selectors.member_ids(organization=organization, room=room),
    )
    return room


@transaction.atomic
def channel_set_archived(*, organization, actor: Membership, room_id, archived: bool) -> Room:
    """Archive (read-only: no posts, edits, joins or new members) or unarchive; doing it twice changes nothing.
    Unarchiving needs the name to be free among active channels (409 CHANNEL_NAME_TAKEN)."""
    room = _locked(organization, room_id)
    _require_manager(actor, room)
    if (room.archived_at is not None) == archived:
        return room
    if archived:
        room.archived_at = timezone.now()
    else:
        _check_name_free(organization, room, room.name)
        room.archived_at = None
    _save_named(room, update_fields=["archived_at", "updated_at"])
    live.push_channel(
        organization=organization,
        room=room,
        change="archived" if archived else "unarchived",
        recipients=selectors.member_ids(organization=organization, room=room),
    )
    return room


def _add(organization, room: Room, user_ids) -> list:
    """Add these practice members (those not in the room yet), reading from the latest message on."""
    present = set(RoomMember.objects.for_org(organization).filter(room=room).values_list("user_id", flat=True))
    added = [user_id for user_id in user_ids if user_id not in present]
    RoomMember.objects.bulk_create(
        RoomMember(organization=organization, room=room, user_id=user_id, read_seq=room.last_seq) for user_id in added
    )
    if added:
        live.push_channel(
            organization=organization,
            room=room,
            change="members_added",
            recipients=selectors.member_ids(organization=organization, room=room),
            user_ids=added,
        )
    return added


@transaction.atomic
def channel_join(*, organization, actor: Membership, room_id) -> Room:
    """Join a public channel (private ones are joined by being added)."""
    room = _locked(organization, room_id)
    if room.kind != Room.Kind.PUBLIC:
        if selectors.is_member(organization=organization, room=room, user_id=actor.user_id):
            return room  # a member of a private channel is in it already
        raise NotFound("No such channel.")
    _require_active(room)
    _add(organization, room, [actor.user_id])
    return room


@transaction.atomic
def channel_add_members(*, organization, actor: Membership, room_id, user_ids) -> Room:
    """Any member of the channel may add members of the practice to it."""
    room = _locked(organization, room_id)
    _require_active(room)
    _require_member(organization, room, actor.user_id)
    _add(organization, room, _practice_members(organization, user_ids, field="userIds"))
    return room


@transaction.atomic
def channel_remove_member(*, organization, actor: Membership, room_id, user_id) -> Room:
    """Leave (yourself), or remove someone (the channel's creator or teamchat:manage). A private channel left with
    no members is archived, so nobody is left unable to see it."""
    room = _locked(organization, room_id)
    if user_id != actor.user_id:
        _require_manager(actor, room)
    removed, _ = RoomMember.objects.for_org(organization).filter(room=room, user_id=user_id).delete()
    if not removed:
        raise NotFound("That person is not a member of this channel.")
    remaining = selectors.member_ids(organization=organization, room=room)
    if room.kind == Room.Kind.PRIVATE and not remaining and room.archived_at is None:
        room.archived_at = timezone.now()
        room.save(update_fields=["archived_at", "updated_at"])
    live.push_channel(
        organization=organization,
        room=room,
        change="member_removed",
        recipients=[*remaining, user_id],
        user_ids=[user_id],
    )
    return room


# --- direct threads -------------------------------------------------------------------------------------------


def thread_open(*, organization, actor: Membership, member_ids) -> tuple[Room, bool]:
    """The direct thread of exactly the caller and these members, found or created: (thread, created)."""
    others = [u for u in _practice_members(organization, member_ids, field="memberIds") if u != actor.user_id]
    if not others:
        raise _invalid("memberIds", ["name at least one other member of the practice"])
    if len(others) > DIRECT_OTHERS_MAX:
        raise _invalid("memberIds", [f"a direct thread has at most {DIRECT_OTHERS_MAX} other members"])
    everyone = sorted([actor.user_id, *others], key=str)
    key = ",".join(str(user_id) for user_id in everyone)
    threads = Room.objects.for_org(organization).filter(kind=Room.Kind.DIRECT, direct_key=key)
    found = threads.first()
    if found is not None:
        return found, False
    try:
        with transaction.atomic():
            room = Room.objects.create(
                organization=organization,
                kind=Room.Kind.DIRECT,
                direct_key=key,
                created_by_id=actor.user_id,
                activity_at=timezone.now(),
            )
            RoomMember.objects.bulk_create(
                RoomMember(organization=organization, room=room, user_id=user_id) for user_id in everyone
            )
    except IntegrityError:  # opened by a racing request: the same thread
        return threads.get(), False
    return room, True


def member_left(*, organization, user_id) -> None:
    """A person left the practice (apps.accounts.hooks, inside the removal's transaction): they stop being a member
    of every room, and their direct threads are set aside (the others keep them, with their history; the same
    people opening a thread again get a new one), so being added back later reopens nothing said meanwhile."""
    rooms = RoomMember.objects.for_org(organization).filter(user_id=user_id).values("room_id")
    Room.objects.for_org(organization).filter(kind=Room.Kind.DIRECT, id__in=rooms).update(
        direct_key=Concat(Value("left:"), Cast("id", output_field=CharField()))
    )
    RoomMember.objects.for_org(organization).filter(user_id=user_id).delete()


# --- messages -------------------------------------------------------------------------------------------------


def _author_name(user) -> str:
    return (user.name or "").strip() or user.email


def _notify_mentions(*, organization, author, room: Room, message: Message, user_ids) -> None:
    user_ids = [user_id for user_id in user_ids if user_id != author.pk]
    if not user_ids:
        return
    where = f"#{room.name}" if room.is_channel else "a direct message"
    notify(
        organization=organization,
        user_ids=user_ids,
        kind=Kind.MENTION,
        title=f"{_author_name(author)} mentioned you in {where}",
        subject_type="teamchat_message",
        subject_id=message.id,
        data={"messageId": str(message.id), live.room_key(room): str(room.id), "authorId": str(author.pk)},
        dedupe_key=f"teamchat-mention:{message.id}",  # mentioned again after an edit: told once
    )


@transaction.atomic
def message_post(*, organization, actor: Membership, room_id, body: str, mention_user_ids=()) -> Message:
    """A new message, numbered after the room's latest; it counts as read by its author. The room's members get it
    live; the members mentioned get a notification."""
    room = _locked(organization, room_id)
    _require_active(room)
    _require_member(organization, room, actor.user_id)
    mentions = _mentions(organization, room, mention_user_ids)
    now = timezone.now()
    room.last_seq += 1
    room.last_message_at = room.activity_at = now
    room.save(update_fields=["last_seq", "last_message_at", "activity_at", "updated_at"])
    message = Message(
        organization=organization,
        room=room,
        seq=room.last_seq,
        author_id=actor.user_id,
        body=body,
        mention_user_ids=mentions,
    )
    message.save(force_insert=True)
    RoomMember.objects.for_org(organization).filter(room=room, user_id=actor.user_id).update(read_seq=message.seq)
    live.push_message(
        live.MESSAGE_CREATED,
        organization=organization,
        message=message,
        recipients=selectors.member_ids(organization=organization, room=room),
    )
    _notify_mentions(organization=organization, author=actor.user, room=room, message=message, user_ids=mentions)
    return message


def _locked_message(organization, message_id) -> Message:
    message = (
        Message.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("room")
        .filter(id=message_id)
        .first()
    )
    if message is None:
        raise NotFound("No such message.")
    return message


@transaction.atomic
def message_edit(*, organization, actor: Membership, message_id, body: str | None, mention_user_ids=None) -> Message:
    """The author changes the body and/or the mentions (mentions not sent are kept). Members newly mentioned are
    notified; an edit that changes nothing leaves editedAt alone."""
    message = _locked_message(organization, message_id)
    if message.author_id != actor.user_id:
        raise NotMessageAuthor()
    if message.deleted_at is not None:
        raise MessageDeleted()
    _require_active(message.room)
    mentions = (
        list(message.mention_user_ids)
        if mention_user_ids is None
        else _mentions(organization, message.room, mention_user_ids)
    )
    body = message.body if body is None else body
    if body == message.body and mentions == list(message.mention_user_ids):
        return message
    added = [user_id for user_id in mentions if user_id not in set(message.mention_user_ids)]
    message.body, message.mention_user_ids, message.edited_at = body, mentions, timezone.now()
    message.save(update_fields=["body", "mention_user_ids", "edited_at", "updated_at"])
    live.push_message(
        live.MESSAGE_UPDATED,
        organization=organization,
        message=message,
        recipients=selectors.member_ids(organization=organization, room=message.room),
    )
    _notify_mentions(organization=organization, author=actor.user, room=message.room, message=message, user_ids=added)
    return message


@transaction.atomic
def message_delete(*, organization, actor: Membership, message_id) -> Message:
    """The author deletes their message: a tombstone stays (body and mentions cleared). Deleting again changes
    nothing. Allowed in an archived channel too (taking words back is never refused)."""
    message = _locked_message(organization, message_id)
    if message.author_id != actor.user_id:
        raise NotMessageAuthor()
    if message.deleted_at is not None:
        return message
    message.body, message.mention_user_ids, message.deleted_at = "", [], timezone.now()
    message.save(update_fields=["body", "mention_user_ids", "deleted_at", "updated_at"])
    live.push_message(
        live.MESSAGE_DELETED,
        organization=organization,
        message=message,
        recipients=selectors.member_ids(organization=organization, room=message.room),
    )
    return message


# --- read marks -----------------------------------------------------------------------------------------------


@transaction.atomic
def room_mark_read(*, organization, actor: Membership, room: Room, up_to: Message | None = None) -> dict:
    """Read up to a message of the room (or its latest). The mark only moves forward. The reader's other tabs and
    devices get the new counts live. Returns them (selectors.room_unread)."""
    _require_member(organization, room, actor.user_id)
    if up_to is None:
        target = Room.objects.for_org(organization).filter(id=room.id).values_list("last_seq", flat=True).get()
    else:
        target = up_to.seq
    RoomMember.objects.for_org(organization).filter(room=room, user_id=actor.user_id, read_seq__lt=target).update(
        read_seq=target, updated_at=timezone.now()
    )
    unread = selectors.room_unread(organization=organization, user=actor.user, room=room)
    live.push_read(organization=organization, user=actor.user, room=room, unread=unread)
    return unread
