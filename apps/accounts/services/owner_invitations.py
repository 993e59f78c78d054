"""Owner invitations of a practice that has no owner yet (practices a partner agency creates): issued by someone
outside the practice, so team.invitation_create (which acts as a member of the practice) does not fit. Their e-mail
goes through accounts.tasks.send_invitation_email, which drives the delivery state pending → publishing → published /
parked. Limits on how often an address is mailed are the caller's (it keeps the e-mail log)."""

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts import roles
from apps.accounts.models import Invitation, Organization
from apps.accounts.services.team import INVITATION_LIFETIME

Delivery = Invitation.Delivery


def organization_create_unowned(*, name: str, country: str = "") -> Organization:
    """A practice with no member yet; its owner joins through an owner invitation. `name` and `country` as given."""
    return Organization.objects.create(
        name=name, kind=Organization.Kind.PRACTICE, country=country, region=settings.SVC_REGION
    )


def organization_lock(*, organization_id) -> Organization:
    """The organization row, locked until the transaction ends (one decision at a time about it)."""
    return Organization.objects.select_for_update().get(pk=organization_id)


def _send(invitation: Invitation) -> None:
    from apps.accounts.tasks import send_invitation_email

    invitation_id = str(invitation.id)
    transaction.on_commit(lambda: send_invitation_email.delay(invitation_id))


def owner_invitation_issue(
    *, organization: Organization, email: str, inviter, now: datetime | None = None
) -> Invitation:
    """A new 48-hour owner invitation to `email` (normalized by the caller), e-mailed once the transaction commits."""
    now = now or timezone.now()
    invitation = Invitation.objects.create(
        organization=organization,
        email=email,
        role=roles.OWNER,
        inviter=inviter,
        expires_at=now + INVITATION_LIFETIME,
        delivery=Delivery.PENDING,
    )
    _send(invitation)
    return invitation


def owner_invitation_resend(*, invitation: Invitation, now: datetime | None = None) -> Invitation:
    """The same invitation e-mailed again (same link, same expiry): its delivery starts over."""
    now = now or timezone.now()
    Invitation.objects.for_org(invitation.organization_id).filter(pk=invitation.pk).update(
        delivery=Delivery.PENDING, updated_at=now
    )
    invitation.refresh_from_db()
    _send(invitation)
    return invitation


def owner_invitations_withdraw(
    *, organization: Organization, email: str | None = None, keep=None, open_only: bool = False, now=None
) -> int:
    """Withdraw the organization's pending owner invitations (and, given `email`, any pending invitation to that
    address), except `keep`; `open_only` leaves the expired ones as they are. Returns how many were withdrawn."""
    now = now or timezone.now()
    match = Q(role=roles.OWNER) | Q(email=email) if email is not None else Q(role=roles.OWNER)
    pending = Invitation.objects.for_org(organization).filter(match, status=Invitation.Status.PENDING)
    if open_only:
        pending = pending.filter(expires_at__gt=now)
    if keep is not None:
        pending = pending.exclude(pk=keep.pk)
    return pending.update(status=Invitation.Status.CANCELED, responded_at=now, updated_at=now)


def invitation_delivery_in_flight(invitation: Invitation, now: datetime) -> bool:
    """Queued or being handed to the e-mail backend, and not lost (a delivery stuck past DELIVERY_STALE_AFTER
    counts as failed)."""
    from apps.accounts.tasks import DELIVERY_STALE_AFTER

    return invitation.delivery in (Delivery.PENDING, Delivery.PUBLISHING) and (
        invitation.updated_at > now - DELIVERY_STALE_AFTER
    )
