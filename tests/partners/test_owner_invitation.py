"""POST and DELETE /partner/practices/{organizationId}/owner-invitation through HTTP: resend, correct, withdraw,
the quiet hour and the queued e-mail (sent false), a parked e-mail sent again as the same e-mail, the conflicts,
the three-per-24-hours limit, and who may reach which practice."""

import uuid
from datetime import timedelta

import pytest
from django.test import Client

from apps.accounts.models import Invitation
from tests.conftest import make_member
from tests.factories import MembershipFactory, UserFactory
from tests.helpers import assert_error
from tests.partners.conftest import (
    START,
    FailingEmailBackend,
    accept_owner_invitation,
    owner_invitation_path,
    post,
)

pytestmark = pytest.mark.usefixtures("clock")


@pytest.fixture
def practice_id(agency, create):
    """A practice the agency created at START; its owner invitation to giulia@example.com was e-mailed then."""
    response = create(agency.api_client(), "Studio Rossi", "giulia@example.com")
    assert response.status_code == 201, response.content
    return response.json()["organizationId"]


@pytest.fixture
def resend(agency, run_commits):
    def call(practice_id, email="giulia@example.com", client: Client | None = None):
        return run_commits(
            post, client or agency.api_client(), owner_invitation_path(practice_id), {"ownerEmail": email}
        )

    return call


@pytest.fixture
def withdraw(agency, run_commits):
    def call(practice_id, client: Client | None = None):
        return run_commits((client or agency.api_client()).delete, owner_invitation_path(practice_id))

    return call


def invitations(practice_id) -> list[tuple[str, str, str]]:
    return list(
        Invitation.objects.for_org(practice_id).order_by("created_at", "id").values_list("email", "role", "status")
    )


