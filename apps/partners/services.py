"""Writes of partner agencies: creating linked practices and managing their owner invitations.

The practice and its owner invitation (an ordinary accounts Invitation, role owner, 48 hours, whose inviter is the
agency member) are made through accounts' services (apps.accounts.services.owner_invitations); this area keeps the
link and the log of owner e-mails its limits count.
"""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.accounts import roles
from apps.accounts.errors import OwnerAlreadyMember
from apps.accounts.models import Invitation, Membership, Organization
from apps.accounts.services import (
    OWNER_INVITATION_WINDOW,
    OWNER_INVITATIONS_PER_WINDOW,
    invitation_delivery_in_flight,
    organization_create_unowned,
    organization_lock,
    owner_invitation_issue,
    owner_invitation_resend,
    owner_invitations_withdraw,
)
from apps.core.errors import RateLimited, ValidationFailed
from apps.partners import selectors
from apps.partners.errors import PracticeOwnerJoined
from apps.partners.models import OwnerInvitationEmail, PracticeLink

PRACTICE_CREATES_PER_WINDOW = 100
PRACTICE_CREATE_WINDOW = timedelta(hours=24)
# A repeat within this long of the last e-mail mails nobody.
OWNER_RESEND_QUIET = timedelta(hours=1)

Delivery = Invitation.Delivery


def _normalized_email(email: str) -> str:
    return email.strip().lower()


def _within_rolling_limit(rows, limit: int, window: timedelta, now: datetime, *, code: str, message: str) -> None:
    """At most `limit` of `rows` (by created_at) in the rolling `window`; else 429 `code` with Retry-After set to
    when the oldest of them leaves the window."""
    recent = list(
        rows.filter(created_at__gt=now - window).order_by("created_at").values_list("created_at", flat=True)[:limit]
    )
    if len(recent) >= limit:
        raise RateLimited(math.ceil((recent[0] + window - now).total_seconds()), message, code=code)


# --- practices ------------------------------------------------------------------------------------------------


def practice_create(*, actor: Membership, name: str, owner_email: str, country: str = "") -> tuple[PracticeLink, bool]:
    """Create a practice for the actor's agency, link it and invite its owner (48 hours). Returns (link, created).

    Idempotent: while the agency still links a practice made from the same name, country and ownerEmail, the
    request answers that practice (created False) and changes nothing. At most 100 creations per agency per
    rolling 24 hours (429 PARTNER_CREATE_LIMIT with Retry-After); an identical repeat is not a creation."""
    agency = actor.organization
    name, email, country = name.strip(), _normalized_email(owner_email), country.strip().upper()
    if not name:
        raise ValidationFailed.for_field("name", "may not be blank")
    now = timezone.now()
    with transaction.atomic():
        # One creation decision at a time per agency: neither the repeat check nor the limit can be raced past.
        organization_lock(organization_id=agency.pk)
        existing = (
            PracticeLink.objects.for_org(agency)
            .filter(unlinked_at__isnull=True, owner_email=email, requested_name=name, requested_country=country)
            .select_related("practice")
            .first()
        )
        if existing is not None:
            return existing, False
        _within_rolling_limit(
            PracticeLink.objects.for_org(agency),
            PRACTICE_CREATES_PER_WINDOW,
            PRACTICE_CREATE_WINDOW,
            now,
            code="PARTNER_CREATE_LIMIT",
            message="This agency created 100 practices in the last 24 hours.",
        )
        practice = organization_create_unowned(name=name, country=country)
        link = PracticeLink.objects.create(
            organization=agency,
            practice=practice,
            created_by=actor.user,
            owner_email=email,
            requested_name=name,
            requested_country=country,
        )
        _new_owner_invitation(practice, email, inviter=actor.user, now=now)
    return link, True


# --- owner invitation -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OwnerInvitationOutcome:
    sent: bool
    invitation: Invitation


