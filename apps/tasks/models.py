"""Tasks: a to-do for a member of the practice, optionally about a patient and one of their journeys."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class Priority(models.TextChoices):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class TaskStatus(models.TextChoices):
    OPEN = "open"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class Task(TenantModel):
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    due_at = models.DateTimeField(null=True, blank=True)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.OPEN)
    completed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # A user who is (or was, when assigned) a member of the practice; the services check the membership.
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Erasure and merge reach tasks through the patients area's hooks (apps.tasks.apps); the cascade is a backstop.
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # A journey of the task's patient (the services keep them in step); a deleted journey leaves the task unlinked.
    journey = models.ForeignKey("journeys.Journey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        indexes = [
            models.Index(fields=["organization", "status", "due_at", "created_at"], name="tasks_org_status_due_idx"),
            models.Index(fields=["organization", "assignee", "status", "due_at"], name="tasks_org_assignee_idx"),
            models.Index(fields=["organization", "patient"], name="tasks_org_patient_idx"),
            # "Does this patient have an open task?" (Today's journeys needing action), answered from the index.
            models.Index(
                fields=["organization", "patient"], condition=Q(status="open"), name="tasks_org_patient_open_idx"
            ),
            # The list's order (due_at ASC NULLS LAST, created_at, id), whole practice and per assignee: a page is
            # read in index order instead of sorting every task.
            models.Index(fields=["organization", "due_at", "created_at", "id"], name="tasks_org_order_idx"),
            models.Index(
                fields=["organization", "assignee", "due_at", "created_at", "id"], name="tasks_org_assignee_order_idx"
            ),
            # The task-due sweep (apps.notifications) finds open assigned tasks that just fell due, every practice.
            models.Index(
                fields=["due_at"],
                condition=Q(status="open", assignee__isnull=False),
                name="tasks_open_assigned_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.id} ({self.status})"
