"""Invitations through HTTP: who may invite whom, the owner-invitation limit, the e-mail (Celery task, Django's
e-mail backend), the 48-hour validity, the preview without a session, accepting (sign-up or membership), rejecting,
withdrawing, and the list with its statuses, all inside the inviting practice."""

import uuid
from datetime import timedelta

import pytest
from django.test import Client

from apps.accounts.models import Invitation, Membership, User
from tests.accounts.two_factor_support import (
    ME,
    clock,  # noqa: F401  (fixture)
    now,
    parse_time,
    post,
)
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.helpers import assert_error

INVITE = "/auth/organization/invite-member"
LIST = "/auth/organization/list-invitations"
CANCEL = "/auth/organization/cancel-invitation"
ACCEPT = "/auth/organization/accept-invitation"
REJECT = "/auth/organization/reject-invitation"
PREVIEW = "/auth/invitation-preview"
NEW_PASSWORD = "lagoon-trellis-amber-58"

pytestmark = pytest.mark.usefixtures("clock")


@pytest.fixture
def owner_client(owner):
    return owner.session_client()


@pytest.fixture
def send(django_capture_on_commit_callbacks):
    """Invite and run the commit hooks (the Celery task, eager in tests) like a real commit would."""

    def invite(client: Client, email: str, role: str = "front_desk"):
        with django_capture_on_commit_callbacks(execute=True):
            return post(client, INVITE, {"email": email, "role": role})

    return invite


def invite_ok(send, client, email, role="front_desk") -> dict:
    response = send(client, email, role)
    assert response.status_code == 201, response.content
    return response.json()


def statuses(client: Client) -> dict[str, str]:
    response = client.get(LIST)
    assert response.status_code == 200, response.content
    return {item["id"]: item["status"] for item in response.json()["items"]}


# --- inviting -----------------------------------------------------------------------------------------------------


def test_an_owner_invites_and_the_email_carries_the_link(owner, owner_client, send, mailoutbox, settings):
    settings.SVC_APP_URL = "https://app.studio-rossi.example"

    response = send(owner_client, "Giulia.Bianchi@Example.com", "manager")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["email"] == "giulia.bianchi@example.com"
    assert body["role"] == "manager"
    assert body["status"] == "pending"
    assert body["organizationId"] == str(owner.organization.id)
    assert body["inviter"] == {"id": str(owner.user.id), "email": owner.user.email, "name": owner.user.name}
    assert parse_time(body["expiresAt"]) == now() + timedelta(hours=48)
    assert body["respondedAt"] is None
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["giulia.bianchi@example.com"]
    assert owner.organization.name in mail.subject
    assert f"https://app.studio-rossi.example/accept-invitation?id={body['id']}" in mail.body
    html, media_type = mail.alternatives[0]
    assert media_type == "text/html" and f"accept-invitation?id={body['id']}" in html


def test_the_invitation_reaches_a_real_smtp_server_as_text_and_html(owner_client, send, smtp):
    body = invite_ok(send, owner_client, "luca.verdi@example.com")
    [message] = smtp.messages
    assert message["To"] == "luca.verdi@example.com"
    assert {part.get_content_type() for part in message.walk()} >= {"text/plain", "text/html"}
    assert f"accept-invitation?id={body['id']}" in message.as_string()


