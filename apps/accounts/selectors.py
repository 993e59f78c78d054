"""Reads of people, practices, memberships and keys."""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.accounts import roles
from apps.accounts.models import ApiKey, Membership, Organization, User
from apps.core.credentials import Credential
from apps.core.errors import OrganizationAmbiguous, OrganizationForbidden, ValidationFailed
from apps.core.uuids import parse_uuid

LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_key_for_digest(digest: str) -> ApiKey | None:
    now = timezone.now()
    return (
        ApiKey.objects.select_related("user")
        .filter(key_hash=digest, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )


def api_key_touch(key: ApiKey) -> None:
    """Record use at most once a minute: one conditional UPDATE, no read-modify-write race."""
    now = timezone.now()
    if key.last_used_at and now - key.last_used_at < LAST_USED_RESOLUTION:
        return
    ApiKey.objects.filter(id=key.id).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ).update(last_used_at=now)


def api_key_list(*, user: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at", "-id")


def memberships_of(user: User) -> QuerySet[Membership]:
    """A person's memberships across practices: the one read that spans organizations by design."""
    return Membership.objects.unscoped().filter(user=user).order_by("created_at", "id")


def membership_list(*, organization: Organization) -> QuerySet[Membership]:
    return Membership.objects.for_org(organization).select_related("user").order_by("created_at", "id")


@dataclass(frozen=True)
class OrganizationChoice:
    organization: Organization | None
    membership: Membership | None


SESSION_ACTIVE_ORG_KEY = "active_organization_id"


def resolve_organization(*, user: User, credential: Credential, header: str | None, session=None):
    """Pick the practice a request acts in (spec "Organization selection").

    A credential carrying an acting membership (an agency connection acting inside a linked practice, set by the
    MCP server) acts with it. OAuth tokens name their practice. Otherwise X-Organization-ID decides; without it a
    session falls back to its active practice, and any caller with exactly one membership gets that one. Several
    and no choice → 403.
    Memberships are re-read on every request, so a removed or demoted member loses access at once.
    """
    if credential.acting_membership is not None:
        # An agency connection acting inside a linked practice (apps.partners): decided by the MCP server per call.
        acting = credential.acting_membership
        return OrganizationChoice(acting.organization, acting)
    memberships = memberships_of(user).select_related("organization")
    if credential.bound_organization_id is not None:
        membership = memberships.filter(organization_id=credential.bound_organization_id).first()
        if membership is None:
            raise OrganizationForbidden("The practice this token was granted for no longer admits you.")
        return OrganizationChoice(membership.organization, membership)
    if header is not None:
        organization_id = parse_uuid(header.strip())
        if organization_id is None:
            raise ValidationFailed.for_field("X-Organization-ID", "must be a UUID")
        membership = memberships.filter(organization_id=organization_id).first()
        if membership is None:
            raise OrganizationForbidden()
        return OrganizationChoice(membership.organization, membership)
    if session is not None and not credential.is_machine:
        active = parse_uuid(session.get(SESSION_ACTIVE_ORG_KEY) or "")
        if active is not None:
            membership = memberships.filter(organization_id=active).first()
            if membership is not None:
                return OrganizationChoice(membership.organization, membership)
    candidates = list(memberships[:2])
    if len(candidates) == 1:
        return OrganizationChoice(candidates[0].organization, candidates[0])
    if not candidates:
        return OrganizationChoice(None, None)
    raise OrganizationAmbiguous()


def effective_workspaces(membership: Membership) -> tuple[list[str], str]:
    """(workspaces, defaultWorkspace), derived on every call from the role and the member's preference."""
    opened = roles.role_workspaces(
        membership.role, clinical_available=membership.organization.clinical_workspace_available
    )
    default = membership.default_workspace if membership.default_workspace in opened else opened[0]
    if membership.hide_other_workspace:
        return [default], default
    return opened, default


def access_generation(membership: Membership) -> int:
    return membership.organization.access_generation + membership.access_generation


def auth_me(*, user: User, credential: Credential, choice: OrganizationChoice) -> dict:
    organization = None
    if choice.membership is not None:
        membership = choice.membership
        org = membership.organization
        workspaces, default = effective_workspaces(membership)
        organization = {
            "id": org.id,
            "name": org.name,
            "member_role": membership.role,
            "workspaces": workspaces,
            "default_workspace": default,
            "hide_other_workspace": membership.hide_other_workspace,
            "pms_access": {
                "pms_workspace_available": org.clinical_workspace_available,
                "native_writes_enabled": org.pms_native_writes_enabled,
                "system_of_record": org.pms_system_of_record,
                "authority_generation": org.pms_authority_generation,
            },
            "access_generation": 0 if credential.is_machine else access_generation(membership),
        }
    return {
        "user": {"id": user.id, "email": user.email, "name": user.name},
        "session": {"active_organization_id": choice.organization.id if choice.organization else None},
        "organization": organization,
    }
