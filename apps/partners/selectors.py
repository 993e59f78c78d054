"""Reads for partner agencies, and the hook the MCP server calls to act inside a linked practice.

Acting inside a linked practice (spec, MCP rule 8: "with the approving person's current role there"): agency
members have no membership in the practices their agency creates, so the person's current role in the agency
applies inside every practice the agency still links. Should the person also hold a membership of that practice
(for example after accepting an invitation there), that membership is their current role there and wins. Both are
re-read on every call, so a member removed from the agency, or a practice unlinked, stops at once.
"""

import dataclasses
from uuid import UUID

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from apps.accounts import roles
from apps.accounts.models import Invitation, Membership, Organization, User
from apps.agreements.public import pending_agreement_items
from apps.conversations.public import email_channel_active
from apps.core.credentials import Credential
from apps.core.errors import OrganizationForbidden
from apps.core.uuids import parse_uuid
from apps.leadads.public import lead_ads_connected
from apps.partners.errors import PracticeNotFound
from apps.partners.models import PracticeLink
from apps.sites.public import website_configured

# Attribute set on the membership a request acts with inside a linked practice: the agency it acts through.
ACTING_AGENCY_ATTR = "acting_agency_id"


def _pk(organization) -> UUID | None:
    value = getattr(organization, "pk", organization)
    return value if isinstance(value, UUID) else parse_uuid(str(value or ""))


def linked_practice(agency_organization, practice_id) -> Organization | None:
    """The practice `practice_id` if this agency created it and still links it; any other id (unknown, malformed,
    another agency's, unlinked) → None, which the caller answers with 404 PRACTICE_NOT_FOUND."""
    agency_id, practice_uuid = _pk(agency_organization), _pk(practice_id)
    if agency_id is None or practice_uuid is None:
        return None
    link = (
        PracticeLink.objects.for_org(agency_id)
        .filter(practice_id=practice_uuid, unlinked_at__isnull=True)
        .select_related("practice")
        .first()
    )
    return link.practice if link is not None else None


def link_of(agency_organization, practice_id) -> PracticeLink:
    """The agency's live link to this practice, or 404 PRACTICE_NOT_FOUND."""
    practice_uuid = _pk(practice_id)
    link = None
    if practice_uuid is not None:
        link = (
            PracticeLink.objects.for_org(agency_organization)
            .filter(practice_id=practice_uuid, unlinked_at__isnull=True)
            .select_related("practice")
            .first()
        )
    if link is None:
        raise PracticeNotFound()
    return link


def acting_membership(user: User, agency, practice: Organization) -> Membership | None:
    """The membership `user` acts with inside `practice` through `agency` (see the module docstring): their own
    membership of the practice if they hold one, else an unsaved Membership carrying their current agency role.
    None when the person is no longer a member of the agency. Marked with `acting_agency_id` either way."""
    agency_id = _pk(agency)
    agency_membership = Membership.objects.for_org(agency_id).filter(user=user).only("role").first()
    if agency_membership is None:
        return None
    membership = Membership.objects.for_org(practice).filter(user=user).first()
    if membership is None:
        # Never saved: it exists for this request only (id None, no access generation of its own).
        membership = Membership(id=None, user=user, role=agency_membership.role, access_generation=0)
    membership.organization = practice
    setattr(membership, ACTING_AGENCY_ATTR, agency_id)
    return membership


def is_agency_acting(membership) -> bool:
    return getattr(membership, ACTING_AGENCY_ATTR, None) is not None


def practice_credential(*, user: User, credential: Credential, practice_id) -> Credential:
    """THE HOOK for the MCP server: a tool call with a `practice` argument runs its internal request with the
    credential this returns. The agency is the practice the connection was granted for (bound_organization_id).

    Raises OrganizationForbidden (403) when the person is no longer a member of the agency, and PracticeNotFound
    (404 PRACTICE_NOT_FOUND) for any id the agency did not create or no longer links (a connection of an ordinary
    practice has no linked practices, so every id is 404 there)."""
    agency_id = credential.bound_organization_id
    if agency_id is None:
        raise PracticeNotFound()
    if not Membership.objects.for_org(agency_id).filter(user=user).exists():
        raise OrganizationForbidden("The agency this token was granted for no longer admits you.")
    practice = linked_practice(agency_id, practice_id)
    if practice is None:
        raise PracticeNotFound()
    membership = acting_membership(user, agency_id, practice)
    if membership is None:  # removed from the agency between the two reads
        raise OrganizationForbidden("The agency this token was granted for no longer admits you.")
    return dataclasses.replace(credential, acting_membership=membership)


