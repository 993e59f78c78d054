"""Reputation: review sources (a location's business profile on a review platform), the reviews imported from them
and the practice's replies, review requests sent to patients (a public /r/{token} page), and the private feedback
that low ratings leave. A source's credentials are encrypted at rest (apps.core.crypto) and never returned; a
request's token is stored as its SHA-256 only."""

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class Provider(models.TextChoices):
    GOOGLE_BUSINESS_PROFILE = "google_business_profile"


class Channel(models.TextChoices):
    SMS = "sms"
    EMAIL = "email"


class ReputationSettings(TenantModel):
    """One row per practice (made on first read): the rating from which a patient is pointed at the public review
    site, the question the /r/{token} page asks, and the automatic review request after a completed appointment."""

    rating_threshold = models.PositiveSmallIntegerField(default=4)
    question = models.CharField(max_length=300, blank=True, default="")
    auto_request_after_appointment = models.BooleanField(
        default=False, help_text="Send a review request automatically when an appointment is completed."
    )
    auto_request_delay_minutes = models.PositiveIntegerField(
        default=120, help_text="Minutes after the appointment is completed (0 to 10080, i.e. up to 7 days)."
    )
    auto_request_channel = models.CharField(
        max_length=8,
        choices=Channel.choices,
        default=Channel.SMS,
        help_text="The channel of the automatic request (the practice's first connection of it).",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization"], name="reputation_settings_org_unique")]


class SourceStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"


class ReviewSource(TenantModel):
    location = models.ForeignKey("patients.Location", on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=32, choices=Provider.choices, default=Provider.GOOGLE_BUSINESS_PROFILE)
    name = models.CharField(max_length=120)
    account_ref = models.CharField(max_length=120)  # accounts/{account}
    location_ref = models.CharField(max_length=120)  # locations/{location}
    review_url = models.URLField(max_length=2048)  # the public "write a review" link patients are pointed to
    credentials_encrypted = models.TextField()
    credential_keys = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=SourceStatus.choices, default=SourceStatus.ACTIVE)
    # None until the first (historical) import has finished: that import emits nothing; later syncs are live.
    imported_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_sync_error = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "provider", "account_ref", "location_ref"], name="reputation_source_unique"
            )
        ]
        indexes = [models.Index(fields=["organization", "location"], name="reputation_src_org_loc_idx")]


class ReplyStatus(models.TextChoices):
    NONE = "none"
    PENDING = "pending"
    PUBLISHED = "published"
    FAILED = "failed"


class Review(TenantModel):
    """One provider review; `version` is the provider's updateTime and a hash of the content, so a replay of the
    same version is recognised (and emits nothing)."""

    source = models.ForeignKey(ReviewSource, on_delete=models.CASCADE, related_name="reviews")
    location = models.ForeignKey("patients.Location", on_delete=models.CASCADE, related_name="+")
    provider_review_id = models.CharField(max_length=255)
    reviewer_name = models.CharField(max_length=200, blank=True, default="")
    rating = models.PositiveSmallIntegerField()
    comment = models.TextField(blank=True, default="")
    review_created_at = models.DateTimeField()
    review_updated_at = models.DateTimeField()
    version = models.CharField(max_length=96)
    reply_comment = models.TextField(blank=True, default="")
    reply_updated_at = models.DateTimeField(null=True, blank=True)
    reply_status = models.CharField(max_length=16, choices=ReplyStatus.choices, default=ReplyStatus.NONE)
    reply_error = models.CharField(max_length=64, blank=True, default="")
    reply_attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "source", "provider_review_id"], name="reputation_review_unique"
            )
        ]
        indexes = [
            models.Index(fields=["organization", "-review_updated_at", "-id"], name="reputation_review_recent_idx"),
            models.Index(fields=["organization", "location", "rating"], name="reputation_review_loc_idx"),
            # Reports (apps.reports): the reviews written in a date range.
            models.Index(fields=["organization", "review_created_at"], name="reputation_review_created_idx"),
        ]


class RequestStatus(models.TextChoices):
    SENT = "sent"
    OPENED = "opened"
    RATED = "rated"
    REVIEWED = "reviewed"


# Forward order of a request's statuses: a change is recorded (and emitted) only when it moves forward.
STATUS_ORDER = {RequestStatus.SENT: 0, RequestStatus.OPENED: 1, RequestStatus.RATED: 2, RequestStatus.REVIEWED: 3}


class ReviewRequest(TenantModel):
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    location = models.ForeignKey("patients.Location", on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    message_id = models.UUIDField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=RequestStatus.choices, default=RequestStatus.SENT)
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField()
    opened_at = models.DateTimeField(null=True, blank=True)
    rated_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at", "-id"], name="reputation_req_recent_idx"),
            models.Index(fields=["organization", "patient"], name="reputation_req_patient_idx"),
            models.Index(fields=["organization", "appointment"], name="reputation_req_appt_idx"),
        ]


class Feedback(TenantModel):
    """A low rating's private comment: for the practice only, never sent to a review site."""

    request = models.OneToOneField(ReviewRequest, on_delete=models.CASCADE, related_name="feedback")
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    location = models.ForeignKey("patients.Location", on_delete=models.CASCADE, related_name="+")
    rating = models.PositiveSmallIntegerField()
    comment = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at", "-id"], name="reputation_fb_recent_idx"),
            models.Index(fields=["organization", "patient"], name="reputation_fb_patient_idx"),
        ]
