"""Agreements the practice accepts to use the service (the terms of service, the data-processing agreement), in
versions, and the practice's acceptances.

An Agreement is global (one text for every practice, written and published by platform staff in the admin); an
AgreementAcceptance belongs to one practice. The current version of a kind is the newest published one; a practice
has a pending agreement while the current version of a kind needs acceptance and the practice has not accepted that
very version. Publishing a new version therefore makes it pending again for every practice, with no per-practice
write."""

import uuid

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class Agreement(models.Model):
    class Kind(models.TextChoices):
        TERMS = "terms", "Terms of service"
        DATA_PROCESSING = "data_processing", "Data-processing agreement"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=24, choices=Kind.choices)
    version = models.CharField(max_length=20, help_text='A label such as "2026-01"; unique within the kind.')
    title = models.CharField(max_length=200)
    body = models.TextField(help_text="The full text (plain text, paragraphs separated by blank lines).")
    # None: a draft, visible to platform staff only. Once set, the text is frozen (the admin makes it read-only).
    published_at = models.DateTimeField(null=True, blank=True)
    effective_at = models.DateTimeField(help_text="When this version governs the service.")
    requires_acceptance = models.BooleanField(
        default=True, help_text="Owners must accept this version on behalf of their practice."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "version"], name="agreements_kind_version_unique")]
        indexes = [models.Index(fields=["kind", "-published_at"], name="agreements_kind_published_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.version}"


class AgreementAcceptance(TenantModel):
    """An owner's acceptance of one agreement version on behalf of the practice. Kept for the practice's whole life:
    the record that the practice agreed, who did it, when and from which network (an address block, never the exact
    address). The accepting person's name is copied so the record outlives their account."""

    agreement = models.ForeignKey(Agreement, on_delete=models.PROTECT, related_name="+", db_index=False)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    accepted_by_name = models.CharField(max_length=200, blank=True, default="")
    accepted_at = models.DateTimeField()
    address_block = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "agreement"], name="agreements_acceptance_unique")
        ]
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="agreements_acceptance_org_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.agreement_id} accepted by {self.organization_id}"