# --- lists and status ---------------------------------------------------------------------------------------------


def _owner_joined(practice_ref) -> Exists:
    return Exists(Membership.objects.unscoped().filter(organization_id=practice_ref, role=roles.OWNER))


def practice_list(*, agency: Organization) -> QuerySet[PracticeLink]:
    """The practices the agency created and still links, with owner_joined; newest first (cursor paging)."""
    return (
        PracticeLink.objects.for_org(agency)
        .filter(unlinked_at__isnull=True)
        .select_related("practice")
        .annotate(owner_joined=_owner_joined(OuterRef("practice_id")))
        .order_by("-created_at", "-id")
    )


def owner_joined(practice: Organization) -> bool:
    return Membership.objects.for_org(practice).filter(role=roles.OWNER).exists()


def newest_owner_invitations(practice_ids) -> dict[UUID, Invitation]:
    """The newest owner invitation of each practice (one read across the page's practices, all linked to the
    calling agency)."""
    rows = (
        Invitation.objects.unscoped()
        .filter(organization_id__in=list(practice_ids), role=roles.OWNER)
        .order_by("organization_id", "-created_at", "-id")
        .distinct("organization_id")
    )
    return {invitation.organization_id: invitation for invitation in rows}


def newest_owner_invitation(practice: Organization) -> Invitation | None:
    return Invitation.objects.for_org(practice).filter(role=roles.OWNER).order_by("-created_at", "-id").first()


# Sending conversions (offline conversions, conversion APIs) to ad platforms: no area of this deployment does it
# (lead ads only receive leads; POST /leads only takes them in), so it is reported as not offered, never invented.
UNAVAILABLE_AREA = {"available": False, "configured": False}


def _area(configured: bool) -> dict:
    return {"available": True, "configured": configured}


def setup_status(*, practice: Organization) -> dict:
    """What a practice has set up so far (GET /settings/practice/setup-status). Reads only.

    website: an active website with an allowed domain and a usable capture form (apps.sites); leadAds: a lead-ad
    connection not disconnected (apps.leadads); emailDomains: an active e-mail channel connection, its sending
    domain's provider delivering verified callbacks (apps.conversations); pendingAgreements: the current agreement
    versions the practice has not accepted (apps.agreements); conversions: not offered (see UNAVAILABLE_AREA)."""
    now = timezone.now()
    joined = owner_joined(practice)
    member_count = Membership.objects.for_org(practice).count()
    pending = Invitation.objects.for_org(practice).filter(status=Invitation.Status.PENDING, expires_at__gt=now).count()
    invitation = newest_owner_invitation(practice)
    areas = (
        Organization.objects.filter(pk=practice.pk)
        .values(
            website=website_configured(practice),
            lead_ads=lead_ads_connected(practice),
            email_domains=email_channel_active(practice),
        )
        .get()
    )
    agreements = pending_agreement_items(practice)
    guide = [
        {"key": "owner", "title": "The practice owner accepts the invitation", "done": joined, "available": True},
        {"key": "team", "title": "Invite the team", "done": member_count > 1, "available": True},
        {"key": "website", "title": "Connect the website", "done": areas["website"], "available": True},
        {"key": "lead_ads", "title": "Connect lead ads", "done": areas["lead_ads"], "available": True},
        {"key": "conversions", "title": "Send conversions to ad platforms", "done": False, "available": False},
        {
            "key": "email_domains",
            "title": "Verify an e-mail sending domain",
            "done": areas["email_domains"],
            "available": True,
        },
        {"key": "agreements", "title": "Accept the pending agreements", "done": not agreements, "available": True},
    ]
    return {
        "guide": guide,
        "owner": {"joined": joined, "invitation": invitation},
        "team": {"member_count": member_count, "pending_invitations": pending},
        "website": _area(areas["website"]),
        "lead_ads": _area(areas["lead_ads"]),
        "conversions": UNAVAILABLE_AREA,
        "email_domains": _area(areas["email_domains"]),
        "pending_agreements": {"available": True, "items": agreements},
    }
