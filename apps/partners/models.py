"""An agency's link to a practice it created. The agency is the tenant (`organization`); the practice is a
separate tenant whose own rows stay scoped to it."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel


class PracticeLink(TenantModel):
    """A practice created by the agency (`organization`, of kind partner). While linked (unlinked_at null) the agency
    manages its owner invitation and its members act inside it through MCP's practice argument.

    The creation request is recorded (name, country, ownerEmail as sent): an identical repeat of
    POST /partner/practices while the practice is still linked answers that practice instead of making another."""

    practice = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    owner_email = models.EmailField(max_length=254, help_text="ownerEmail of the creation request, lower-cased.")
    requested_name = models.CharField(max_length=200)
    requested_country = models.CharField(max_length=2, blank=True)
    unlinked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "practice"], name="partners_link_agency_practice_unique"),
            models.UniqueConstraint(
                fields=["organization", "owner_email", "requested_name", "requested_country"],
                condition=Q(unlinked_at__isnull=True),
                name="partners_link_creation_key_unique",
            ),
        ]
        indexes = [models.Index(fields=["organization", "-created_at"], name="partners_link_agency_idx")]

    def __str__(self) -> str:
        return f"{self.organization_id} → {self.practice_id}"


class OwnerInvitationEmail(TenantModel):
    """One owner-invitation e-mail queued by an agency for a practice (`organization` = the practice): what the
    three-per-address-per-24-hours limit counts. A parked e-mail sent again is a new row: it is another e-mail."""

    invitation = models.ForeignKey("accounts.Invitation", on_delete=models.CASCADE, related_name="+")
    email = models.EmailField(max_length=254)

    class Meta:
        indexes = [models.Index(fields=["organization", "email", "created_at"], name="partners_owner_email_idx")]

    def __str__(self) -> str:
        return f"owner invitation e-mail to {self.email}"