def test_no_email_leaves_before_the_invitation_is_committed(
    owner_client, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post(owner_client, INVITE, {"email": "marco@example.com", "role": "analyst"})

    assert response.status_code == 201, response.content
    assert mailoutbox == []
    assert len(callbacks) == 1


def test_a_manager_invites(member_factory, owner, send, mailoutbox):
    manager = member_factory(role="manager", organization=owner.organization)

    assert invite_ok(send, manager.session_client(), "laura@example.com", "telesales")["role"] == "telesales"
    assert len(mailoutbox) == 1


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse"])
def test_roles_without_member_update_cannot_invite(member_factory, owner, send, mailoutbox, role):
    member = member_factory(role=role, organization=owner.organization)

    response = send(member.session_client(), "someone@example.com", "front_desk")

    assert_error(response, 403, "PERMISSION_DENIED")
    assert not Invitation.objects.unscoped().exists()
    assert mailoutbox == []


def test_only_owners_invite_owners(member_factory, owner, owner_client, send):
    manager = member_factory(role="manager", organization=owner.organization)

    refused = send(manager.session_client(), "partner@example.com", "owner")

    assert_error(refused, 403, "PERMISSION_DENIED")
    assert not Invitation.objects.unscoped().exists()
    assert invite_ok(send, owner_client, "partner@example.com", "owner")["role"] == "owner"


@pytest.mark.parametrize(("role", "code"), [("owner", "OWNER_ALREADY_MEMBER"), ("analyst", "ALREADY_MEMBER")])
def test_inviting_an_existing_member_is_409(member_factory, owner, owner_client, send, mailoutbox, role, code):
    member = member_factory(role="front_desk", organization=owner.organization)

    response = send(owner_client, member.user.email.upper(), role)

    assert_error(response, 409, code)
    assert not Invitation.objects.unscoped().exists()
    assert mailoutbox == []


def test_a_member_of_another_practice_can_be_invited(owner_client, outsider, send):
    assert invite_ok(send, owner_client, outsider.user.email, "manager")["status"] == "pending"


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ({"email": "not-an-address", "role": "manager"}, {"email"}),
        ({"email": "a@example.com", "role": "admin"}, {"role"}),
        ({}, {"email", "role"}),
    ],
)
def test_invalid_invitations_are_400(owner_client, payload, fields):
    body = assert_error(post(owner_client, INVITE, payload), 400, "VALIDATION_ERROR")

    assert set(body["details"]["fields"]) == fields


def test_inviting_needs_a_session(owner):
    assert_error(post(Client(), INVITE, {"email": "a@example.com", "role": "manager"}), 401, "UNAUTHENTICATED")


# --- the owner-invitation limit -----------------------------------------------------------------------------------


def test_owner_invitations_are_limited_to_three_per_address_per_practice_per_day(
    owner, owner_client, outsider, send, mailoutbox, time_machine
):
    for _ in range(3):
        invite_ok(send, owner_client, "dr.verdi@example.com", "owner")
        time_machine.shift(timedelta(hours=1))

    limited = send(owner_client, "Dr.Verdi@example.com", "owner")

    body = assert_error(limited, 429, "OWNER_INVITATION_LIMIT")
    assert int(limited["Retry-After"]) == 21 * 3600
    assert body["details"] == {"retryAfter": 21 * 3600}
    assert len(mailoutbox) == 3
    assert Invitation.objects.for_org(owner.organization).count() == 3
    # Another address, another role, and another practice are not affected.
    invite_ok(send, owner_client, "dr.neri@example.com", "owner")
    invite_ok(send, owner_client, "dr.verdi@example.com", "manager")
    invite_ok(send, outsider.session_client(), "dr.verdi@example.com", "owner")
    assert len(mailoutbox) == 6


def test_the_owner_invitation_window_is_rolling(owner_client, send, time_machine):
    for _ in range(3):
        invite_ok(send, owner_client, "dr.verdi@example.com", "owner")
        time_machine.shift(timedelta(hours=2))
    # Now the three are 6, 4 and 2 hours old.

    time_machine.shift(timedelta(hours=17, minutes=59))  # the first is 23:59 old
    still = send(owner_client, "dr.verdi@example.com", "owner")
    assert_error(still, 429, "OWNER_INVITATION_LIMIT")
    assert int(still["Retry-After"]) == 60

    time_machine.shift(timedelta(minutes=1))  # the first left the window; the other two are still in it
    invite_ok(send, owner_client, "dr.verdi@example.com", "owner")
    assert_error(send(owner_client, "dr.verdi@example.com", "owner"), 429, "OWNER_INVITATION_LIMIT")


def test_withdrawn_owner_invitations_still_count(owner_client, send):
    for _ in range(3):
        invitation = invite_ok(send, owner_client, "dr.verdi@example.com", "owner")
        assert post(owner_client, CANCEL, {"invitationId": invitation["id"]}).status_code == 200

    assert_error(send(owner_client, "dr.verdi@example.com", "owner"), 429, "OWNER_INVITATION_LIMIT")


# --- validity, re-inviting, the list ------------------------------------------------------------------------------


def test_a_new_invitation_withdraws_the_earlier_pending_one(owner_client, send):
    first = invite_ok(send, owner_client, "sara@example.com", "front_desk")
    second = invite_ok(send, owner_client, "sara@example.com", "manager")

    assert statuses(owner_client) == {first["id"]: "canceled", second["id"]: "pending"}
    assert_error(Client().get(PREVIEW, {"id": first["id"]}), 404, "INVITATION_NOT_FOUND")
    refused = post(Client(), ACCEPT, {"invitationId": first["id"], "password": NEW_PASSWORD})
    assert_error(refused, 404, "INVITATION_NOT_FOUND")
    assert not User.objects.filter(email="sara@example.com").exists()


