"""GET and POST /partner/practices through HTTP: creating a linked practice with its 48-hour owner invitation, the
identical repeat, the list with ownerJoined, the 100-per-24-hours limit, and who may call it."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client

from apps.accounts.models import Invitation, Membership, Organization
from apps.partners import services
from apps.partners.models import PracticeLink
from tests.conftest import make_member
from tests.helpers import assert_error
from tests.partners.conftest import PRACTICES, START, accept_owner_invitation, post

pytestmark = pytest.mark.usefixtures("clock")


def created(response) -> dict:
    assert response.status_code == 201, response.content
    return response.json()


def test_an_agency_creates_a_practice_and_its_owner_is_invited(agency, create, mailoutbox):
    response = create(agency.api_client(), "Studio Rossi", "Giulia.Rossi@Example.com", country="it")

    body = created(response)
    practice = Organization.objects.get(pk=body["organizationId"])
    assert body == {
        "organizationId": str(practice.id),
        "name": "Studio Rossi",
        "country": "IT",
        "region": settings.SVC_REGION,
        "ownerJoined": False,
        "createdAt": body["createdAt"],
        "ownerInvitation": {
            "email": "giulia.rossi@example.com",
            "status": "pending",
            "expiresAt": "2026-03-04T09:00:00.000000Z",
            "delivery": "pending",  # the e-mail task runs after the commit
        },
    }
    assert practice.kind == Organization.Kind.PRACTICE
    link = PracticeLink.objects.for_org(agency.organization).get()
    assert (link.practice_id, link.created_by_id, link.owner_email) == (
        practice.id,
        agency.user.id,
        "giulia.rossi@example.com",
    )
    assert not Membership.objects.for_org(practice).exists()
    invitation = Invitation.objects.for_org(practice).get()
    assert (invitation.role, invitation.inviter_id, invitation.expires_at) == (
        "owner",
        agency.user.id,
        START + timedelta(hours=48),
    )
    assert (invitation.delivery, invitation.last_sent_at) == ("published", START)
    assert [m.to for m in mailoutbox] == [["giulia.rossi@example.com"]]
    assert "Studio Rossi" in mailoutbox[0].subject
    assert f"/accept-invitation?id={invitation.id}" in mailoutbox[0].body


def test_an_identical_repeat_answers_200_with_the_practice_made(agency, create, mailoutbox):
    first = created(create(agency.api_client(), "Studio Rossi", "giulia@example.com"))

    repeat = create(agency.session_client(), "Studio Rossi", "GIULIA@example.com ")

    assert repeat.status_code == 200, repeat.content
    assert repeat.json()["organizationId"] == first["organizationId"]
    assert PracticeLink.objects.for_org(agency.organization).count() == 1
    assert Invitation.objects.for_org(first["organizationId"]).count() == 1
    assert len(mailoutbox) == 1
    # Another name, country or owner is another practice.
    assert created(create(agency.api_client(), "Studio Rossi Due", "giulia@example.com"))
    assert created(create(agency.api_client(), "Studio Rossi", "marco@example.com"))
    assert created(create(agency.api_client(), "Studio Rossi", "giulia@example.com", country="FR"))
    assert PracticeLink.objects.for_org(agency.organization).count() == 4


def test_a_repeat_after_unlinking_makes_a_new_practice(agency, create):
    first = created(create(agency.api_client()))
    PracticeLink.objects.for_org(agency.organization).update(unlinked_at=START)

    again = created(create(agency.api_client()))

    assert again["organizationId"] != first["organizationId"]


def test_the_list_is_newest_first_with_owner_joined(agency, create, clock):
    older = created(create(agency.api_client(), "Older Dental", "older@example.com"))
    clock.shift(timedelta(minutes=5))
    newer = created(create(agency.api_client(), "Newer Dental", "newer@example.com"))
    accept_owner_invitation(older["organizationId"])
    client = agency.api_client()

    page = client.get(PRACTICES, {"limit": 1})
    assert page.status_code == 200, page.content
    assert [i["organizationId"] for i in page.json()["items"]] == [newer["organizationId"]]
    assert page.json()["items"][0]["ownerJoined"] is False
    rest = client.get(PRACTICES, {"limit": 1, "cursor": page.json()["nextCursor"]}).json()

    assert rest["nextCursor"] is None
    (item,) = rest["items"]
    assert item["organizationId"] == older["organizationId"]
    assert item["ownerJoined"] is True
    assert item["ownerInvitation"]["status"] == "accepted"
    assert item["ownerInvitation"]["delivery"] == "published"


def test_the_list_reads_in_a_fixed_number_of_queries(agency, create, django_assert_max_num_queries):
    for n in range(5):
        created(create(agency.api_client(), f"Practice {n}", f"owner{n}@example.com"))
    client = agency.api_client()

    with django_assert_max_num_queries(8):
        response = client.get(PRACTICES)

    assert len(response.json()["items"]) == 5


def test_at_most_100_creations_per_agency_per_rolling_24_hours(agency, create, clock, mailoutbox):
    services.practice_create(actor=agency.membership, name="First", owner_email="first@example.com")
    clock.shift(timedelta(hours=1))
    for n in range(99):
        services.practice_create(actor=agency.membership, name=f"Practice {n}", owner_email=f"o{n}@example.com")
    mailoutbox.clear()

    refused = create(agency.api_client(), "One Too Many", "late@example.com")

    body = assert_error(refused, 429, "PARTNER_CREATE_LIMIT")
    assert refused["Retry-After"] == str(23 * 3600)
    assert body["details"] == {"retryAfter": 23 * 3600}
    assert PracticeLink.objects.for_org(agency.organization).count() == 100
    assert not Organization.objects.filter(name="One Too Many").exists()
    assert mailoutbox == []
    # An identical repeat is not a creation: it still answers.
    assert create(agency.api_client(), "First", "first@example.com").status_code == 200
    # Another agency has its own allowance.
    assert created(create(make_member(kind="partner").api_client(), "Elsewhere", "e@example.com"))
    # The window rolls: once the first creation is 24 hours old, one more fits.
    clock.shift(timedelta(hours=23, seconds=1))
    assert created(create(agency.api_client(), "One Too Many", "late@example.com"))
    assert_error(create(agency.api_client(), "Another", "x@example.com"), 429, "PARTNER_CREATE_LIMIT")


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": "Studio"}, "ownerEmail"),
        ({"name": "Studio", "ownerEmail": "not-an-address"}, "ownerEmail"),
        ({"ownerEmail": "a@example.com"}, "name"),
        ({"name": "   ", "ownerEmail": "a@example.com"}, "name"),
        ({"name": "Studio", "ownerEmail": "a@example.com", "country": "Italy"}, "country"),
        ({"name": "Studio", "ownerEmail": "a@example.com", "region": "us"}, "region"),
    ],
)
def test_invalid_creations_are_400(agency, payload, field):
    response = post(agency.api_client(), PRACTICES, payload)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"]
    assert not PracticeLink.objects.for_org(agency.organization).exists()


@pytest.mark.parametrize("role", ["owner", "manager", "front_desk", "analyst"])
def test_members_of_a_practice_get_403(member_factory, role, create):
    member = member_factory(role=role)

    listing = member.api_client().get(PRACTICES)
    creating = create(member.api_client())

    assert_error(listing, 403, "PERMISSION_DENIED")
    assert_error(creating, 403, "PERMISSION_DENIED")
    assert Organization.objects.count() == 1


def test_agency_members_without_settings_update_list_but_do_not_create(agency, member_factory, create):
    created(create(agency.api_client()))
    front_desk = member_factory(role="front_desk", organization=agency.organization)

    assert len(front_desk.api_client().get(PRACTICES).json()["items"]) == 1
    assert_error(create(front_desk.api_client(), "Other", "o@example.com"), 403, "PERMISSION_DENIED")


def test_an_agency_sees_only_its_own_practices(agency, other_agency, create):
    created(create(agency.api_client()))

    assert other_agency.api_client().get(PRACTICES).json() == {"items": [], "nextCursor": None}


def test_without_credentials_401():
    assert_error(Client().get(PRACTICES), 401, "UNAUTHENTICATED")
