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


class InboundDelivery(TenantModel):
    """A provider callback exactly as received (raw bytes), stored before it is acknowledged and processed by a
    Celery task afterwards: a crash between the two loses nothing (the sweep picks up what is still `received`)."""

    class State(models.TextChoices):
        RECEIVED = "received"
        PROCESSED = "processed"
        FAILED = "failed"

    connection = models.ForeignKey(ChannelConnection, on_delete=models.CASCADE, related_name="+")
    content_type = models.CharField(max_length=120)
    body = models.BinaryField()
    state = models.CharField(max_length=12, choices=State.choices, default=State.RECEIVED)
    attempts = models.PositiveSmallIntegerField(default=0)
    processed_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        indexes = [
            # The sweep's work across practices (deliveries whose publication was lost): small, partial.
            models.Index(fields=["created_at"], condition=Q(state="received"), name="conv_delivery_pending_idx")
        ]


class ProviderReceipt(TenantModel):
    """The connection-scoped SHA-256 of a provider's message id, claimed before anything is stored: a retried
    callback finds it and is acknowledged without a second message."""

    connection = models.ForeignKey(ChannelConnection, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "connection", "digest"], name="conv_receipt_unique")
        ]


class Conversation(TenantModel):
    """One patient's messages on one channel connection (reopened when they write again)."""

    class State(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"
        SNOOZED = "snoozed"

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    connection = models.ForeignKey(ChannelConnection, on_delete=models.PROTECT, related_name="+")
    channel = models.CharField(max_length=24, choices=Kind.choices)
    contact_address = models.CharField(max_length=254)  # the patient's number or address on this channel
    status = models.CharField(max_length=12, choices=State.choices, default=State.OPEN)
    snoozed_until = models.DateTimeField(null=True, blank=True)
    assignee = models.ForeignKey("accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_message_at = models.DateTimeField()
    last_inbound_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("last_message_at").desc(),
                models.F("id").desc(),
                name="conv_conversation_recent_idx",
            ),
            models.Index(fields=["organization", "patient"], name="conv_conversation_patient_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "patient", "connection"], name="conv_conversation_patient_unique"
            )
        ]


class ReadMark(TenantModel):
    """How far one member has read one conversation: unread for them while a message came in after read_at."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey("accounts.User", on_delete=models.CASCADE, related_name="+")
    read_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "conversation", "user"], name="conv_readmark_unique")
        ]


class Message(TenantModel):
    class Direction(models.TextChoices):
        INBOUND = "inbound"
        OUTBOUND = "outbound"

    class State(models.TextChoices):
        RECEIVED = "received"
        QUEUED = "queued"
        SENT = "sent"
        DELIVERED = "delivered"
        UNDELIVERED = "undelivered"
        FAILED = "failed"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    direction = models.CharField(max_length=8, choices=Direction.choices)
    channel = models.CharField(max_length=24, choices=Kind.choices)
    status = models.CharField(max_length=12, choices=State.choices)
    body = models.TextField(blank=True, default="")
    provider_message_id = models.CharField(max_length=128, blank=True, default="")
    occurred_at = models.DateTimeField()
    attachments = models.JSONField(default=list)  # [{contentType, providerUrl}] as received

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("conversation"),
                models.F("occurred_at").desc(),
                models.F("id").desc(),
                name="conv_message_recent_idx",
            )
        ]


class ContactBlock(TenantModel):
    """A contact (number or address on a channel) that asked to stop: nothing is sent to it while blocked. One
    contact stands for at most 25 patients; more keeps it blocked and marks it for manual review."""

    channel = models.CharField(max_length=24, choices=Kind.choices)
    address = models.CharField(max_length=254)
    blocked = models.BooleanField(default=True)
    needs_review = models.BooleanField(default=False)
    reason = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "channel", "address"], name="conv_contactblock_unique")
        ]
