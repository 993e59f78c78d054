"""Acting inside a linked practice (MCP's practice argument): the hook the MCP server calls
(apps.partners.selectors.practice_credential), the organization resolver returning the acting membership, and
GET /settings/practice/setup-status for owners, managers and agency members only."""

import uuid
from datetime import timedelta

import pytest
from rest_framework.test import APIRequestFactory, force_authenticate

from apps.accounts.models import Invitation, Membership, Organization
from apps.accounts.selectors import resolve_organization
from apps.agreements.models import Agreement
from apps.core.credentials import OAUTH, Credential
from apps.core.errors import OrganizationForbidden
from apps.partners import selectors
from apps.partners.api.views import PartnerPracticesView, SetupStatusView
from apps.partners.errors import PracticeNotFound
from apps.partners.models import PracticeLink
from tests.conftest import make_member
from tests.factories import MembershipFactory
from tests.helpers import assert_error
from tests.partners.conftest import START, accept_owner_invitation

pytestmark = pytest.mark.usefixtures("clock")
SETUP_STATUS = "/settings/practice/setup-status"


@pytest.fixture
def practice(agency, create) -> Organization:
    response = create(agency.api_client(), "Studio Rossi", "giulia@example.com")
    assert response.status_code == 201, response.content
    return Organization.objects.get(pk=response.json()["organizationId"])


def agency_token(member, scopes=("read", "write")) -> Credential:
    """What the OAuth layer hands over for a connection granted in the agency."""
    return Credential(kind=OAUTH, scopes=frozenset(scopes), bound_organization_id=member.organization.id)


def call_as(view, credential: Credential, user, path: str = SETUP_STATUS):
    """Run a route the way the MCP server's internal request does: an identity already authenticated."""
    request = APIRequestFactory().get(path)
    force_authenticate(request, user=user, token=credential)
    response = view.as_view()(request)
    response.render()
    return response


# --- the hook -------------------------------------------------------------------------------------------------------


def test_the_hook_acts_with_the_agency_role_inside_a_linked_practice(agency, practice):
    credential = selectors.practice_credential(
        user=agency.user, credential=agency_token(agency), practice_id=str(practice.id)
    )

    acting = credential.acting_membership
    assert (acting.organization, acting.user, acting.role, acting.pk) == (practice, agency.user, "manager", None)
    assert selectors.is_agency_acting(acting)
    assert credential.bound_organization_id == agency.organization.id  # the rest of the credential is kept
    choice = resolve_organization(user=agency.user, credential=credential, header=str(uuid.uuid4()))
    assert (choice.organization, choice.membership) == (practice, acting)
    assert not Membership.objects.for_org(practice).exists()  # nothing was saved


def test_the_persons_own_membership_of_the_practice_wins(agency, practice):
    own = MembershipFactory(organization=practice, user=agency.user, role="front_desk")

    acting = selectors.practice_credential(
        user=agency.user, credential=agency_token(agency), practice_id=practice.id
    ).acting_membership

    assert (acting.pk, acting.role) == (own.pk, "front_desk")
    assert selectors.is_agency_acting(acting)


@pytest.mark.parametrize("which", ["unknown", "malformed", "other_agency", "unlinked", "the_agency_itself"])
def test_any_other_practice_is_practice_not_found(agency, practice, other_agency, create, which):
    if which == "other_agency":
        foreign = create(other_agency.api_client(), "Elsewhere", "e@example.com").json()["organizationId"]
    elif which == "unlinked":
        PracticeLink.objects.for_org(agency.organization).update(unlinked_at=START)
        foreign = practice.id
    else:
        foreign = {"unknown": uuid.uuid4(), "malformed": "nope", "the_agency_itself": agency.organization.id}[which]

    with pytest.raises(PracticeNotFound) as raised:
        selectors.practice_credential(user=agency.user, credential=agency_token(agency), practice_id=foreign)

    assert (raised.value.status_code, raised.value.code) == (404, "PRACTICE_NOT_FOUND")
    assert selectors.linked_practice(agency.organization, foreign) is None


def test_a_practice_connection_has_no_linked_practices(practice):
    owner = make_member(role="owner")

    with pytest.raises(PracticeNotFound):
        selectors.practice_credential(user=owner.user, credential=agency_token(owner), practice_id=practice.id)


def test_a_person_removed_from_the_agency_stops_at_once(agency, practice):
    token = agency_token(agency)
    agency.membership.delete()

    with pytest.raises(OrganizationForbidden):
        selectors.practice_credential(user=agency.user, credential=token, practice_id=practice.id)
    assert selectors.acting_membership(agency.user, agency.organization, practice) is None


def test_partner_routes_refuse_a_call_acting_inside_a_practice(agency, practice):
    credential = selectors.practice_credential(
        user=agency.user, credential=agency_token(agency), practice_id=practice.id
    )

    response = call_as(PartnerPracticesView, credential, agency.user, "/partner/practices")

    assert response.status_code == 403
    assert response.data["code"] == "PERMISSION_DENIED"


