"""Conversations, part 1: the practice's channel connections (the numbers, addresses and accounts patients write to).

A connection's provider credentials are encrypted at rest (core.crypto) and never returned. Its routing token goes
in the provider's callback URL: it says which connection a callback is for and grants nothing by itself (every
callback is still verified with the connection's own credentials)."""

from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class Kind(models.TextChoices):
    MESSAGING_APP = "messaging_app"  # WhatsApp-type messaging: a business phone number id
    SMS = "sms"  # an SMS provider number
    EMAIL = "email"  # a sending domain's inbound address
    TELEPHONY_MESSAGING = "telephony_messaging"  # a texting-enabled telephony number


class Status(models.TextChoices):
    PENDING = "pending"  # set up, no verified callback yet
    ACTIVE = "active"
    FAILING = "failing"  # the provider refuses our credentials, or deliveries fail
    DISCONNECTED = "disconnected"  # kept for the conversations that used it; receives nothing


class Health(models.TextChoices):
    UNKNOWN = "unknown"
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNHEALTHY = "unhealthy"


# Statuses in which a connection owns its address: one practice per number, address or account at a time.
OWNING_STATUSES = (Status.PENDING, Status.ACTIVE, Status.FAILING)


class ChannelConnection(TenantModel):
    kind = models.CharField(max_length=24, choices=Kind.choices)
    name = models.CharField(max_length=120)
    # The channel's own address: E.164 number (sms, telephony_messaging), phone number id (messaging_app) or inbound
    # e-mail address (email), normalised by the service.
    address = models.CharField(max_length=254)
    routing_token = models.CharField(max_length=64, unique=True)
    credentials_encrypted = models.TextField()
    credential_keys = models.JSONField(default=list)  # which credentials are set (names only), for the settings page
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    health = models.CharField(max_length=16, choices=Health.choices, default=Health.UNKNOWN)
    health_reason = models.CharField(max_length=200, blank=True, default="")
    health_changed_at = models.DateTimeField(null=True, blank=True)
    disconnected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "kind", "status"], name="conv_connection_org_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "address"],
                condition=Q(status__in=OWNING_STATUSES),
                name="conv_connection_address_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"
