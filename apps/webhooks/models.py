from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import BooleanField, ExpressionWrapper, F, Q

from apps.core.models import TenantModel

MAX_ENDPOINTS = 20


class WebhookEndpoint(TenantModel):
    """A customer HTTPS receiver. New endpoints start disabled and unverified; a successful test verifies them,
    enable turns real events on. Signing secrets are encrypted at rest (core.crypto) and shown once."""

    name = models.CharField(max_length=200)
    url = models.TextField()
    events = ArrayField(models.CharField(max_length=64))
    enabled = models.BooleanField(default=False)
    paused = models.BooleanField(default=False)
    paused_reason = models.CharField(max_length=64, blank=True, default="")
    verified_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    secret_encrypted = models.TextField()
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # Managed subscriptions (POST …/subscriptions) belong to the OAuth connection that made them.
    subscription_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 (partial unique)
    connection_id = models.UUIDField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # One delivery lease per endpoint at a time: the worker holding it sends; others leave the endpoint alone.
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "archived_at"], name="webhooks_endpoint_org_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "subscription_key"],
                condition=Q(subscription_key__isnull=False, archived_at__isnull=True),
                name="webhooks_endpoint_subscription_unique",
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def status(self) -> str:
        if self.archived_at:
            return "archived"
        if self.paused:
            return "paused"
        return "enabled" if self.enabled else "disabled"


class WebhookDelivery(TenantModel):
    """One physical delivery of one logical event to one endpoint. The body is fixed at creation (replays copy it);
    each attempt is signed afresh with a new timestamp."""

    class Kind(models.TextChoices):
        EVENT = "event"
        TEST = "test"
        REPLAY = "replay"

    class Status(models.TextChoices):
        PENDING = "pending"
        IN_FLIGHT = "in_flight"
        DELIVERED = "delivered"
        FAILED = "failed"

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey("events.Event", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The event's own time: deliveries of one fan-out go out in event order even when created in the same instant.
    event_created_at = models.DateTimeField(null=True, blank=True)
    logical_id = models.UUIDField(help_text="The envelope id: the same across retries and replays.")
    event_type = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.EVENT)
    body = models.TextField(help_text="The exact JSON bytes sent (UTF-8).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Outbound requests made.")
    publications = models.PositiveSmallIntegerField(default=0, help_text="Times handed to a worker.")
    next_attempt_at = models.DateTimeField()
    last_published_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField()
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_snippet = models.TextField(blank=True, default="")
    last_error = models.CharField(max_length=500, blank=True, default="")
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Claiming: the claim's own ORDER BY over the work that can still be claimed, so the claim reads its
            # batch in index order and stops instead of sorting every due row of the endpoint (bench.webhooks.history).
            models.Index(
                F("organization"),
                F("endpoint"),
                ExpressionWrapper(Q(kind="test"), output_field=BooleanField()).desc(),
                F("next_attempt_at"),
                F("event_created_at"),
                F("created_at"),
                F("id"),
                condition=Q(status__in=["pending", "in_flight"]),
                name="webhooks_delivery_queue_idx",
            ),
            models.Index(fields=["organization", "endpoint", "-created_at"], name="webhooks_delivery_list_idx"),
            # The dispatch sweep finds due work of every practice; the purge finds old finished records.
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status__in=["pending", "in_flight"]),
                name="webhooks_delivery_due_idx",
            ),
            models.Index(
                fields=["completed_at"], condition=Q(completed_at__isnull=False), name="webhooks_delivery_done_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.endpoint_id} ({self.status})"
