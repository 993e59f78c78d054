"""Reads of people, practices, memberships and keys."""

from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from uuid import UUID

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.accounts import roles
from apps.accounts.models import ApiKey, Membership, Organization, User
from apps.core.credentials import Credential, PrefetchedMemberships
from apps.core.errors import OrganizationAmbiguous, OrganizationForbidden, ValidationFailed
from apps.core.rows import ModelColumns
from apps.core.statements import prepared_cursor
from apps.core.uuids import parse_uuid

LAST_USED_RESOLUTION = timedelta(minutes=1)

# --- one statement per authenticated request: the credential row, its user and the candidate memberships -----------

_USER = ModelColumns(User, "u")
_MEMBERSHIP = ModelColumns(Membership, "m")
_ORGANIZATION = ModelColumns(Organization, "o")


class CredentialStatement:
    """One SQL statement answering a bearer: the credential's row(s) (`head`, joined in `source`), its user (joined on
    `user_ref`) and the user's candidate memberships with their organizations, chosen as resolve_organization
    chooses: in one practice (`organization_ref`: a column such as the token's practice, or %s for the
    X-Organization-ID header's) or, without one, the first two by (created_at, id). A LEFT JOIN LATERAL (… LIMIT 2)
    picks them, so the statement answers 0 rows (no such credential), or 1 or 2 rows (one per candidate; a person
    without one gets a single row with NULL membership columns)."""

    def __init__(
        self, *, head: tuple[ModelColumns, ...], source: str, user_ref: str, where: str, organization_ref=None
    ):
        self.head, self.source, self.user_ref, self.where = head, source, user_ref, where
        self.organization_ref = organization_ref

    @cached_property
    def sql(self) -> str:
        quote = connection.ops.quote_name
        columns = [*self.head, _USER, _MEMBERSHIP, _ORGANIZATION]
        in_practice = f"AND mm.{quote('organization_id')} = {self.organization_ref}" if self.organization_ref else ""
        # Only identifiers of this codebase are formatted in; every value is a bound parameter.
        return (
            f"SELECT {', '.join(part.select_list() for part in columns)} "  # noqa: S608
            f"FROM {self.source} "
            f"JOIN {quote(_USER.table)} u ON u.{quote('id')} = {self.user_ref} "
            f"LEFT JOIN LATERAL (SELECT mm.{quote('id')} FROM {quote(_MEMBERSHIP.table)} mm "
            f"WHERE mm.{quote('user_id')} = u.{quote('id')} {in_practice} "
            f"ORDER BY mm.{quote('created_at')}, mm.{quote('id')} LIMIT 2) pick ON TRUE "
            f"LEFT JOIN {quote(_MEMBERSHIP.table)} m ON m.{quote('id')} = pick.{quote('id')} "
            f"LEFT JOIN {quote(_ORGANIZATION.table)} o ON o.{quote('id')} = m.{quote('organization_id')} "
            f"WHERE {self.where} "
            f"ORDER BY m.{quote('created_at')}, m.{quote('id')}"
        )

    def fetch(self, params: list) -> tuple[tuple, User, tuple[Membership, ...]] | None:
        """(head instances, user, candidate memberships) or None when no row matched. `params` in statement order
        (the practice's %s, when the statement has one, comes before the WHERE clause's)."""
        with prepared_cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if not rows:
            return None
        offset, head = 0, []
        for part in self.head:
            head.append(part.build(rows[0], offset))
            offset += part.width
        user = _USER.build(rows[0], offset)
        offset += _USER.width
        candidates = []
        for row in rows:
            membership = _MEMBERSHIP.build(row, offset)
            if membership is not None:
                membership.organization = _ORGANIZATION.build(row, offset + _MEMBERSHIP.width)
                membership.user = user
                candidates.append(membership)
        return tuple(head), user, tuple(candidates)


def requested_organization_id(header: str | None) -> UUID | None:
    """The practice X-Organization-ID names, when it is a UUID (an invalid one is refused by practice selection)."""
    return parse_uuid(header.strip()) if header is not None else None


_KEY = ModelColumns(ApiKey, "k")
_API_KEY_STATEMENTS = {
    in_practice: CredentialStatement(
        head=(_KEY,),
        source=f'"{ApiKey._meta.db_table}" k',
        user_ref='k."user_id"',
        where='k."key_hash" = %s AND k."revoked_at" IS NULL AND (k."expires_at" IS NULL OR k."expires_at" > %s)',
        organization_ref="%s" if in_practice else None,
    )
    for in_practice in (False, True)
}


def api_key_for_digest(
    digest: str, *, organization_header: str | None = None
) -> tuple[ApiKey, PrefetchedMemberships] | None:
    """The live key with this digest (its user loaded) and the candidate memberships practice selection will weigh
    (those in the X-Organization-ID practice when the header names one, else the first two), in one statement."""
    organization_id = requested_organization_id(organization_header)
    params = [digest, timezone.now()]
    found = _API_KEY_STATEMENTS[organization_id is not None].fetch(
        [organization_id, *params] if organization_id else params
    )
    if found is None:
        return None
    (key,), user, candidates = found
    key.user = user
    return key, PrefetchedMemberships(organization_id, candidates)


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
    # An API key or OAuth token read its candidates in its own statement, in this request: they are used when they
    # answer the question asked here; anything else is read now.
    prefetched = credential.memberships

    def memberships():
        return memberships_of(user).select_related("organization")

    def membership_in(organization_id):
        if prefetched is not None and prefetched.organization_id == organization_id:
            return prefetched.memberships[0] if prefetched.memberships else None
        return memberships().filter(organization_id=organization_id).first()

    if credential.bound_organization_id is not None:
        membership = membership_in(credential.bound_organization_id)
        if membership is None:
            raise OrganizationForbidden("The practice this token was granted for no longer admits you.")
        return OrganizationChoice(membership.organization, membership)
    if header is not None:
        organization_id = requested_organization_id(header)
        if organization_id is None:
            raise ValidationFailed.for_field("X-Organization-ID", "must be a UUID")
        membership = membership_in(organization_id)
        if membership is None:
            raise OrganizationForbidden()
        return OrganizationChoice(membership.organization, membership)
    if session is not None and not credential.is_machine:
        active = parse_uuid(session.get(SESSION_ACTIVE_ORG_KEY) or "")
        if active is not None:
            membership = memberships().filter(organization_id=active).first()
            if membership is not None:
                return OrganizationChoice(membership.organization, membership)
    if prefetched is not None and prefetched.organization_id is None:
        candidates = list(prefetched.memberships)
    else:
        candidates = list(memberships()[:2])
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
