"""Team chat between the members of one practice: channels (public to every member, or private to a member list),
direct threads (1:1 and small groups, one per set of members), their messages and each member's read mark.

One table holds both kinds of room (`Room.kind`), so messages, members and read marks are the same rows for both.
Each room numbers its messages (`Message.seq`, taken from `Room.last_seq` under the room's row lock), and a member's
read mark is the highest number they have read (`RoomMember.read_seq`): unread is "a later number, not deleted, not
mine", with no clock involved.
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

from apps.core.models import TenantModel

NAME_MAX = 80
BODY_MAX = 10_000
MENTIONS_MAX = 50
# A direct thread is a small group: the caller and at most this many others.
DIRECT_OTHERS_MAX = 8


class Room(TenantModel):
    class Kind(models.TextChoices):
        PUBLIC = "public"  # a channel every member of the practice can see and join
        PRIVATE = "private"  # a channel only its members can see
        DIRECT = "direct"  # a direct thread: a fixed set of members, no name

    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=NAME_MAX, blank=True, default="")  # channels only
    # Direct threads: the members' user ids, sorted and comma-joined (found-or-created by it); empty for channels.
    direct_key = models.CharField(max_length=400, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    last_seq = models.PositiveBigIntegerField(default=0)  # the number of the room's latest message
    last_message_at = models.DateTimeField(null=True, blank=True)
    # When the room was created or last had a message: the order of the thread list.
    activity_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                "organization",
                Lower("name"),
                condition=Q(kind__in=["public", "private"], archived_at__isnull=True),
                name="teamchat_room_active_name_unique",
            ),
            models.UniqueConstraint(
                fields=["organization", "direct_key"], condition=Q(kind="direct"), name="teamchat_room_direct_unique"
            ),
            models.CheckConstraint(
                condition=Q(kind="direct", name="") | (~Q(kind="direct") & ~Q(name="") & Q(direct_key="")),
                name="teamchat_room_kind_fields",
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "kind", "activity_at", "id"], name="teamchat_room_org_kind_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} room {self.name or self.id}"

    @property
    def is_channel(self) -> bool:
        return self.kind != Room.Kind.DIRECT


class RoomMember(TenantModel):
    """A member of a room, and how far they have read it."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    read_seq = models.PositiveBigIntegerField(default=0)  # the highest message number this member has read

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "room", "user"], name="teamchat_member_unique"),
        ]
        indexes = [models.Index(fields=["organization", "user", "room"], name="teamchat_member_user_idx")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.room_id}"


class Message(TenantModel):
    """A message. Deleting keeps a tombstone: the row stays (id, author, number, time) with its body and mentions
    cleared and deleted_at set."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveBigIntegerField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    body = models.TextField(blank=True, default="")
    # Members mentioned (user ids, validated as members of the practice and of the room when sent).
    mention_user_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "room", "seq"], name="teamchat_message_seq_unique"),
        ]
        indexes = [
            # History, newest first (the cursor's order).
            models.Index(fields=["organization", "room", "created_at", "id"], name="teamchat_message_history_idx"),
        ]

    def __str__(self) -> str:
        return f"message {self.id} #{self.seq} in {self.room_id}"
