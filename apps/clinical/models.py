"""The clinical workspace's own records: which member account a practitioner profile is (the day list, clinical
notes and prescriptions use it to know who the clinician is)."""

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class PractitionerLink(TenantModel):
    """One member per practitioner and one practitioner per member, in the same practice (both unique per
    practice); unlinking deletes the row."""

    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "practitioner"], name="clinical_link_practitioner_unique"),
            models.UniqueConstraint(fields=["organization", "user"], name="clinical_link_user_unique"),
        ]

    def __str__(self) -> str:
        return f"practitioner {self.practitioner_id} ↔ user {self.user_id}"
