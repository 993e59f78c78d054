"""Native lead ads: a practice's connections to the three ad platforms (a social platform's page, a search platform's
ad account, a short-video platform's advertiser), the shared intake every signed callback body is saved in first
(spec inbound rule 7), the lead-ad submissions made from those bodies, the data-deletion requests of the social
platform, and the leads integrators push through POST /leads."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from apps.core.models import TenantModel


class Platform(models.TextChoices):
    META_PLATFORM = "meta_platform"  # social ad platform: a page's instant forms (Meta Lead Ads)
    SEARCH_ADS = "search_ads"  # search ad platform: an ad account's lead form extensions (Google Ads)
    SHORT_VIDEO = "short_video"  # short-video ad platform: an advertiser's lead generation forms (TikTok)


class Health(models.TextChoices):
    HEALTHY = "healthy"
    FAILING = "failing"  # the platform refused our credentials (lead fetches fail)
    DISCONNECTED = "disconnected"  # disconnected by the practice or deauthorized on the platform: receives nothing


class LeadAdConnection(TenantModel):
    """One page, ad account or advertiser of a practice. `external_id` routes the platform's callbacks to it (one
    practice per page, account or advertiser in this region at a time). The routing token (search ads' callback URL)
    and the search platform's google_key are shown once and kept as SHA-256 digests; the social platform's page
    token is encrypted at rest and never returned."""

    platform = models.CharField(max_length=16, choices=Platform.choices)
    name = models.CharField(max_length=120)
    external_id = models.CharField(max_length=64)
    routing_token_digest = models.CharField(max_length=64, unique=True)
    page_token_encrypted = models.TextField(blank=True, default="")
    google_key_digest = models.CharField(max_length=64, blank=True, default="")
    # The social platform's app-scoped id of the person who granted the page token: deauthorization and data deletion
    # requests name it.
    authorized_by_ref = models.CharField(max_length=64, blank=True, default="")
    lead_source = models.ForeignKey(
        "patients.LeadSource", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    default_treatment = models.ForeignKey(
        "journeys.Treatment", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    location = models.ForeignKey(
        "patients.Location", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    health = models.CharField(max_length=16, choices=Health.choices, default=Health.HEALTHY)
    health_reason = models.CharField(max_length=200, blank=True, default="")
    health_changed_at = models.DateTimeField(null=True, blank=True)
    last_lead_at = models.DateTimeField(null=True, blank=True)
    disconnected_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        indexes = [
            models.Index(F("organization"), F("created_at").desc(), F("id").desc(), name="leadads_conn_org_idx"),
            models.Index(
                fields=["authorized_by_ref"], condition=~Q(authorized_by_ref=""), name="leadads_conn_user_idx"
            ),
        ]
        constraints = [
            # Routing: a page, ad account or advertiser belongs to one practice of this region while connected.
            models.UniqueConstraint(
                fields=["platform", "external_id"],
                condition=~Q(health="disconnected"),
                name="leadads_connection_external_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.platform} {self.name}"


class LeadIntake(models.Model):
    """One signed callback body, saved before the platform is answered (rule 7: one intake for both regions, saved
    durably, then forwarded to the owning region). Platform-owned (its practice is not known until it is routed), so
    not a TenantModel. The raw body is kept encrypted (it is forwarded as received, or processed again on a retry)
    and erased once the body is settled and a week old. At most three processing attempts within 24 hours of the
    first."""

    class Status(models.TextChoices):
        RECEIVED = "received"  # waiting for (another) processing attempt
        PROCESSED = "processed"  # every delivery routed here became a submission (deliveries for no page: parked)
        PARKED = "parked"  # no delivery is for a page connected here, and no other region took it: operator review
        FORWARDED = "forwarded"  # handed to the peer region's intake as received
        FAILED = "failed"  # attempts exhausted

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RECEIVED)
    content_digest = models.CharField(max_length=64)
    raw_encrypted = models.TextField(blank=True, default="")
    # The provider's signature header as received (not a secret: it is forwarded with the body to the peer region).
    signature = models.CharField(max_length=512, blank=True, default="")
    deliveries = models.PositiveSmallIntegerField()
    # The pages, ad accounts or advertisers the body names, and those of them no connection here owned.
    routing_keys = models.JSONField(default=list)
    unrouted_keys = models.JSONField(default=list)
    # Search ads: the connection the routing token in the URL named.
    connection = models.ForeignKey(LeadAdConnection, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    forwarded_from = models.CharField(max_length=8, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    first_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=200, blank=True, default="")
    settled_at = models.DateTimeField(null=True, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # A provider's retry of the same body is acknowledged and stores nothing new.
            models.UniqueConstraint(fields=["platform", "content_digest"], name="leadads_intake_digest_unique")
        ]
        indexes = [
            models.Index(fields=["created_at"], condition=Q(status="received"), name="leadads_intake_waiting_idx"),
            models.Index(fields=["status", "created_at"], name="leadads_intake_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.platform} intake {self.created_at:%Y-%m-%d %H:%M} ({self.status})"


class LeadAdSubmission(TenantModel):
    """One lead of one platform for one connection: received → processed, failed or needs_review. `lead_ref` is the
    platform's lead id (the replay key); `fields` the lead's answers under the capture's default field names."""

    class Status(models.TextChoices):
        RECEIVED = "received"
        PROCESSED = "processed"
        FAILED = "failed"
        NEEDS_REVIEW = "needs_review"

    connection = models.ForeignKey(LeadAdConnection, on_delete=models.CASCADE, related_name="submissions")
    intake = models.ForeignKey(LeadIntake, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    platform = models.CharField(max_length=16, choices=Platform.choices)
    lead_ref = models.CharField(max_length=128)
    form_ref = models.CharField(max_length=64, blank=True, default="")
    campaign_ref = models.CharField(max_length=64, blank=True, default="")
    ad_ref = models.CharField(max_length=64, blank=True, default="")
    click_id = models.CharField(max_length=500, blank=True, default="")
    is_test = models.BooleanField(default=False)
    fields = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    reason = models.CharField(max_length=32, blank=True, default="")
    patient = models.ForeignKey(
        "patients.Patient", null=True, blank=True, on_delete=models.SET_NULL, related_name="lead_ad_submissions"
    )
    patient_created = models.BooleanField(default=False)
    journey_id = models.UUIDField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)  # when the person sent the form, per the platform
    processed_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "lead_ref"], name="leadads_submission_lead_unique"
            )
        ]
        indexes = [
            models.Index(F("organization"), F("created_at").desc(), F("id").desc(), name="leadads_sub_org_idx"),
            models.Index(
                F("organization"), F("status"), F("created_at").desc(), F("id").desc(), name="leadads_sub_status_idx"
            ),
            models.Index(fields=["organization", "patient"], name="leadads_sub_patient_idx"),
        ]