def test_invitations_are_valid_for_48_hours(owner_client, send, time_machine):
    invitation = invite_ok(send, owner_client, "sara@example.com")

    time_machine.shift(timedelta(hours=47, minutes=59))
    assert Client().get(PREVIEW, {"id": invitation["id"]}).status_code == 200

    time_machine.shift(timedelta(minutes=1))
    assert_error(Client().get(PREVIEW, {"id": invitation["id"]}), 404, "INVITATION_NOT_FOUND")
    refused = post(Client(), ACCEPT, {"invitationId": invitation["id"], "password": NEW_PASSWORD})
    assert_error(refused, 404, "INVITATION_NOT_FOUND")
    assert statuses(owner_client) == {invitation["id"]: "expired"}


def test_the_list_shows_every_status(owner, owner_client, send, time_machine):
    existing = UserFactory(email="rita@example.com")
    expired = invite_ok(send, owner_client, "old@example.com")
    time_machine.shift(timedelta(hours=49))
    pending = invite_ok(send, owner_client, "new@example.com")
    accepted = invite_ok(send, owner_client, "nina@example.com")
    rejected = invite_ok(send, owner_client, "rita@example.com")
    canceled = invite_ok(send, owner_client, "ugo@example.com")
    assert post(Client(), ACCEPT, {"invitationId": accepted["id"], "password": NEW_PASSWORD}).status_code == 200
    assert post(signed_in(existing), REJECT, {"invitationId": rejected["id"]}).status_code == 200
    assert post(owner_client, CANCEL, {"invitationId": canceled["id"]}).status_code == 200

    response = owner_client.get(LIST)

    assert response.status_code == 200, response.content
    items = response.json()["items"]
    assert {item["id"]: item["status"] for item in items} == {
        expired["id"]: "expired",
        pending["id"]: "pending",
        accepted["id"]: "accepted",
        rejected["id"]: "rejected",
        canceled["id"]: "canceled",
    }
    assert items[-1]["id"] == expired["id"]  # newest first
    answered = {item["id"]: item["respondedAt"] for item in items}
    assert answered[pending["id"]] is None and answered[accepted["id"]] is not None
    assert response.json()["nextCursor"] is None


def test_the_list_belongs_to_the_practice(owner_client, outsider, send):
    mine = invite_ok(send, owner_client, "mine@example.com")
    theirs = invite_ok(send, outsider.session_client(), "theirs@example.com")

    assert statuses(owner_client) == {mine["id"]: "pending"}
    assert statuses(outsider.session_client()) == {theirs["id"]: "pending"}


def test_the_list_needs_member_update(member_factory, owner):
    member = member_factory(role="analyst", organization=owner.organization)

    assert_error(member.session_client().get(LIST), 403, "PERMISSION_DENIED")


# --- preview ------------------------------------------------------------------------------------------------------


def test_preview_without_a_session_for_a_new_address(owner, owner_client, send):
    invitation = invite_ok(send, owner_client, "giorgio@example.com", "hygienist")

    response = Client().get(PREVIEW, {"id": invitation["id"]})

    assert response.status_code == 200, response.content
    assert response.json() == {
        "id": invitation["id"],
        "email": "giorgio@example.com",
        "role": "hygienist",
        "organization": {"id": str(owner.organization.id), "name": owner.organization.name},
        "inviter": {"id": str(owner.user.id), "email": owner.user.email, "name": owner.user.name},
        "expiresAt": invitation["expiresAt"],
        "accountExists": False,
    }


def test_preview_says_when_the_address_has_an_account(owner_client, outsider, send):
    invitation = invite_ok(send, owner_client, outsider.user.email.upper())

    response = Client().get(PREVIEW, {"id": invitation["id"]})

    assert response.status_code == 200, response.content
    assert response.json()["accountExists"] is True


def test_preview_of_an_unknown_invitation_is_404(db):
    assert_error(Client().get(PREVIEW, {"id": str(uuid.uuid4())}), 404, "INVITATION_NOT_FOUND")


@pytest.mark.parametrize("query", [{"id": "not-a-uuid"}, {"id": "123"}, {}])
def test_preview_with_a_bad_id_is_400(db, query):
    body = assert_error(Client().get(PREVIEW, query), 400, "VALIDATION_ERROR")

    assert list(body["details"]["fields"]) == ["id"]


