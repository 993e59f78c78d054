from django.db import models

from apps.core.models import TenantModel
from apps.events.catalogue import EVENT_TYPE_CHOICES


class Event(TenantModel):
    """One committed domain event: the outbox row webhooks and live updates read. Envelope version "1".

    `id` is the stable logical event id. `idempotency_key` (optional) lets an emitter that may see the same
    provider item twice derive one logical event from it: a second emit with the same key returns the first.
    """

    type = models.CharField(max_length=64, choices=EVENT_TYPE_CHOICES)
    subject_type = models.CharField(max_length=64)
    subject_id = models.CharField(max_length=64)
    actor_type = models.CharField(max_length=16, choices=[(k, k) for k in ("user", "system", "patient", "provider")])
    actor_id = models.CharField(max_length=64)
    data = models.JSONField(default=dict)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 (partial unique)
    # Set once outbound webhook fan-out has turned this event into its deliveries (in the same transaction).
    fanned_out_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "created_at"], name="events_org_created_idx"),
            models.Index(fields=["organization", "subject_type", "subject_id"], name="events_org_subject_idx"),
            # The fan-out sweep reads unprocessed events of every practice, oldest first.
            models.Index(
                fields=["created_at"], condition=models.Q(fanned_out_at__isnull=True), name="events_pending_fanout_idx"
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="events_org_idempotency_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.subject_type}:{self.subject_id}"
