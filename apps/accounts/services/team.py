"""Writes of a practice's team: invitations, roles, workspace preferences, members leaving, entitlements.

Every change of what a member may open bumps an access generation (the member's or the practice's), which the
X-Service-Access-Generation header carries to signed-in clients so they refresh their cached /auth/me.
"""

import math
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import hooks, roles
from apps.accounts.errors import (
    AlreadyMember,
    InvitationAlreadyAnswered,
    InvitationEmailMismatch,
    InvitationNotFound,
    LastOwner,
    OwnerAlreadyMember,
    SignInRequired,
    WorkspaceUnavailable,
)
from apps.accounts.models import Invitation, Membership, Organization, User
from apps.core.errors import NotFound, PermissionDenied, RateLimited, ValidationFailed

INVITATION_LIFETIME = timedelta(hours=48)
OWNER_INVITATIONS_PER_WINDOW = 3
OWNER_INVITATION_WINDOW = timedelta(hours=24)
ENTITLEMENT_FIELDS = ("clinical_workspace_available", "pms_native_writes_enabled", "pms_system_of_record")


def _normalized_email(email: str) -> str:
    return email.strip().lower()


def _require_role(role: str) -> None:
    if role not in roles.ROLES:
        raise ValidationFailed.for_field("role", f"must be one of {', '.join(roles.ROLES)}")


def _owners_only(actor: Membership, role: str, what: str) -> None:
    if role == roles.OWNER and actor.role != roles.OWNER:
        raise PermissionDenied(f"Only an owner can {what} the owner role.")


# --- invitations ----------------------------------------------------------------------------------------------


def invitation_status(invitation: Invitation, now: datetime | None = None) -> str:
    """The stored status, with a pending invitation past its expiry reported as expired."""
    now = now or timezone.now()
    if invitation.status == Invitation.Status.PENDING and invitation.expires_at <= now:
        return "expired"
    return invitation.status


def invitation_create(*, actor: Membership, email: str, role: str) -> Invitation:
    """Invite an address to the actor's practice. Earlier pending invitations of the same address are withdrawn;
    owner-role invitations are limited to three e-mails per address per practice per rolling 24 hours."""
    from apps.accounts.tasks import send_invitation_email

    _require_role(role)
    _owners_only(actor, role, "invite someone to")
    email = _normalized_email(email)
    now = timezone.now()
    with transaction.atomic():
        # One invitation decision at a time per practice: the owner limit cannot be raced past.
        organization = Organization.objects.select_for_update().get(pk=actor.organization_id)
        if Membership.objects.for_org(organization).filter(user__email__iexact=email).exists():
            raise OwnerAlreadyMember() if role == roles.OWNER else AlreadyMember()
        if role == roles.OWNER:
            recent = list(
                Invitation.objects.for_org(organization)
                .filter(email=email, role=roles.OWNER, created_at__gt=now - OWNER_INVITATION_WINDOW)
                .order_by("created_at")
                .values_list("created_at", flat=True)[:OWNER_INVITATIONS_PER_WINDOW]
            )
            if len(recent) >= OWNER_INVITATIONS_PER_WINDOW:
                retry = math.ceil((recent[0] + OWNER_INVITATION_WINDOW - now).total_seconds())
                raise RateLimited(
                    retry,
                    "Three owner invitations were e-mailed to this address in the last 24 hours.",
                    code="OWNER_INVITATION_LIMIT",
                )
        Invitation.objects.for_org(organization).filter(email=email, status=Invitation.Status.PENDING).update(
            status=Invitation.Status.CANCELED, responded_at=now
        )
        invitation = Invitation.objects.create(
            organization=organization,
            email=email,
            role=role,
            inviter=actor.user,
            expires_at=now + INVITATION_LIFETIME,
        )
        transaction.on_commit(lambda: send_invitation_email.delay(str(invitation.id)))
    return invitation


def invitation_cancel(*, organization: Organization, invitation_id) -> Invitation:
    with transaction.atomic():
        invitation = Invitation.objects.for_org(organization).select_for_update().filter(pk=invitation_id).first()
        if invitation is None:
            raise NotFound("No such invitation.")
        if invitation_status(invitation) != Invitation.Status.PENDING:
            raise InvitationAlreadyAnswered("Only a pending invitation can be withdrawn.")
        invitation.status, invitation.responded_at = Invitation.Status.CANCELED, timezone.now()
        invitation.save(update_fields=["status", "responded_at", "updated_at"])
    return invitation


def _open_invitation(invitation_id) -> Invitation:
    """The invitation, locked, if it can still be answered; unknown, withdrawn or expired → 404."""
    invitation = (
        Invitation.objects.unscoped()
        .select_for_update()
        .select_related("organization")
        .filter(pk=invitation_id)
        .first()
    )
    if invitation is None:
        raise InvitationNotFound()
    current = invitation_status(invitation)
    if current in (Invitation.Status.ACCEPTED, Invitation.Status.REJECTED):
        raise InvitationAlreadyAnswered()
    if current != Invitation.Status.PENDING:
        raise InvitationNotFound()
    return invitation


