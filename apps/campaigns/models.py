"""Message templates and campaigns.

A template is a message per channel with variables ({{patient.first_name}}, …: apps.campaigns.variables). A campaign
sends one template on one channel connection to an audience (a saved view or PatientFilters) that is evaluated once,
at launch, and frozen as CampaignRecipient rows; Celery releases the recipients within the campaign's hourly and
daily pacing into the conversations pipeline (apps.conversations.public.queue_messages). A recipient's delivery state
is its Message's (joined, never copied), so provider callbacks need no campaign code."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class Channel(models.TextChoices):
    """The channel connection kinds (apps.conversations Kind values)."""

    SMS = "sms"
    MESSAGING_APP = "messaging_app"
    EMAIL = "email"
    TELEPHONY_MESSAGING = "telephony_messaging"


class Category(models.TextChoices):
    MARKETING = "marketing"  # needs the channel's consent; carries an opt-out link
    SERVICE = "service"  # reminders and replies: only blocks and suppression apply


class Approval(models.TextChoices):
    """The provider's review of a messaging-app template (only approved ones are sent)."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class MessageTemplate(TenantModel):
    channel = models.CharField(max_length=24, choices=Channel.choices)
    name = models.CharField(max_length=120)
    category = models.CharField(max_length=12, choices=Category.choices, default=Category.MARKETING)
    subject = models.CharField(max_length=998, blank=True, default="")  # e-mail only
    body = models.TextField()  # plain text: the SMS / message text, the e-mail's text part
    html = models.TextField(blank=True, default="")  # e-mail only, optional
    variables = models.JSONField(default=list, blank=True)  # the names used, in order of first appearance
    # Messaging app only: the approved provider template this one stands for.
    provider_template_name = models.CharField(max_length=512, blank=True, default="")
    language = models.CharField(max_length=16, blank=True, default="")
    approval_status = models.CharField(max_length=12, choices=Approval.choices, blank=True, default="")
    approval_reason = models.CharField(max_length=500, blank=True, default="")
    approval_changed_at = models.DateTimeField(null=True, blank=True)
    approval_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "channel", "name"], name="campaigns_template_list_idx")]

    def __str__(self) -> str:
        return f"{self.channel} template {self.name}"


class CampaignStatus(models.TextChoices):
    DRAFT = "draft"
    SCHEDULED = "scheduled"  # launched: recipients frozen, sending starts at scheduled_at
    SENDING = "sending"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class Campaign(TenantModel):
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=12, choices=CampaignStatus.choices, default=CampaignStatus.DRAFT)
    connection = models.ForeignKey("conversations.ChannelConnection", on_delete=models.PROTECT, related_name="+")
    template = models.ForeignKey(MessageTemplate, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The audience: a saved view (its filters as they are at launch) or PatientFilters given inline (snake_case
    # keys as the patients area stores a saved view's). Exactly one of the two.
    saved_view = models.ForeignKey(
        "patients.SavedView", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    audience_filters = models.JSONField(null=True, blank=True)
    scheduled_at = models.DateTimeField(null=True, blank=True)  # null: as soon as it is launched
    # Pacing, chosen at launch (null: no cap). Counted in the practice's clock hours and calendar days.
    hourly_limit = models.PositiveIntegerField(null=True, blank=True)
    daily_limit = models.PositiveIntegerField(null=True, blank=True)
    # What is sent, copied from the template at launch: later edits of the template do not change a launched
    # campaign. {"channel", "category", "subject", "body", "html", "variables", "provider_template_name", "language"}
    content = models.JSONField(null=True, blank=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    launched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    paused_at = models.DateTimeField(null=True, blank=True)
    pause_reason = models.CharField(max_length=32, blank=True, default="")  # "" (a person) or CONNECTION_UNAVAILABLE
    completed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Release bookkeeping (apps.campaigns.release): recipients released in the current clock hour and calendar day
    # of the practice, when the next release may run (a window that is full opens again), and the last time a
    # release run worked on the campaign (the beat sweep restarts a campaign whose runs stopped).
    hour_window_start = models.DateTimeField(null=True, blank=True)
    hour_released = models.PositiveIntegerField(default=0)
    day_window_start = models.DateTimeField(null=True, blank=True)
    day_released = models.PositiveIntegerField(default=0)
    release_after = models.DateTimeField(null=True, blank=True)
    release_heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="campaigns_list_idx",
            ),
            # The beat sweep's work: campaigns waiting for their time or being sent.
            models.Index(
                fields=["status", "scheduled_at"],
                condition=Q(status__in=["scheduled", "sending"]),
                name="campaigns_active_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"campaign {self.name} ({self.status})"


class RecipientState(models.TextChoices):
    PENDING = "pending"  # frozen, waiting for its release
    RELEASED = "released"  # handed to the conversations pipeline: its Message says what happened next
    SKIPPED = "skipped"  # not sent: skip_reason says why
    # Still pending when the campaign was cancelled, or released with its message still queued: the cancel withdrew
    # that message (failed, error code CAMPAIGN_CANCELLED; the recipient keeps the link to it).
    CANCELLED = "cancelled"


class CampaignRecipient(TenantModel):
    """One patient of a launched campaign. Written in bulk by SQL (apps.campaigns.audience: INSERT … SELECT at
    launch; UPDATE … FROM unnest at release), never one by one."""

    # Every query names its campaign (and the campaign its practice): no index of its own on the practice.
    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+", db_index=False)
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    address = models.CharField(max_length=254, blank=True, default="")  # as resolved at launch ("" when none)
    state = models.CharField(max_length=12, choices=RecipientState.choices, default=RecipientState.PENDING)
    # NO_ADDRESS, OPTED_OUT, NO_CONSENT, CONTACT_BLOCKED, PATIENT_INACTIVE (deceased) at launch; the pipeline's
    # reasons (ADDRESS_SUPPRESSED, PATIENT_NOT_FOUND, …), VARIABLE_MISSING and PATIENT_MERGED at release.
    skip_reason = models.CharField(max_length=32, blank=True, default="")
    message = models.ForeignKey(
        "conversations.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    released_at = models.DateTimeField(null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The release's queue: pending recipients in a stable order (FOR UPDATE SKIP LOCKED takes from its head).
            models.Index(
                fields=["organization", "campaign", "id"],
                condition=Q(state="pending"),
                name="campaigns_recip_pending_idx",
            ),
            # A deleted message (a conversation erased) clears its recipient's link without scanning every recipient.
            models.Index(fields=["message"], condition=Q(message__isnull=False), name="campaigns_recip_message_idx"),
        ]
        constraints = [
            # Also the recipients list's order (and the campaign's cascade): by patient, within the campaign.
            models.UniqueConstraint(fields=["organization", "campaign", "patient"], name="campaigns_recipient_unique"),
        ]

    def __str__(self) -> str:
        return f"recipient {self.patient_id} of {self.campaign_id} ({self.state})"