def ok(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()


# --- resend ---------------------------------------------------------------------------------------------------------


def test_a_repeat_within_an_hour_of_the_last_email_mails_nobody(practice_id, resend, mailoutbox, clock):
    first = Invitation.objects.for_org(practice_id).get()
    mailoutbox.clear()
    clock.shift(timedelta(minutes=59))

    body = ok(resend(practice_id))

    assert body["sent"] is False
    assert body["delivery"] == "published"
    assert body["invitation"]["id"] == str(first.id)
    assert body["invitation"]["lastSentAt"] == "2026-03-02T09:00:00.000000Z"
    assert mailoutbox == []
    assert invitations(practice_id) == [("giulia@example.com", "owner", "pending")]


def test_after_the_hour_a_resend_is_a_new_48_hour_invitation(practice_id, resend, mailoutbox, clock):
    first = Invitation.objects.for_org(practice_id).get()
    mailoutbox.clear()
    clock.shift(timedelta(hours=1, seconds=1))

    response = resend(practice_id)

    body = ok(response)
    assert body["sent"] is True
    assert body["delivery"] == "pending"  # answered before the commit runs the e-mail task
    assert body["invitation"]["id"] != str(first.id)
    assert body["invitation"]["expiresAt"] == "2026-03-04T10:00:01.000000Z"
    assert invitations(practice_id) == [
        ("giulia@example.com", "owner", "canceled"),
        ("giulia@example.com", "owner", "pending"),
    ]
    assert [m.to for m in mailoutbox] == [["giulia@example.com"]]
    assert body["invitation"]["id"] in mailoutbox[0].body
    assert Invitation.objects.for_org(practice_id).get(pk=body["invitation"]["id"]).delivery == "published"


def test_a_repeat_while_the_email_is_being_queued_mails_nobody(
    agency, practice_id, mailoutbox, clock, django_capture_on_commit_callbacks
):
    clock.shift(timedelta(hours=2))
    with django_capture_on_commit_callbacks(execute=False):  # the task has not run yet
        first = ok(post(agency.api_client(), owner_invitation_path(practice_id), {"ownerEmail": "giulia@example.com"}))
    mailoutbox.clear()

    repeat = ok(post(agency.api_client(), owner_invitation_path(practice_id), {"ownerEmail": "giulia@example.com"}))

    assert (repeat["sent"], repeat["delivery"]) == (False, "pending")
    assert repeat["invitation"]["id"] == first["invitation"]["id"]
    Invitation.objects.for_org(practice_id).filter(pk=first["invitation"]["id"]).update(delivery="publishing")
    publishing = ok(post(agency.api_client(), owner_invitation_path(practice_id), {"ownerEmail": "giulia@example.com"}))
    assert (publishing["sent"], publishing["delivery"]) == (False, "publishing")
    assert mailoutbox == []


def test_a_parked_email_is_sent_again_as_the_same_email(agency, create, resend, failing_smtp, mailoutbox, clock):
    practice_id = create(agency.api_client(), "Studio Verdi", "luca@example.com").json()["organizationId"]
    parked = Invitation.objects.for_org(practice_id).get()
    assert (parked.delivery, parked.last_sent_at) == ("parked", None)
    assert FailingEmailBackend.attempts == 6  # the first try and five retries
    listed = agency.api_client().get("/partner/practices").json()["items"][0]["ownerInvitation"]
    assert listed["delivery"] == "parked"

    failing_smtp()  # the mail server is back
    clock.shift(timedelta(minutes=5))  # well within the quiet hour: a parked e-mail never left
    body = ok(resend(practice_id, "luca@example.com"))

    assert body["sent"] is True
    assert body["invitation"]["id"] == str(parked.id)
    assert body["invitation"]["expiresAt"] == "2026-03-04T09:00:00.000000Z"
    assert [m.to for m in mailoutbox] == [["luca@example.com"]]
    assert str(parked.id) in mailoutbox[0].body
    parked.refresh_from_db()
    assert (parked.status, parked.delivery, parked.last_sent_at) == (
        "pending",
        "published",
        START + timedelta(minutes=5),
    )


def test_an_email_lost_in_flight_is_sent_again(practice_id, resend, mailoutbox, clock):
    clock.shift(timedelta(hours=2))
    Invitation.objects.for_org(practice_id).update(delivery="publishing", updated_at=START + timedelta(hours=2))
    mailoutbox.clear()
    clock.shift(timedelta(minutes=11))  # past the stale limit: the worker that held it is gone

    body = ok(resend(practice_id))

    assert body["sent"] is True
    assert len(mailoutbox) == 1
    assert Invitation.objects.for_org(practice_id).get().delivery == "published"


# --- correcting the address -----------------------------------------------------------------------------------------


def test_a_new_address_replaces_the_owner_invitation(agency, practice_id, resend, mailoutbox):
    practice_member_invite = Invitation.objects.create(
        organization_id=practice_id,
        email="marco@example.com",
        role="front_desk",
        expires_at=START + timedelta(hours=48),
    )
    other_practice = make_member()
    elsewhere = Invitation.objects.create(
        organization=other_practice.organization,
        email="marco@example.com",
        role="front_desk",
        expires_at=START + timedelta(hours=48),
    )
    mailoutbox.clear()

    body = ok(resend(practice_id, "Marco@Example.com"))

    assert body["sent"] is True
    assert body["invitation"]["email"] == "marco@example.com"
    assert sorted(invitations(practice_id)) == [
        ("giulia@example.com", "owner", "canceled"),
        ("marco@example.com", "front_desk", "canceled"),
        ("marco@example.com", "owner", "pending"),
    ]
    practice_member_invite.refresh_from_db()
    assert practice_member_invite.status == "canceled"
    elsewhere.refresh_from_db()
    assert elsewhere.status == "pending"  # another practice's invitation is not this one's business
    assert [m.to for m in mailoutbox] == [["marco@example.com"]]
    # The corrected owner accepts; the practice shows its owner joined.
    accept_owner_invitation(practice_id)
    assert agency.api_client().get("/partner/practices").json()["items"][0]["ownerJoined"] is True


# --- withdrawing ----------------------------------------------------------------------------------------------------


def test_withdraw_cancels_the_open_owner_invitation(practice_id, withdraw, mailoutbox):
    assert ok(withdraw(practice_id)) == {"canceled": 1}
    assert invitations(practice_id) == [("giulia@example.com", "owner", "canceled")]
    assert ok(withdraw(practice_id)) == {"canceled": 0}


def test_withdraw_leaves_expired_invitations_expired(practice_id, withdraw, clock):
    clock.shift(timedelta(hours=49))

    assert ok(withdraw(practice_id)) == {"canceled": 0}


def test_after_a_withdrawal_the_same_address_gets_a_new_invitation(practice_id, withdraw, resend, mailoutbox):
    ok(withdraw(practice_id))
    mailoutbox.clear()

    body = ok(resend(practice_id))

    assert body["sent"] is True
    assert len(mailoutbox) == 1
    assert sorted(s for _, _, s in invitations(practice_id)) == ["canceled", "pending"]


# --- conflicts and limits -------------------------------------------------------------------------------------------


def test_after_the_owner_joined_409_practice_owner_joined(practice_id, resend, withdraw, mailoutbox):
    accept_owner_invitation(practice_id)
    mailoutbox.clear()
    before = invitations(practice_id)

    assert_error(resend(practice_id, "someone.else@example.com"), 409, "PRACTICE_OWNER_JOINED")
    assert_error(withdraw(practice_id), 409, "PRACTICE_OWNER_JOINED")
    assert invitations(practice_id) == before
    assert mailoutbox == []


def test_an_address_of_a_member_is_409_owner_already_member(practice_id, resend, mailoutbox):
    member = UserFactory(email="desk@example.com")
    MembershipFactory(organization_id=practice_id, user=member, role="front_desk")
    mailoutbox.clear()

    assert_error(resend(practice_id, "DESK@example.com"), 409, "OWNER_ALREADY_MEMBER")
    assert invitations(practice_id) == [("giulia@example.com", "owner", "pending")]
    assert mailoutbox == []


def test_at_most_three_owner_emails_per_address_per_practice_per_rolling_24_hours(
    practice_id, resend, mailoutbox, clock
):
    for _ in range(2):  # the creation e-mail plus two resends, each after the quiet hour
        clock.shift(timedelta(hours=1, seconds=1))
        assert ok(resend(practice_id))["sent"] is True
    clock.shift(timedelta(hours=1, seconds=1))
    mailoutbox.clear()
    before = invitations(practice_id)

    refused = resend(practice_id)

    body = assert_error(refused, 429, "OWNER_INVITATION_LIMIT")
    retry = 24 * 3600 - 3 * 3601
    assert refused["Retry-After"] == str(retry)
    assert body["details"] == {"retryAfter": retry}
    assert invitations(practice_id) == before
    assert mailoutbox == []
    # Another address for the same practice has its own three.
    assert ok(resend(practice_id, "marco@example.com"))["sent"] is True
    # The window rolls.
    clock.shift(timedelta(seconds=retry))
    assert ok(resend(practice_id))["sent"] is True


def test_a_parked_resend_counts_as_an_email(agency, create, resend, failing_smtp, clock):
    practice_id = create(agency.api_client(), "Studio Verdi", "luca@example.com").json()["organizationId"]
    for _ in range(2):
        clock.shift(timedelta(minutes=1))
        assert ok(resend(practice_id, "luca@example.com"))["sent"] is True

    assert_error(resend(practice_id, "luca@example.com"), 429, "OWNER_INVITATION_LIMIT")


# --- reach ----------------------------------------------------------------------------------------------------------


def test_another_agencys_practice_is_404_practice_not_found(other_agency, practice_id, resend, withdraw):
    client = other_agency.api_client()

    assert_error(resend(practice_id, client=client), 404, "PRACTICE_NOT_FOUND")
    assert_error(withdraw(practice_id, client=client), 404, "PRACTICE_NOT_FOUND")
    assert_error(resend(uuid.uuid4()), 404, "PRACTICE_NOT_FOUND")
    assert invitations(practice_id) == [("giulia@example.com", "owner", "pending")]


def test_an_unlinked_practice_is_404(agency, practice_id, resend):
    from apps.partners.models import PracticeLink

    PracticeLink.objects.for_org(agency.organization).update(unlinked_at=START)

    assert_error(resend(practice_id), 404, "PRACTICE_NOT_FOUND")


def test_a_malformed_id_is_400(agency):
    response = post(agency.api_client(), "/partner/practices/not-a-uuid/owner-invitation", {"ownerEmail": "a@b.co"})

    assert_error(response, 400, "VALIDATION_ERROR")


def test_practice_members_get_403_even_for_their_own_practice(practice_id, resend, withdraw):
    owner = make_member(role="owner")
    MembershipFactory(organization_id=practice_id, user=owner.user, role="owner")
    client = owner.api_client(organization_id=practice_id)

    assert_error(resend(practice_id, "x@example.com", client=client), 403, "PERMISSION_DENIED")
    assert_error(withdraw(practice_id, client=client), 403, "PERMISSION_DENIED")


def test_agency_members_without_settings_update_get_403(agency, practice_id, resend, member_factory):
    analyst = member_factory(role="analyst", organization=agency.organization)

    assert_error(resend(practice_id, client=analyst.api_client()), 403, "PERMISSION_DENIED")


def test_a_session_client_of_the_agency_works_the_same(agency, practice_id, withdraw):
    assert ok(withdraw(practice_id, client=agency.session_client())) == {"canceled": 1}