# --- setup status ---------------------------------------------------------------------------------------------------


EMPTY_AREA = {"available": False, "configured": False}


@pytest.mark.usefixtures("agreements_seeded")
def test_an_agency_member_reads_the_setup_status_of_a_linked_practice(agency, practice):
    credential = selectors.practice_credential(
        user=agency.user, credential=agency_token(agency), practice_id=practice.id
    )

    response = call_as(SetupStatusView, credential, agency.user)

    assert response.status_code == 200, response.content
    body = response.data
    assert body["owner"] == {
        "joined": False,
        "invitation": {
            "email": "giulia@example.com",
            "status": "pending",
            "expires_at": "2026-03-04T09:00:00.000000Z",
            "delivery": "published",
        },
    }
    assert body["team"] == {"member_count": 0, "pending_invitations": 1}
    for area in ("website", "lead_ads", "email_domains"):
        assert body[area] == {"available": True, "configured": False}  # nothing connected yet
    assert body["conversions"] == EMPTY_AREA  # no area sends conversions to ad platforms
    terms, dpa = (Agreement.objects.get(kind=kind, version="2025-06") for kind in ("terms", "data_processing"))
    assert body["pending_agreements"] == {
        "available": True,
        "items": [
            {"id": str(terms.id), "kind": "terms", "version": "2025-06", "title": "Terms of service"},
            {"id": str(dpa.id), "kind": "data_processing", "version": "2025-06", "title": "Data-processing agreement"},
        ],
    }
    assert [(s["key"], s["done"], s["available"]) for s in body["guide"]] == [
        ("owner", False, True),
        ("team", False, True),
        ("website", False, True),
        ("lead_ads", False, True),
        ("conversions", False, False),
        ("email_domains", False, True),
        ("agreements", False, True),
    ]


@pytest.mark.parametrize("role", ["front_desk", "analyst", "dentist"])
def test_agency_members_of_any_role_read_it(agency, practice, member_factory, role):
    member = member_factory(role=role, organization=agency.organization)
    credential = selectors.practice_credential(
        user=member.user, credential=agency_token(member), practice_id=practice.id
    )

    assert call_as(SetupStatusView, credential, member.user).status_code == 200


def test_the_token_scopes_still_apply(agency, practice):
    credential = selectors.practice_credential(
        user=agency.user, credential=agency_token(agency, scopes=("patients.read",)), practice_id=practice.id
    )

    response = call_as(SetupStatusView, credential, agency.user)

    assert (response.status_code, response.data["code"]) == (403, "INSUFFICIENT_SCOPE")


def test_owners_and_managers_read_it_through_http(practice, member_factory, clock):
    accept_owner_invitation(practice.id)
    manager = member_factory(role="manager", organization=practice)
    Invitation.objects.create(
        organization=practice, email="desk@example.com", role="front_desk", expires_at=START + timedelta(hours=1)
    )
    owner = Membership.objects.for_org(practice).get(role="owner")

    by_manager = manager.api_client().get(SETUP_STATUS)
    assert by_manager.status_code == 200, by_manager.content
    body = by_manager.json()
    assert body["owner"]["joined"] is True
    assert body["owner"]["invitation"]["status"] == "accepted"
    assert body["team"] == {"memberCount": 2, "pendingInvitations": 1}
    assert [s["done"] for s in body["guide"][:2]] == [True, True]
    assert set(body) == {
        "guide",
        "owner",
        "team",
        "website",
        "leadAds",
        "conversions",
        "emailDomains",
        "pendingAgreements",
    }
    owner_key = make_member(role="owner", organization=practice)  # a second owner with an API key
    assert owner_key.api_client().get(SETUP_STATUS).status_code == 200
    assert owner.role == "owner"
    clock.shift(timedelta(hours=2))  # the front-desk invitation expired: no longer pending
    assert manager.api_client().get(SETUP_STATUS).json()["team"]["pendingInvitations"] == 0


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "nurse"])
def test_other_roles_get_403(practice, member_factory, role):
    member = member_factory(role=role, organization=practice)

    assert_error(member.api_client().get(SETUP_STATUS), 403, "PERMISSION_DENIED")


def test_reading_it_changes_nothing(agency, practice):
    def snapshot():
        return (
            list(Organization.objects.filter(pk=practice.pk).values()),
            list(Invitation.objects.for_org(practice).values()),
            list(Membership.objects.for_org(practice).values()),
            list(PracticeLink.objects.for_org(agency.organization).values()),
        )

    before = snapshot()
    credential = selectors.practice_credential(
        user=agency.user, credential=agency_token(agency), practice_id=practice.id
    )
    assert call_as(SetupStatusView, credential, agency.user).status_code == 200

    assert snapshot() == before


def test_an_agency_acting_on_itself_has_no_setup_status(agency):
    body = assert_error(agency.api_client().get(SETUP_STATUS), 403, "PERMISSION_DENIED")

    assert body["details"] == {"organizationKind": "partner"}
