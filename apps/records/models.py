"""Clinical records of a patient: notes (append-only, corrected by amendments, sealed by signing), medical history
questionnaires with versions and the patient's answers as versions, medical alerts (derived from answers or added by
hand), and patient forms sent by a single-use link.

Free text that is clinical content (note and amendment text and reasons, answers, alert text) is stored encrypted
(apps.core.crypto, Fernet) in `*_encrypted` columns: the database, its backups and the admin never hold it readable.
"""

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class ClinicalNote(TenantModel):
    """Append-only: never edited or deleted through the API (a patient's erasure removes it). Signing seals it."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    appointment = models.ForeignKey(
        "appointments.Appointment", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    practitioner = models.ForeignKey(
        "patients.Practitioner", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    text_encrypted = models.TextField()
    signed_at = models.DateTimeField(null=True, blank=True)
    signed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "patient", "-created_at"], name="records_note_patient")]

    def __str__(self) -> str:
        return f"note {self.id}"


class NoteAmendment(TenantModel):
    """A correction of a note, with its author and reason; the original text stays as it was."""

    note = models.ForeignKey(ClinicalNote, on_delete=models.CASCADE, related_name="amendments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    practitioner = models.ForeignKey(
        "patients.Practitioner", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    text_encrypted = models.TextField()
    reason_encrypted = models.TextField()
    signed_at = models.DateTimeField(null=True, blank=True)
    signed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "note", "created_at"], name="records_amendment_note")]

    def __str__(self) -> str:
        return f"amendment {self.id} of note {self.note_id}"


class Questionnaire(TenantModel):
    """A practice's medical history questionnaire; its questions live in versions (editing publishes a new one)."""

    name = models.CharField(max_length=200)
    is_default = models.BooleanField(default=False)
    current_version = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization"], condition=models.Q(is_default=True), name="records_questionnaire_one_default"
            )
        ]

    def __str__(self) -> str:
        return self.name


class QuestionnaireVersion(TenantModel):
    """The questions as published: never changed, kept for the answers that used them."""

    questionnaire = models.ForeignKey(Questionnaire, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    questions = models.JSONField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "questionnaire", "version"], name="records_questionnaire_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.questionnaire_id} v{self.version}"


class EntrySource(models.TextChoices):
    STAFF = "staff"
    PATIENT = "patient"


class MedicalHistory(TenantModel):
    """One submission of a patient's answers (versions numbered per patient), tied to the questionnaire version."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    questionnaire_version = models.ForeignKey(QuestionnaireVersion, on_delete=models.PROTECT, related_name="+")
    answers_encrypted = models.TextField()
    source = models.CharField(max_length=16, choices=EntrySource.choices)
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name_plural = "medical histories"
        constraints = [
            models.UniqueConstraint(fields=["organization", "patient", "version"], name="records_history_version")
        ]

    def __str__(self) -> str:
        return f"medical history v{self.version} of {self.patient_id}"


class AlertSource(models.TextChoices):
    MEDICAL_HISTORY = "medical_history"
    MANUAL = "manual"


class MedicalAlert(TenantModel):
    """Active until resolved. Alerts derived from a medical history version are resolved when a newer version is
    submitted (and derived again from it)."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=16, choices=AlertSource.choices)
    text_encrypted = models.TextField()
    question_key = models.CharField(max_length=64, blank=True, default="")
    medical_history = models.ForeignKey(
        MedicalHistory, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "patient", "resolved_at"], name="records_alert_patient")]

    def __str__(self) -> str:
        return f"alert {self.id}"


class FormKind(models.TextChoices):
    MEDICAL_HISTORY = "medical_history"
    CONSENT = "consent"


class FormDelivery(models.TextChoices):
    EMAIL = "email"
    SMS = "sms"
    LINK = "link"  # shown by the front desk (a tablet at the desk), never sent


class FormStatus(models.TextChoices):
    PENDING = "pending"
    COMPLETED = "completed"
    REVOKED = "revoked"
    EXPIRED = "expired"  # derived: pending past expires_at (never stored)


class PatientForm(TenantModel):
    """A form sent to a patient by link. Only the SHA-256 of its single-use token is stored."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=FormKind.choices)
    questionnaire_version = models.ForeignKey(
        QuestionnaireVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    title = models.CharField(max_length=200)
    consent_text_encrypted = models.TextField(blank=True, default="")  # the consent form's wording
    delivery = models.CharField(max_length=8, choices=FormDelivery.choices)
    message_id = models.UUIDField(null=True, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=FormStatus.choices, default=FormStatus.PENDING)
    expires_at = models.DateTimeField()
    sent_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    completed_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    medical_history = models.ForeignKey(
        MedicalHistory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    document_id = models.UUIDField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "patient", "-created_at"], name="records_form_patient")]

    def __str__(self) -> str:
        return f"{self.kind} form {self.id}"
