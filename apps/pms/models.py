"""The connected PMS: a practice's connection to its practice-management system (the connector contract
"pmsconnect", docs/pms.md), its historical imports, the links between PMS records and CRM records (patients,
appointments, practitioners), the durable receipts of the PMS's signed callbacks, and the sync review queue.

Credentials (the PMS API key, the callback signing secrets) are encrypted at rest (apps.core.crypto) and never
returned after the answer that issues them. A link keeps the last revision applied and a SHA-256 of the content it
was applied with: the revision decides order, the hash tells a revision-only bump from a real change."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from apps.core.models import TenantModel
from apps.pms.provider import PROVIDER


class ConnectionStatus(models.TextChoices):
    IMPORTING = "importing"  # connected; the historical import has not finished yet
    ACTIVE = "active"
    DISCONNECTED = "disconnected"


class Health(models.TextChoices):
    HEALTHY = "healthy"
    DEGRADED = "degraded"  # working, with trouble (a page that failed and waits to be resumed, a rejected body)
    FAILING = "failing"  # the PMS refuses our credentials


class PmsConnection(TenantModel):
    provider = models.CharField(max_length=32, default=PROVIDER)
    name = models.CharField(max_length=120)
    base_url = models.CharField(max_length=500)
    api_key_encrypted = models.TextField()
    signing_secret_encrypted = models.TextField()
    # For 24 hours after a rotation the previous secret still verifies callbacks (the PMS switches over).
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    routing_token = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=ConnectionStatus.choices, default=ConnectionStatus.IMPORTING)
    health = models.CharField(max_length=16, choices=Health.choices, default=Health.HEALTHY)
    health_reason = models.CharField(max_length=64, blank=True, default="")
    health_changed_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    disconnected_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [models.Index(F("organization"), F("created_at").desc(), name="pms_conn_org_idx")]
        constraints = [
            # One connected PMS per practice at a time.
            models.UniqueConstraint(
                fields=["organization"], condition=~Q(status="disconnected"), name="pms_connection_one_live"
            )
        ]

    def __str__(self) -> str:
        return self.name


class ImportState(models.TextChoices):
    RUNNING = "running"
    FAILED = "failed"  # stopped on an error; resumes from its cursor (POST …/resume or a new start)
    COMPLETED = "completed"


class ImportPhase(models.TextChoices):
    PATIENTS = "patients"
    APPOINTMENTS = "appointments"
    DONE = "done"


class PmsImport(TenantModel):
    """One historical import of a connection: patients, then appointments, page by page. The cursor and the counts
    are saved with every batch, in the batch's transaction, so a crashed or stopped run resumes exactly there."""

    connection = models.ForeignKey(PmsConnection, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=16, choices=ImportState.choices, default=ImportState.RUNNING)
    phase = models.CharField(max_length=16, choices=ImportPhase.choices, default=ImportPhase.PATIENTS)
    cursor = models.CharField(max_length=500, blank=True, default="")
    pages = models.PositiveIntegerField(default=0)
    patients_created = models.PositiveIntegerField(default=0)
    patients_matched = models.PositiveIntegerField(default=0)
    patients_updated = models.PositiveIntegerField(default=0)
    patients_unchanged = models.PositiveIntegerField(default=0)
    appointments_created = models.PositiveIntegerField(default=0)
    appointments_updated = models.PositiveIntegerField(default=0)
    appointments_unchanged = models.PositiveIntegerField(default=0)
    practitioners_created = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    # The last problems: [{"at", "phase", "code", "item_id"}] (codes and PMS item ids, never content), at most 50.
    errors = models.JSONField(default=list, blank=True)
    failures = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "connection", "created_at"], name="pms_import_conn_idx")]
        constraints = [
            # Starting twice never makes a second run: one unfinished import per connection.
            models.UniqueConstraint(
                fields=["organization", "connection"],
                condition=~Q(state="completed"),
                name="pms_import_one_unfinished",
            )
        ]

    def __str__(self) -> str:
        return f"import {self.id} ({self.state})"


class SyncState(models.TextChoices):
    SYNCED = "synced"
    REVIEW = "review"  # a conflicting change waits in the review queue


