"""Conversations, part 1: the practice's channel connections (the numbers, addresses and accounts patients write to).

A connection's provider credentials are encrypted at rest (core.crypto) and never returned. Its routing token goes
in the provider's callback URL: it says which connection a callback is for and grants nothing by itself (every
callback is still verified with the connection's own credentials)."""

import uuid
from datetime import time

from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class Kind(models.TextChoices):
    MESSAGING_APP = "messaging_app"  # WhatsApp-type messaging: a business phone number id
    SMS = "sms"  # an SMS provider number
    EMAIL = "email"  # a sending domain's inbound address
    TELEPHONY_MESSAGING = "telephony_messaging"  # a texting-enabled telephony number
    WIDGET = "widget"  # the practice's website chat widget (apps.widget): the address is the widget's embed key
    # The short-video platform's direct messages (TikTok Business Messaging): the address is the business account's
    # open id, learnt from the platform's OAuth token answer (connected through an OAuth flow, never typed).
    SHORT_VIDEO = "short_video"


# The kinds a practice manages through /channel-connections; a widget's connection is made by apps.widget.
PROVIDER_KINDS = (Kind.MESSAGING_APP, Kind.SMS, Kind.EMAIL, Kind.TELEPHONY_MESSAGING, Kind.SHORT_VIDEO)
PROVIDER_KIND_CHOICES = [(kind.value, kind.label) for kind in PROVIDER_KINDS]
# Of those, the kinds created by POST /channel-connections with typed credentials (short_video connects by OAuth).
CREATABLE_KINDS = (Kind.MESSAGING_APP, Kind.SMS, Kind.EMAIL, Kind.TELEPHONY_MESSAGING)
CREATABLE_KIND_CHOICES = [(kind.value, kind.label) for kind in CREATABLE_KINDS]


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
    # messaging_app: the business account the number belongs to, as the platform's signed callbacks say (entry.id);
    # its template review decisions are routed by it. Never typed by a practice.
    business_account_id = models.CharField(max_length=64, blank=True, default="")
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
    """One verified item of a provider callback (an inbound message, a delivery status, an address to suppress),
    stored before the callback is acknowledged and processed by a Celery worker afterwards: a crash between the
    two loses nothing (the sweep picks up what is still `received`). `payload` is providers.item_to_payload."""

    class State(models.TextChoices):
        RECEIVED = "received"
        PROCESSED = "processed"
        FAILED = "failed"

    connection = models.ForeignKey(ChannelConnection, on_delete=models.CASCADE, related_name="+")
    payload = models.JSONField()
    state = models.CharField(max_length=12, choices=State.choices, default=State.RECEIVED)
    attempts = models.PositiveSmallIntegerField(default=0)
    processed_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        indexes = [
            # The drains' and the sweep's work (deliveries still to process): small, partial.
            models.Index(fields=["created_at"], condition=Q(state="received"), name="conv_delivery_pending_idx"),
            models.Index(
                fields=["organization", "created_at"], condition=Q(state="received"), name="conv_delivery_org_idx"
            ),
        ]


