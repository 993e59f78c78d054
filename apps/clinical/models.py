"""The clinical workspace's own records: which member account a practitioner profile is (the day list, clinical
notes and prescriptions use it to know who the clinician is), the surgery chairs and the chair of each appointment,
and the clinical documents of a patient (clinical storage)."""

from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.functions import Lower

from apps.core.models import TenantModel


class PractitionerLink(TenantModel):
    """One member per practitioner and one practitioner per member, in the same practice (both unique per
    practice); unlinking deletes the row."""

    # The reverse name lets the day list read the linked member in the same query as the appointments.
    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.CASCADE, related_name="clinical_link")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "practitioner"], name="clinical_link_practitioner_unique"),
            models.UniqueConstraint(fields=["organization", "user"], name="clinical_link_user_unique"),
        ]

    def __str__(self) -> str:
        return f"practitioner {self.practitioner_id} ↔ user {self.user_id}"


class Chair(TenantModel):
    """A surgery chair of one location (a practice's surgeries are its chairs). Names are unique per location,
    ignoring case. An inactive chair is kept for its history and offered to no new booking."""

    location = models.ForeignKey("patients.Location", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=80)
    active = models.BooleanField(default=True)
    position = models.PositiveIntegerField(default=0, help_text="Order in the day list, smallest first.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                F("organization"), F("location"), Lower("name"), name="clinical_chair_location_name_ci_unique"
            ),
        ]
        indexes = [models.Index(fields=["organization", "location", "position"], name="clinical_chair_org_loc_idx")]

    def __str__(self) -> str:
        return self.name


class AppointmentVisit(TenantModel):
    """The clinical workspace's side of one appointment (one row per appointment; the appointments app knows
    nothing of it): the chair it is in, and when the patient arrived, was seated and was done. Goes with its
    appointment; a deleted chair leaves its past visits chairless."""

    appointment = models.ForeignKey("appointments.Appointment", on_delete=models.CASCADE, related_name="clinical_visit")
    chair = models.ForeignKey(Chair, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    arrived_at = models.DateTimeField(null=True, blank=True)
    seated_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "appointment"], name="clinical_visit_appointment_unique"),
        ]
        indexes = [models.Index(fields=["organization", "chair"], name="clinical_visit_chair_idx")]

    def __str__(self) -> str:
        return f"visit of appointment {self.appointment_id}"


class DocumentCategory(models.TextChoices):
    XRAY = "xray"
    PHOTO = "photo"
    SCAN = "scan"
    LETTER = "letter"
    FORM = "form"
    CONSENT = "consent"
    OTHER = "other"


class ClinicalDocument(TenantModel):
    """A file of a patient's clinical record (x-ray, photo, scan, letter, filled form, consent). The bytes are in the
    media storage under clinical/<practice>/<document id><extension> (no personal data in the name); the name the
    uploader gave it may carry some, so it is kept encrypted (apps.core.crypto). Served only through the
    access-checked download route; erased with the patient (the file after the erasure commits)."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=16, choices=DocumentCategory.choices)
    content_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    name_encrypted = models.TextField()
    storage_name = models.CharField(max_length=255)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(fields=["organization", "patient", "-created_at"], name="clinical_doc_org_patient_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.category} document {self.id}"