class PmsPatientLink(TenantModel):
    connection = models.ForeignKey(PmsConnection, on_delete=models.CASCADE, related_name="+")
    provider_patient_id = models.CharField(max_length=128)
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    revision = models.BigIntegerField()
    content_hash = models.CharField(max_length=64)
    sync_state = models.CharField(max_length=16, choices=SyncState.choices, default=SyncState.SYNCED)
    linked_at = models.DateTimeField()
    last_synced_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "provider_patient_id"], name="pms_patientlink_item_unique"
            )
        ]
        indexes = [models.Index(fields=["organization", "patient"], name="pms_patientlink_patient_idx")]

    def __str__(self) -> str:
        return f"PMS patient {self.provider_patient_id}"


class PmsAppointmentLink(TenantModel):
    connection = models.ForeignKey(PmsConnection, on_delete=models.CASCADE, related_name="+")
    provider_appointment_id = models.CharField(max_length=128)
    appointment = models.ForeignKey("appointments.Appointment", on_delete=models.CASCADE, related_name="+")
    revision = models.BigIntegerField()
    content_hash = models.CharField(max_length=64)
    sync_state = models.CharField(max_length=16, choices=SyncState.choices, default=SyncState.SYNCED)
    last_synced_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "provider_appointment_id"],
                name="pms_appointmentlink_item_unique",
            )
        ]
        indexes = [models.Index(fields=["organization", "appointment"], name="pms_apptlink_appointment_idx")]

    def __str__(self) -> str:
        return f"PMS appointment {self.provider_appointment_id}"


class PmsPractitionerLink(TenantModel):
    connection = models.ForeignKey(PmsConnection, on_delete=models.CASCADE, related_name="+")
    provider_practitioner_id = models.CharField(max_length=128)
    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "provider_practitioner_id"],
                name="pms_practitionerlink_unique",
            )
        ]

    def __str__(self) -> str:
        return f"PMS practitioner {self.provider_practitioner_id}"


class ReceiptState(models.TextChoices):
    RECEIVED = "received"  # waiting for a worker
    PROCESSED = "processed"
    REJECTED = "rejected"  # settled terminally on arrival (malformed, over 100 events): never processed or retried
    FAILED = "failed"  # attempts exhausted


class PmsReceipt(TenantModel):
    """One signed callback body of the PMS, stored before the 200. The delivery id (X-Service-Delivery-Id) is unique
    per connection: a provider retry is a duplicate and stores nothing. The body is cleared once processed."""

    connection = models.ForeignKey(PmsConnection, on_delete=models.CASCADE, related_name="+")
    delivery_id = models.CharField(max_length=200)
    state = models.CharField(max_length=16, choices=ReceiptState.choices, default=ReceiptState.RECEIVED)
    reason = models.CharField(max_length=64, blank=True, default="")
    payload = models.JSONField(default=dict, blank=True)
    events = models.PositiveSmallIntegerField(default=0)
    # Outcomes once processed: {"applied": n, "unchanged": n, "held": n, "stale": n, "skipped": n}.
    outcome = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "delivery_id"], name="pms_receipt_delivery_unique"
            )
        ]
        indexes = [
            models.Index(fields=["state", "created_at"], name="pms_receipt_waiting_idx", condition=Q(state="received"))
        ]

    def __str__(self) -> str:
        return f"PMS delivery {self.delivery_id} ({self.state})"


class ItemKind(models.TextChoices):
    PATIENT = "patient"
    APPOINTMENT = "appointment"


class ReviewStatus(models.TextChoices):
    OPEN = "open"
    APPLIED = "applied"  # resolved with apply_incoming
    KEPT = "kept"  # resolved with keep_current


class PmsSyncReview(TenantModel):
    """A live change whose content differs from what was applied at the same revision: held, nothing applied, until
    someone chooses. The incoming content (names and contact details) is kept encrypted and never listed."""

    connection = models.ForeignKey(PmsConnection, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=ItemKind.choices)
    provider_item_id = models.CharField(max_length=128)
    revision = models.BigIntegerField()
    incoming_hash = models.CharField(max_length=64)
    incoming_encrypted = models.TextField(blank=True, default="")
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.OPEN)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            # The same conflicting content replayed is one review, not one per delivery.
            models.UniqueConstraint(
                fields=["organization", "connection", "kind", "provider_item_id", "revision", "incoming_hash"],
                name="pms_review_conflict_unique",
            )
        ]
        indexes = [
            models.Index(F("organization"), F("status"), F("created_at").desc(), name="pms_review_org_status_idx"),
            models.Index(fields=["organization", "patient"], name="pms_review_patient_idx"),
        ]

    def __str__(self) -> str:
        return f"review {self.kind} {self.provider_item_id}@{self.revision}"