def invitation_accept(
    *, invitation_id, user: User | None, password: str | None = None, name: str = ""
) -> tuple[Invitation, User, bool]:
    """Accept as the signed-in person (the invitation's address), or sign up when the address has no account.
    Returns (invitation, person, whether the account was created)."""
    from apps.accounts.services import user_sign_up

    with transaction.atomic():
        invitation = _open_invitation(invitation_id)
        created = False
        if user is not None:
            if user.email.lower() != invitation.email.lower():
                raise InvitationEmailMismatch()
        else:
            if User.objects.filter(email__iexact=invitation.email).exists():
                raise SignInRequired()
            if not password:
                raise ValidationFailed.for_field("password", "is required to create your account")
            user, created = user_sign_up(email=invitation.email, password=password, name=name), True
        if Membership.objects.for_org(invitation.organization).filter(user=user).exists():
            raise AlreadyMember()
        Membership.objects.unscoped().create(organization=invitation.organization, user=user, role=invitation.role)
        invitation.status, invitation.responded_at = Invitation.Status.ACCEPTED, timezone.now()
        invitation.save(update_fields=["status", "responded_at", "updated_at"])
    return invitation, user, created


def invitation_reject(*, invitation_id, user: User | None) -> Invitation:
    with transaction.atomic():
        invitation = _open_invitation(invitation_id)
        if user is not None and user.email.lower() != invitation.email.lower():
            raise InvitationEmailMismatch()
        invitation.status, invitation.responded_at = Invitation.Status.REJECTED, timezone.now()
        invitation.save(update_fields=["status", "responded_at", "updated_at"])
    return invitation


# --- members --------------------------------------------------------------------------------------------------


def _member(organization: Organization, user_id, *, lock: bool = False) -> Membership:
    members = Membership.objects.for_org(organization).select_related("organization", "user")
    if lock:
        members = members.select_for_update()
    membership = members.filter(user_id=user_id).first()
    if membership is None:
        raise NotFound("No such member.")
    return membership


def _keep_an_owner(organization: Organization, leaving: Membership) -> None:
    if leaving.role != roles.OWNER:
        return
    others = Membership.objects.for_org(organization).filter(role=roles.OWNER).exclude(pk=leaving.pk)
    if not others.select_for_update().exists():
        raise LastOwner()


def member_set_workspace(
    *, actor: Membership, user_id, workspace: str, hide_other_workspace: bool | None = None
) -> Membership:
    """A member's default workspace (and whether to hide the other). Own always; others need member:update."""
    if str(user_id) != str(actor.user_id) and not roles.role_has_permission(actor.role, "member:update"):
        raise PermissionDenied("Changing another member's workspace needs the member:update permission.")
    with transaction.atomic():
        target = _member(actor.organization, user_id, lock=True)
        opened = roles.role_workspaces(target.role, clinical_available=target.organization.clinical_workspace_available)
        if workspace not in opened:
            raise WorkspaceUnavailable(details={"workspace": workspace, "available": list(opened)})
        target.default_workspace = workspace
        if hide_other_workspace is not None:
            target.hide_other_workspace = hide_other_workspace
        target.access_generation = F("access_generation") + 1
        target.save(update_fields=["default_workspace", "hide_other_workspace", "access_generation", "updated_at"])
        target.refresh_from_db(fields=["access_generation"])
    return target


def member_set_role(*, actor: Membership, user_id, role: str) -> Membership:
    _require_role(role)
    with transaction.atomic():
        target = _member(actor.organization, user_id, lock=True)
        _owners_only(actor, role, "grant")
        _owners_only(actor, target.role, "take away")
        if target.role == role:
            return target
        if role != roles.OWNER:
            _keep_an_owner(actor.organization, target)
        target.role = role
        target.access_generation = F("access_generation") + 1
        target.save(update_fields=["role", "access_generation", "updated_at"])
        target.refresh_from_db(fields=["access_generation"])
    return target


def member_remove(*, actor: Membership, user_id) -> None:
    """Remove a member (member:update), or leave the practice yourself. Owners are removed only by owners, and the
    last owner stays."""
    leaving_self = str(user_id) == str(actor.user_id)
    if not leaving_self and not roles.role_has_permission(actor.role, "member:update"):
        raise PermissionDenied("Removing another member needs the member:update permission.")
    with transaction.atomic():
        target = _member(actor.organization, user_id, lock=True)
        if not leaving_self:
            _owners_only(actor, target.role, "remove a member holding")
        _keep_an_owner(actor.organization, target)
        target.delete()
        hooks.member_removed(organization=actor.organization, user_id=target.user_id)


def member_access_changed(membership_ids) -> None:
    """Role or workspace preference changed elsewhere (the back office): move those members' generations."""
    Membership.objects.unscoped().filter(pk__in=list(membership_ids)).update(
        access_generation=F("access_generation") + 1
    )


# --- practice-wide entitlements -------------------------------------------------------------------------------


def organization_update_entitlements(*, organization: Organization, **changes) -> Organization:
    """Entitlements and the system of record (back office). A real change moves the practice's access
    generation, so every signed-in member's client refreshes what it may open."""
    unknown = set(changes) - set(ENTITLEMENT_FIELDS)
    if unknown:
        raise ValueError(f"not entitlement fields: {sorted(unknown)}")
    with transaction.atomic():
        locked = Organization.objects.select_for_update().get(pk=organization.pk)
        changed = {k: v for k, v in changes.items() if getattr(locked, k) != v}
        if changed:
            Organization.objects.filter(pk=locked.pk).update(
                **changed, access_generation=F("access_generation") + 1, updated_at=timezone.now()
            )
        locked.refresh_from_db()
    return locked