def _log_email(invitation: Invitation) -> None:
    """Each owner e-mail is logged: the per-address limit counts them."""
    OwnerInvitationEmail.objects.create(
        organization_id=invitation.organization_id, invitation=invitation, email=invitation.email
    )


def _new_owner_invitation(practice: Organization, email: str, *, inviter, now: datetime) -> Invitation:
    invitation = owner_invitation_issue(organization=practice, email=email, inviter=inviter, now=now)
    _log_email(invitation)
    return invitation


def _lock_practice(actor: Membership, practice_id) -> Organization:
    """The linked practice, locked (one owner-invitation decision at a time per practice); 404 otherwise; 409 once
    its owner joined."""
    link = selectors.link_of(actor.organization, practice_id)
    practice = organization_lock(organization_id=link.practice_id)
    if selectors.owner_joined(practice):
        raise PracticeOwnerJoined()
    return practice


def _check_owner_email_limit(practice: Organization, email: str, now: datetime) -> None:
    _within_rolling_limit(
        OwnerInvitationEmail.objects.for_org(practice).filter(email=email),
        OWNER_INVITATIONS_PER_WINDOW,
        OWNER_INVITATION_WINDOW,
        now,
        code="OWNER_INVITATION_LIMIT",
        message="Three owner invitations were e-mailed to this address for this practice in the last 24 hours.",
    )


def owner_invitation_send(*, actor: Membership, practice_id, owner_email: str) -> OwnerInvitationOutcome:
    """Resend or correct the owner invitation of a practice the actor's agency created and still links.

    - The open owner invitation to this address was e-mailed less than an hour ago, or its e-mail is still being
      queued: nothing is mailed (sent False).
    - Its last e-mail was parked (or lost in flight): the same invitation is e-mailed again (same link, same
      expiry).
    - Otherwise a new 48-hour invitation to this address is e-mailed; every other pending owner invitation of the
      practice and any other pending invitation to this address are withdrawn.
    Every e-mail counts against three per address per practice per rolling 24 hours (429 OWNER_INVITATION_LIMIT).
    409 PRACTICE_OWNER_JOINED once an owner is a member; 409 OWNER_ALREADY_MEMBER when the address is a member's.
    """
    email = _normalized_email(owner_email)
    now = timezone.now()
    with transaction.atomic():
        practice = _lock_practice(actor, practice_id)
        if Membership.objects.for_org(practice).filter(user__email__iexact=email).exists():
            raise OwnerAlreadyMember()
        pending = Invitation.objects.for_org(practice).filter(status=Invitation.Status.PENDING)
        current = (
            pending.filter(email=email, role=roles.OWNER, expires_at__gt=now).order_by("-created_at", "-id").first()
        )
        if current is not None:
            if invitation_delivery_in_flight(current, now):
                return OwnerInvitationOutcome(False, current)
            if (
                current.delivery == Delivery.PUBLISHED
                and current.last_sent_at
                and (current.last_sent_at > now - OWNER_RESEND_QUIET)
            ):
                return OwnerInvitationOutcome(False, current)
        _check_owner_email_limit(practice, email, now)
        if current is not None and current.delivery != Delivery.PUBLISHED:
            # The last e-mail never left (parked, or lost in flight): the same e-mail again.
            owner_invitations_withdraw(organization=practice, email=email, keep=current, now=now)
            owner_invitation_resend(invitation=current, now=now)
            _log_email(current)
            return OwnerInvitationOutcome(True, current)
        owner_invitations_withdraw(organization=practice, email=email, now=now)
        invitation = _new_owner_invitation(practice, email, inviter=actor.user, now=now)
    return OwnerInvitationOutcome(True, invitation)


def owner_invitation_withdraw(*, actor: Membership, practice_id) -> int:
    """Withdraw the practice's open owner invitations; returns how many were withdrawn (0 when none was open)."""
    now = timezone.now()
    with transaction.atomic():
        practice = _lock_practice(actor, practice_id)
        return owner_invitations_withdraw(organization=practice, open_only=True, now=now)
