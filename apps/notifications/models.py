"""Notifications: one row per member and thing to tell them (assigned conversation, mention, task due, new lead),
read or unread, and each member's in-app switch per kind."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class Kind(models.TextChoices):
    ASSIGNED_CONVERSATION = "assigned_conversation", "A conversation was assigned to me"
    MENTION = "mention", "Someone mentioned me in team chat"
    TASK_DUE = "task_due", "A task assigned to me fell due"
    NEW_LEAD = "new_lead", "A new lead came in"


class Notification(TenantModel):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    # Short and free of patient free text beyond what the member may see anyway (apps.notifications.services).
    title = models.CharField(max_length=120)
    subject_type = models.CharField(max_length=32)
    subject_id = models.CharField(max_length=64)
    data = models.JSONField(default=dict)
    # The patient the notification is about, if any: erasure deletes it, a merge repoints it.
    patient_id = models.UUIDField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    # A producer's key for "this notification, once" (the event id, the task and its due time).
    dedupe_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 (partial unique)

    class Meta:
        indexes = [
            # The feed: one member's notifications newest first (the cursor's order).
            models.Index(
                models.F("organization"),
                models.F("user"),
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="notif_feed_idx",
            ),
            # The unread count and "unread only" feed.
            models.Index(
                fields=["organization", "user", "created_at"],
                condition=Q(read_at__isnull=True),
                name="notif_unread_idx",
            ),
            models.Index(fields=["organization", "patient_id"], name="notif_patient_idx"),
            models.Index(fields=["created_at"], name="notif_created_idx"),  # the retention purge, every practice
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "user", "dedupe_key"],
                condition=Q(dedupe_key__isnull=False),
                name="notif_dedupe_unique",
            )
        ]

    def __str__(self) -> str:
        return f"notification {self.id} ({self.kind})"


class Preference(TenantModel):
    """A member's switch for one kind in one practice. No row: the default (on)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    in_app = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "user", "kind"], name="notif_preference_unique"),
        ]

    def __str__(self) -> str:
        return f"preference {self.user_id} {self.kind}={self.in_app}"


class TaskDueNotice(TenantModel):
    """That a task's due time was noticed (its assignee told, or not by their choice): once per task and due time."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    due_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "task", "due_at"], name="notif_task_due_unique"),
        ]
        indexes = [models.Index(fields=["due_at"], name="notif_task_due_at_idx")]  # the purge, every practice

    def __str__(self) -> str:
        return f"task {self.task_id} due {self.due_at:%Y-%m-%dT%H:%M}"
