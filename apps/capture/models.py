"""Lead capture: custom endpoints (capture forms) that websites and call systems post leads to, what they received,
the attribution touches a submission carried, and the intake-review queue for submissions that need a person."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q

from apps.core.models import TenantModel


class CaptureForm(TenantModel):
    """A custom endpoint. The routing token is a bearer of sorts: only its SHA-256 digest is looked up, the token
    itself is kept encrypted so the settings page can show the URL again. The signing secret is encrypted too and
    shown once; after a rotation the previous one stays valid until previous_secret_expires_at."""

    class Mode(models.TextChoices):
        PUBLIC = "public"
        SIGNED = "signed"

    class Kind(models.TextChoices):
        FORM_SUBMISSIONS = "form_submissions"
        INCOMING_CALLS = "incoming_calls"

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"
        ARCHIVED = "archived"

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.FORM_SUBMISSIONS)
    delivery_mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.PUBLIC)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    token_digest = models.CharField(max_length=64, unique=True)
    token_encrypted = models.TextField()
    default_treatment = models.ForeignKey(
        "journeys.Treatment", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lead_source = models.ForeignKey(
        "patients.LeadSource", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    location = models.ForeignKey(
        "patients.Location", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # {incoming field name: target}; a target is a default field name, "custom:<key>" or "ignore".
    field_mapping = models.JSONField(default=dict, blank=True)
    mapping_confirmed_at = models.DateTimeField(null=True, blank=True)
    secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        indexes = [models.Index(F("organization"), F("created_at").desc(), F("id").desc(), name="capture_form_org_idx")]

    def __str__(self) -> str:
        return self.name


class CaptureSubmission(TenantModel):
    """One post to a capture form, stored before anything else happens: a stored submission is never lost (it is
    processed now, or on the mapping's confirmation, or by the retry sweep after a failure)."""

    class Status(models.TextChoices):
        RECEIVED = "received"  # stored, not yet processed (processing failed transiently, or is under way)
        PARKED = "parked"  # waits for the form's field mapping to be confirmed
        PROCESSED = "processed"
        REJECTED = "rejected"  # could not make a lead (e.g. no usable e-mail or phone after mapping)

    form = models.ForeignKey(CaptureForm, on_delete=models.CASCADE, related_name="submissions")
    delivery_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 (partial unique)
    content_digest = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RECEIVED)
    fields = models.JSONField(default=dict)
    patient = models.ForeignKey(
        "patients.Patient", null=True, blank=True, on_delete=models.SET_NULL, related_name="capture_submissions"
    )
    journey_id = models.UUIDField(null=True, blank=True)
    patient_created = models.BooleanField(default=False)
    problem = models.CharField(max_length=200, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "form", "delivery_id"],
                condition=Q(delivery_id__isnull=False),
                name="capture_submission_delivery_unique",
            )
        ]
        indexes = [
            models.Index(fields=["organization", "form", "status", "created_at"], name="capture_submission_form_idx"),
            models.Index(fields=["organization", "patient"], name="capture_submission_patient_idx"),
            # The retry sweep: submissions stored but not processed, across practices.
            models.Index(fields=["created_at"], condition=Q(status="received"), name="capture_submission_retry_idx"),
        ]


class CaptureAttachment(TenantModel):
    """A file that came with a multipart submission, kept in the media storage."""

    submission = models.ForeignKey(CaptureSubmission, on_delete=models.CASCADE, related_name="attachments")
    field_name = models.CharField(max_length=200)
    file_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=200, blank=True, default="")
    size = models.PositiveIntegerField()
    storage_name = models.CharField(max_length=500)


class AttributionTouch(TenantModel):
    """Where a lead came from, one row per capture: UTM values, the advertising click id, landing page and
    referrer. GET /patients/{id}?embed=touches lists them."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="attribution_touches")
    form = models.ForeignKey(CaptureForm, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    submission = models.ForeignKey(
        CaptureSubmission, null=True, blank=True, on_delete=models.SET_NULL, related_name="touches"
    )
    utm_source = models.CharField(max_length=255, blank=True, default="")
    utm_medium = models.CharField(max_length=255, blank=True, default="")
    utm_campaign = models.CharField(max_length=255, blank=True, default="")
    utm_term = models.CharField(max_length=255, blank=True, default="")
    utm_content = models.CharField(max_length=255, blank=True, default="")
    utm_id = models.CharField(max_length=255, blank=True, default="")
    click_id_type = models.CharField(max_length=16, blank=True, default="")
    click_id = models.CharField(max_length=500, blank=True, default="")
    landing_url = models.CharField(max_length=2048, blank=True, default="")
    referrer = models.CharField(max_length=2048, blank=True, default="")
    occurred_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(
                F("organization"), F("patient"), F("occurred_at").desc(), F("id").desc(), name="capture_touch_idx"
            )
        ]


class IntakeReviewItem(TenantModel):
    """A capture that needs a person: it kept its lead but the form's default location, treatment or lead source was
    archived (so it was not applied), or the submission matched an archived patient; or it could not become a lead
    at all (no usable e-mail or phone: no patient, the submitted values are shown with the item instead)."""

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"
        DISMISSED = "dismissed"

    class Reason(models.TextChoices):
        LOCATION_ARCHIVED = "location_archived"
        TREATMENT_ARCHIVED = "treatment_archived"
        LEAD_SOURCE_ARCHIVED = "lead_source_archived"
        PATIENT_ARCHIVED = "patient_archived"
        NO_USABLE_CONTACT = "no_usable_contact"

    form = models.ForeignKey(CaptureForm, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    submission = models.ForeignKey(
        CaptureSubmission, null=True, blank=True, on_delete=models.SET_NULL, related_name="review_items"
    )
    patient = models.ForeignKey(
        "patients.Patient", null=True, blank=True, on_delete=models.CASCADE, related_name="intake_review_items"
    )
    reasons = ArrayField(models.CharField(max_length=32, choices=Reason.choices))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    resolution_note = models.CharField(max_length=1000, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(
                F("organization"), F("status"), F("created_at").desc(), F("id").desc(), name="capture_review_idx"
            ),
            models.Index(fields=["organization", "patient"], name="capture_review_patient_idx"),
        ]
