"""Reads of the clinical workspace."""

from apps.clinical.models import PractitionerLink


def practitioner_of_user(organization, user):
    """The practitioner profile linked to this member in this practice, or None."""
    link = (
        PractitionerLink.objects.for_org(organization)
        .select_related("practitioner")
        .filter(user_id=getattr(user, "pk", user))
        .first()
    )
    return link.practitioner if link else None
