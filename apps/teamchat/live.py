"""What team chat pushes over /today/ws (apps.today.public.push_to_users: after the commit, to the named members'
sockets on this practice only). Every frame is {"type": kind, "organizationId", "data"}; the kinds:

- teamchat.message.created / teamchat.message.updated / teamchat.message.deleted: data.message (a tombstone for a
  deletion), to the room's current members.
- teamchat.read: data {channelId | threadId, unreadCount, unreadMentionCount, totalUnreadCount,
  totalUnreadMentionCount}, to the reader alone (their other tabs and devices).
- teamchat.channel.updated: data {channel {id, visibility, name, archivedAt}, change (renamed, archived, unarchived,
  members_added, member_removed), userIds (the members added or removed)}, to the channel's members and to those
  just added or removed.
"""

from apps.core.wire import datetime_string
from apps.teamchat.models import Room
from apps.teamchat.renderers import message_data
from apps.today.public import push_to_users

MESSAGE_CREATED = "teamchat.message.created"
MESSAGE_UPDATED = "teamchat.message.updated"
MESSAGE_DELETED = "teamchat.message.deleted"
READ = "teamchat.read"
CHANNEL_UPDATED = "teamchat.channel.updated"


def room_key(room: Room) -> str:
    return "threadId" if room.kind == Room.Kind.DIRECT else "channelId"


def push_message(kind: str, *, organization, message, recipients) -> None:
    push_to_users(organization.pk, recipients, kind, {"message": message_data(message)})


def push_read(*, organization, user, room: Room, unread: dict) -> None:
    push_to_users(
        organization.pk,
        [user.pk],
        READ,
        {
            room_key(room): str(room.id),
            "unreadCount": unread["unread_count"],
            "unreadMentionCount": unread["unread_mention_count"],
            "totalUnreadCount": unread["total_unread_count"],
            "totalUnreadMentionCount": unread["total_unread_mention_count"],
        },
    )


def push_channel(*, organization, room: Room, change: str, recipients, user_ids=()) -> None:
    push_to_users(
        organization.pk,
        recipients,
        CHANNEL_UPDATED,
        {
            "channel": {
                "id": str(room.id),
                "visibility": room.kind,
                "name": room.name,
                "archivedAt": datetime_string(room.archived_at),
            },
            "change": change,
            "userIds": [str(user_id) for user_id in user_ids],
        },
    )