@pytest.mark.parametrize("answer", ["accepted", "rejected"])
def test_preview_of_an_answered_invitation_is_404(owner_client, send, answer):
    invitation = invite_ok(send, owner_client, "luca@example.com")
    if answer == "accepted":
        post(Client(), ACCEPT, {"invitationId": invitation["id"], "password": NEW_PASSWORD})
    else:
        post(Client(), REJECT, {"invitationId": invitation["id"]})

    assert_error(Client().get(PREVIEW, {"id": invitation["id"]}), 404, "INVITATION_NOT_FOUND")


# --- accepting ----------------------------------------------------------------------------------------------------


def signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    response = post(client, "/auth/sign-in/email", {"email": user.email, "password": DEFAULT_PASSWORD})
    assert response.status_code == 200, response.content
    client.defaults["HTTP_X_CSRFTOKEN"] = client.cookies["csrftoken"].value
    return client


def test_a_new_address_signs_up_by_accepting(owner, owner_client, send):
    invitation = invite_ok(send, owner_client, "chiara@example.com", "front_desk")
    newcomer = Client()

    response = post(
        newcomer, ACCEPT, {"invitationId": invitation["id"], "password": NEW_PASSWORD, "name": "Chiara Russo"}
    )

    assert response.status_code == 200, response.content
    body = response.json()
    user = User.objects.get(email="chiara@example.com")
    assert body["accountCreated"] is True
    assert body["user"] == {"id": str(user.id), "email": "chiara@example.com", "name": "Chiara Russo"}
    assert body["invitation"]["status"] == "accepted"
    assert body["activeOrganizationId"] == str(owner.organization.id)
    assert user.check_password(NEW_PASSWORD)
    assert Membership.objects.for_org(owner.organization).get(user=user).role == "front_desk"
    me = newcomer.get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["session"]["activeOrganizationId"] == str(owner.organization.id)
    assert me.json()["organization"]["memberRole"] == "front_desk"
    assert post(Client(), "/auth/sign-in/email", {"email": user.email, "password": NEW_PASSWORD}).status_code == 200


def test_signing_up_by_accepting_needs_a_good_password(owner_client, send):
    invitation = invite_ok(send, owner_client, "chiara@example.com")

    missing = post(Client(), ACCEPT, {"invitationId": invitation["id"]})
    weak = post(Client(), ACCEPT, {"invitationId": invitation["id"], "password": "password123"})

    assert list(assert_error(missing, 400, "VALIDATION_ERROR")["details"]["fields"]) == ["password"]
    assert list(assert_error(weak, 400, "VALIDATION_ERROR")["details"]["fields"]) == ["password"]
    assert not User.objects.filter(email="chiara@example.com").exists()
    assert statuses(owner_client) == {invitation["id"]: "pending"}


def test_a_signed_in_invitee_joins_and_the_practice_becomes_active(owner, owner_client, outsider, send):
    invitation = invite_ok(send, owner_client, outsider.user.email, "manager")
    client = signed_in(outsider.user)

    response = post(client, ACCEPT, {"invitationId": invitation["id"]})

    assert response.status_code == 200, response.content
    assert response.json()["accountCreated"] is False
    assert response.json()["user"]["id"] == str(outsider.user.id)
    assert Membership.objects.for_org(owner.organization).get(user=outsider.user).role == "manager"
    me = client.get(ME).json()
    assert me["session"]["activeOrganizationId"] == str(owner.organization.id)
    assert me["organization"]["memberRole"] == "manager"
    assert Membership.objects.unscoped().filter(user=outsider.user).count() == 2


def test_a_signed_out_existing_account_must_sign_in_first(owner, owner_client, outsider, send):
    invitation = invite_ok(send, owner_client, outsider.user.email)

    response = post(Client(), ACCEPT, {"invitationId": invitation["id"], "password": NEW_PASSWORD})

    assert_error(response, 401, "SIGN_IN_REQUIRED")
    assert not Membership.objects.for_org(owner.organization).filter(user=outsider.user).exists()
    assert outsider.user.__class__.objects.get(pk=outsider.user.pk).check_password(DEFAULT_PASSWORD)


def test_someone_else_signed_in_cannot_accept(owner, owner_client, outsider, send):
    invitation = invite_ok(send, owner_client, "invitee@example.com")

    response = post(signed_in(outsider.user), ACCEPT, {"invitationId": invitation["id"]})

    assert_error(response, 403, "INVITATION_EMAIL_MISMATCH")
    assert not Membership.objects.for_org(owner.organization).filter(user=outsider.user).exists()
    assert statuses(owner_client) == {invitation["id"]: "pending"}


