"""Support chat: each signed-in person's one thread with the platform's support staff.

The thread is the person's, not a practice's (a person may belong to several practices, or to none yet), so these are
platform tables like users, not tenant rows. Each message keeps the practice the person was acting in when they wrote
(the organization context support staff need), and the thread keeps the latest one.
"""

import uuid

from django.conf import settings
from django.db import models

BODY_MAX = 5000


class SupportThread(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The practice the person last wrote from (null: they belonged to none, or had not chosen one of several).
    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_message_at = models.DateTimeField(null=True, blank=True)
    # The person wrote last: support owes a reply.
    awaiting_reply = models.BooleanField(default=False)
    # Staff replies after this are unread for the person.
    user_read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["awaiting_reply", "last_message_at"], name="support_thread_queue_idx")]

    def __str__(self) -> str:
        return f"support thread of {self.user_id}"


class SupportMessage(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(SupportThread, on_delete=models.CASCADE, related_name="messages")
    from_staff = models.BooleanField(default=False)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    body = models.TextField()
    # The practice the person was acting in when they wrote (for a staff reply: the thread's at the time).
    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "created_at", "id"], name="support_message_thread_idx")]

    def __str__(self) -> str:
        return f"{'staff' if self.from_staff else 'user'} message {self.id}"