class ParkedCallback(models.Model):
    """A verified callback item for a number, page or address not connected in this region (rule 4), kept for
    review instead of being dropped: the practice the route token named (when one did) sees it in its ingest-review
    queue and can replay it into one of its connections or dismiss it; one no route could attribute waits for an
    operator in the admin. Platform-owned (its practice may be unknown), so not a TenantModel: every practice read
    filters on `organization` explicitly (selectors.parked_of)."""

    class State(models.TextChoices):
        PARKED = "parked"
        REPLAYED = "replayed"
        DISMISSED = "dismissed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    organization = models.ForeignKey(
        "accounts.Organization", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=24, choices=Kind.choices)
    receiving_address = models.CharField(max_length=254)  # the unconnected number, phone number id or address
    reason = models.CharField(max_length=64)
    items = models.JSONField()  # [providers.item_to_payload(item)], already verified
    state = models.CharField(max_length=12, choices=State.choices, default=State.PARKED)
    decided_by = models.ForeignKey("accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    replayed_into = models.ForeignKey(
        ChannelConnection, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"), models.F("state"), models.F("created_at").desc(), name="conv_parked_org_idx"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} parked {self.created_at:%Y-%m-%d %H:%M}"


class EmailEventReceipt(models.Model):
    """The e-mail provider's event id (svix-id, at most 512 bytes; its SHA-256 kept), claimed by each delivery of
    the event: five attempts within 24 hours, after which the event is settled and later deliveries are
    acknowledged without effect. Platform-owned (one webhook URL for every practice)."""

    MAX_ATTEMPTS = 5
    LIFETIME_HOURS = 24

    class State(models.TextChoices):
        PENDING = "pending"  # seen, not yet stored (refused by a limit, or stored nothing routable yet)
        STORED = "stored"
        SETTLED = "settled"  # attempts or lifetime exhausted

    digest = models.CharField(max_length=64, primary_key=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    state = models.CharField(max_length=12, choices=State.choices, default=State.PENDING)

    class Meta:
        indexes = [models.Index(fields=["first_seen_at"], name="conv_email_receipt_age_idx")]

    def __str__(self) -> str:
        return f"e-mail event {self.digest[:12]} ({self.state})"


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
    # short_video: the platform's conversation id between the business account and the user (replies go to it).
    provider_thread_id = models.CharField(max_length=128, blank=True, default="")
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


class Purpose(models.TextChoices):
    SERVICE = "service"
    MARKETING = "marketing"


class Message(TenantModel):
    class Direction(models.TextChoices):
        INBOUND = "inbound"
        OUTBOUND = "outbound"

    class State(models.TextChoices):
        RECEIVED = "received"
        QUEUED = "queued"
        SENT = "sent"
        DELIVERED = "delivered"
        READ = "read"
        UNDELIVERED = "undelivered"
        FAILED = "failed"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    direction = models.CharField(max_length=8, choices=Direction.choices)
    channel = models.CharField(max_length=24, choices=Kind.choices)
    status = models.CharField(max_length=12, choices=State.choices)
    body = models.TextField(blank=True, default="")
    subject = models.CharField(max_length=998, blank=True, default="")  # e-mail only
    provider_message_id = models.CharField(max_length=128, blank=True, default="")
    occurred_at = models.DateTimeField()
    status_changed_at = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=32, blank=True, default="")
    # Outbound only. A marketing message needs the channel's consent; a service message (a reply, a reminder) only
    # an unblocked contact. Both are rechecked just before the provider call (apps.conversations.outbound).
    purpose = models.CharField(max_length=12, choices=Purpose.choices, blank=True, default="")
    source = models.CharField(max_length=16, blank=True, default="")  # inbox, campaign, template, automation
    sent_by = models.ForeignKey("accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # What the provider call needs beyond body and subject: {"html", "unsubscribeUrl", "template"}.
    outbound = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Queued: when a worker may take it next (a retry's backoff, quiet hours' end); a taken one is leased until then.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    held_reason = models.CharField(max_length=32, blank=True, default="")  # why a queued message waits (QUIET_HOURS)
    sandbox = models.BooleanField(default=False)  # "sent" through the sandbox transport: no provider saw it

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("conversation"),
                models.F("occurred_at").desc(),
                models.F("id").desc(),
                name="conv_message_recent_idx",
            ),
            # The senders' and the sweep's work: queued outbound messages, by when they are due.
            models.Index(fields=["next_attempt_at"], condition=Q(status="queued"), name="conv_message_queued_idx"),
            # Reports (apps.reports): a practice's messages in a date range, counted by an index-only scan.
            models.Index(
                fields=["organization", "occurred_at"],
                include=["channel", "direction", "status"],
                name="conv_message_report_idx",
            ),
            # Status callbacks find our message by the provider's id.
            models.Index(
                fields=["organization", "provider_message_id"],
                condition=~Q(provider_message_id=""),
                name="conv_message_provider_idx",
            ),
        ]


class MessageAttachment(TenantModel):
    """A file that came with a message: its provider reference is stored with the message before the callback is
    acknowledged, and a Celery queue copies it to the practice's durable storage (retries with backoff); when the
    attempts run out it is marked unavailable."""

    class State(models.TextChoices):
        PENDING = "pending"
        STORED = "stored"
        UNAVAILABLE = "unavailable"

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    position = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=100, blank=True, default="")
    provider_url = models.CharField(max_length=2000, blank=True, default="")
    provider_media_id = models.CharField(max_length=128, blank=True, default="")
    state = models.CharField(max_length=12, choices=State.choices, default=State.PENDING)
    storage_name = models.CharField(max_length=300, blank=True, default="")
    size = models.PositiveBigIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=120, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)  # a copy in progress holds this lease

    class Meta:
        ordering = ["position"]
        indexes = [
            models.Index(fields=["created_at"], condition=Q(state="pending"), name="conv_attachment_pending_idx")
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


class MessagingSettings(TenantModel):
    """A practice's sending rules. Quiet hours (in the practice's time zone) hold marketing messages until they end;
    a reply a member writes is sent at once."""

    quiet_hours_enabled = models.BooleanField(default=True)
    quiet_hours_start = models.TimeField(default=time(21, 0))
    quiet_hours_end = models.TimeField(default=time(8, 0))

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization"], name="conv_messaging_settings_unique")]


class SandboxDelivery(TenantModel):
    """What the sandbox transport would have sent: the provider request (method, URL, body; never credentials), so a
    developer running `make run` can read exactly what a provider would have received."""

    # None for a test send (a sample to a member's own address, not a conversation's message).
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=24)
    method = models.CharField(max_length=8)
    url = models.CharField(max_length=500)
    request = models.JSONField()


class ConnectState(TenantModel):
    """A single-use OAuth state of a short-video connection attempt (POST
    /settings/channel-connections/short-video/connect): only its SHA-256 is kept; valid 10 minutes; bound to the
    practice and the member who started it; `name` is the connection's name once connected."""

    kind = models.CharField(max_length=24, choices=Kind.choices)
    state_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey("accounts.User", null=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=120)

    class Meta:
        indexes = [models.Index(fields=["organization", "expires_at"], name="conv_connectstate_org_idx")]