class DataDeletionRequest(models.Model):
    """A social platform data-deletion request, answered with its tracker URL and confirmation code. Keeps only the
    SHA-256 of the person's platform id and what was erased."""

    class Status(models.TextChoices):
        COMPLETED = "completed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    confirmation_code = models.CharField(max_length=40, unique=True)
    person_digest = models.CharField(max_length=64)
    region = models.CharField(max_length=8)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.COMPLETED)
    connections_erased = models.PositiveIntegerField(default=0)
    submissions_erased = models.PositiveIntegerField(default=0)
    peer_status = models.CharField(max_length=16, blank=True, default="")  # "", forwarding, forwarded, failed
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"data deletion {self.confirmation_code} ({self.status})"


class PushedLead(TenantModel):
    """A lead an integrator pushed through POST /leads. `external_id` (optional, the integrator's own id) makes a
    retry answer the first result."""

    external_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 (partial unique)
    content_digest = models.CharField(max_length=64)
    patient = models.ForeignKey(
        "patients.Patient", null=True, blank=True, on_delete=models.SET_NULL, related_name="pushed_leads"
    )
    patient_created = models.BooleanField(default=False)
    journey_id = models.UUIDField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    credential_kind = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "external_id"],
                condition=Q(external_id__isnull=False),
                name="leadads_pushed_external_unique",
            )
        ]
        indexes = [models.Index(fields=["organization", "patient"], name="leadads_pushed_patient_idx")]