def test_accepting_twice_is_409(owner_client, send):
    invitation = invite_ok(send, owner_client, "chiara@example.com")
    client = Client()
    assert post(client, ACCEPT, {"invitationId": invitation["id"], "password": NEW_PASSWORD}).status_code == 200

    again = post(client, ACCEPT, {"invitationId": invitation["id"]})
    reject = post(client, REJECT, {"invitationId": invitation["id"]})

    assert_error(again, 409, "INVITATION_ALREADY_ANSWERED")
    assert_error(reject, 409, "INVITATION_ALREADY_ANSWERED")


def test_accepting_an_unknown_invitation_is_404(db):
    response = post(Client(), ACCEPT, {"invitationId": str(uuid.uuid4()), "password": NEW_PASSWORD})

    assert_error(response, 404, "INVITATION_NOT_FOUND")
    assert not User.objects.exists()


# --- rejecting and withdrawing ------------------------------------------------------------------------------------


def test_rejecting_without_a_session(owner, owner_client, send):
    invitation = invite_ok(send, owner_client, "piero@example.com")

    response = post(Client(), REJECT, {"invitationId": invitation["id"]})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "rejected"
    assert response.json()["respondedAt"] is not None
    assert_error(
        post(Client(), ACCEPT, {"invitationId": invitation["id"], "password": NEW_PASSWORD}),
        409,
        "INVITATION_ALREADY_ANSWERED",
    )
    assert not User.objects.filter(email="piero@example.com").exists()


def test_someone_else_signed_in_cannot_reject(owner_client, outsider, send):
    invitation = invite_ok(send, owner_client, "piero@example.com")

    assert_error(
        post(signed_in(outsider.user), REJECT, {"invitationId": invitation["id"]}), 403, "INVITATION_EMAIL_MISMATCH"
    )
    assert statuses(owner_client) == {invitation["id"]: "pending"}


def test_withdrawing_an_invitation(owner_client, send):
    invitation = invite_ok(send, owner_client, "piero@example.com")

    response = post(owner_client, CANCEL, {"invitationId": invitation["id"]})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "canceled"
    assert_error(Client().get(PREVIEW, {"id": invitation["id"]}), 404, "INVITATION_NOT_FOUND")
    assert_error(post(owner_client, CANCEL, {"invitationId": invitation["id"]}), 409, "INVITATION_ALREADY_ANSWERED")


def test_another_practices_invitation_cannot_be_withdrawn(owner_client, outsider, send):
    theirs = invite_ok(send, outsider.session_client(), "theirs@example.com")

    response = post(owner_client, CANCEL, {"invitationId": theirs["id"]})

    assert_error(response, 404, "NOT_FOUND")
    assert statuses(outsider.session_client()) == {theirs["id"]: "pending"}


def test_withdrawing_needs_member_update(member_factory, owner, owner_client, send):
    invitation = invite_ok(send, owner_client, "piero@example.com")
    member = member_factory(role="telesales", organization=owner.organization)

    assert_error(post(member.session_client(), CANCEL, {"invitationId": invitation["id"]}), 403, "PERMISSION_DENIED")
    assert statuses(owner_client) == {invitation["id"]: "pending"}


def test_the_email_task_skips_an_invitation_withdrawn_before_it_ran(
    owner, owner_client, mailoutbox, django_capture_on_commit_callbacks
):
    from apps.accounts.tasks import send_invitation_email

    with django_capture_on_commit_callbacks(execute=False):
        invitation = post(owner_client, INVITE, {"email": "late@example.com", "role": "analyst"}).json()
    assert post(owner_client, CANCEL, {"invitationId": invitation["id"]}).status_code == 200

    assert send_invitation_email(invitation["id"]) is False
    assert mailoutbox == []


def test_a_signed_in_invitee_must_send_the_csrf_token(owner, owner_client, outsider, send):
    invitation = invite_ok(send, owner_client, outsider.user.email, "manager")
    client = signed_in(outsider.user)
    del client.defaults["HTTP_X_CSRFTOKEN"]

    response = post(client, ACCEPT, {"invitationId": invitation["id"]})

    assert_error(response, 403, "CSRF_FAILED")
    assert not Membership.objects.for_org(owner.organization).filter(user=outsider.user).exists()
    assert statuses(owner_client) == {invitation["id"]: "pending"}
