"""Practices (and agencies) and their memberships."""

from django.conf import settings
from django.db import transaction

from apps.accounts import roles
from apps.accounts.errors import AlreadyMember
from apps.accounts.models import Membership, Organization, User
from apps.core.errors import ValidationFailed


@transaction.atomic
def organization_create(
    *,
    name: str,
    owner: User,
    country: str = "",
    clinical: bool = False,
    kind: str = Organization.Kind.PRACTICE,
) -> Organization:
    name = name.strip()
    if not name:
        raise ValidationFailed.for_field("name", "may not be blank")
    organization = Organization.objects.create(
        name=name,
        kind=kind,
        country=country.upper(),
        region=settings.SVC_REGION,
        clinical_workspace_available=clinical,
    )
    Membership.objects.unscoped().create(organization=organization, user=owner, role=roles.OWNER)
    return organization


@transaction.atomic
def membership_add(*, organization: Organization, user: User, role: str) -> Membership:
    if role not in roles.ROLES:
        raise ValidationFailed.for_field("role", f"must be one of {', '.join(roles.ROLES)}")
    if Membership.objects.for_org(organization).filter(user=user).exists():
        raise AlreadyMember()
    return Membership.objects.unscoped().create(organization=organization, user=user, role=role)
