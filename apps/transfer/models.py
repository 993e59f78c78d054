"""Data transfer: patient imports from files, exports of the practice's data, and the practice archive (a departing
practice's full export and the closing of its account after a grace period)."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class ImportFormat(models.TextChoices):
    CSV = "csv"  # any CSV: the columns are mapped by hand (a mapping is suggested from the header names)
    DENTALLY = "dentally"  # a UK dental PMS's patient export (Dentally's column names): mapped automatically


class ImportStatus(models.TextChoices):
    UPLOADED = "uploaded"  # stored; columns detected; waiting for a mapping
    VALIDATED = "validated"  # mapped and checked: the validation report is ready; may be dry-run or started
    RUNNING = "running"  # the background job is writing patients, chunk by chunk
    COMPLETED = "completed"
    FAILED = "failed"  # stopped by an error: resumable from the last committed chunk


class PatientImport(TenantModel):
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    format = models.CharField(max_length=16, choices=ImportFormat.choices)
    # The external-id namespace of the rows: a re-run with the same source updates the patients it made.
    source = models.CharField(max_length=64)
    file_name = models.CharField(max_length=200, help_text="The uploaded file's name as sent (shown back only).")
    storage_name = models.CharField(max_length=255)
    size_bytes = models.PositiveBigIntegerField()
    delimiter = models.CharField(max_length=1, default=",")
    columns = models.JSONField(default=list)  # the header row
    mapping = models.JSONField(default=dict)  # patient field (wire name) → column
    status = models.CharField(max_length=16, choices=ImportStatus.choices, default=ImportStatus.UPLOADED)
    rows_total = models.PositiveIntegerField(default=0)
    rows_valid = models.PositiveIntegerField(default=0)
    rows_invalid = models.PositiveIntegerField(default=0)
    problems_total = models.PositiveIntegerField(default=0)
    # Progress of the run; rows_done is the checkpoint: data rows committed (a resumed run skips that many).
    rows_done = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # the last committed chunk (the stall sweep reads it)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at", "-id"], name="transfer_import_org_idx"),
            models.Index(fields=["organization", "status"], name="transfer_import_status_idx"),
        ]


class ImportProblem(TenantModel):
    """One problem of one row: spreadsheet row number (the header is row 1), the column as named in the file (or the
    patient field when no column is mapped to it), and what is wrong. Values are never stored."""

    patient_import = models.ForeignKey(PatientImport, on_delete=models.CASCADE, related_name="+", db_index=False)
    row = models.PositiveIntegerField()
    column = models.CharField(max_length=200)
    field = models.CharField(max_length=32, blank=True, default="")
    problem = models.CharField(max_length=200)

    class Meta:
        indexes = [models.Index(fields=["organization", "patient_import", "row"], name="transfer_problem_row_idx")]


class ExportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    READY = "ready"
    FAILED = "failed"
    EXPIRED = "expired"  # the file is deleted (retention); the row stays as the record of the export


class ExportPurpose(models.TextChoices):
    EXPORT = "export"
    ARCHIVE = "archive"  # the practice archive's full export (kept until the practice closes)


DATASETS = ("patients", "journeys", "tasks", "appointments", "conversations")


class DataExport(TenantModel):
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    purpose = models.CharField(max_length=8, choices=ExportPurpose.choices, default=ExportPurpose.EXPORT)
    datasets = models.JSONField(default=list)
    status = models.CharField(max_length=8, choices=ExportStatus.choices, default=ExportStatus.QUEUED)
    rows_total = models.PositiveIntegerField(default=0)
    rows_done = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict)  # dataset → rows written
    storage_name = models.CharField(max_length=255, blank=True, default="")
    size_bytes = models.PositiveBigIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    file_expires_at = models.DateTimeField(null=True, blank=True)  # the file's retention end (null: archive)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at", "-id"], name="transfer_export_org_idx"),
            models.Index(fields=["organization", "status"], name="transfer_export_status_idx"),
        ]


class ArchiveStatus(models.TextChoices):
    SCHEDULED = "scheduled"  # the grace period runs; cancellable
    CANCELLED = "cancelled"
    CLOSING = "closing"  # the sweep is closing the account (access ended; data being erased)
    CLOSED = "closed"


class PracticeArchive(TenantModel):
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    export = models.ForeignKey(DataExport, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=ArchiveStatus.choices, default=ArchiveStatus.SCHEDULED)
    closes_at = models.DateTimeField()
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)
    # What the closing did (counts only): members removed, connections disconnected, endpoints archived, patients
    # erased, files deleted.
    closing_report = models.JSONField(default=dict)

    class Meta:
        indexes = [models.Index(fields=["organization", "status", "closes_at"], name="transfer_archive_status_idx")]
        constraints = [
            # One archive in progress per practice.
            models.UniqueConstraint(
                fields=["organization"],
                condition=Q(status__in=["scheduled", "closing"]),
                name="transfer_archive_open_unique",
            )
        ]
