"""Two-factor through HTTP, end to end: enrol with a real TOTP generator, sign in with the second step."""

import time
from base64 import b32decode
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client
from django_otp.oath import totp

from tests.factories import DEFAULT_PASSWORD
from tests.helpers import assert_error


def code_for(secret_b32: str, at: float | None = None) -> str:
    key = b32decode(secret_b32 + "=" * (-len(secret_b32) % 8))
    return f"{totp(key, t0=0, step=30, digits=6) if at is None else totp_at(key, at):06d}"


def totp_at(key: bytes, at: float) -> int:
    from django_otp.oath import TOTP

    generator = TOTP(key)
    generator.time = at
    return generator.token()


def post(client: Client, path: str, data=None):
    return client.post(path, data or {}, content_type="application/json")


@pytest.fixture
def enrolled(owner):
    client = owner.session_client()
    setup = post(client, "/user/two-factor/setup", {"password": DEFAULT_PASSWORD})
    assert setup.status_code == 200, setup.content
    body = setup.json()
    secret = body["secret"]
    assert parse_qs(urlparse(body["otpauthUri"]).query)["secret"] == [secret]
    verified = post(client, "/user/two-factor/verify", {"code": code_for(secret)})
    assert verified.status_code == 200, verified.content
    codes = verified.json()["backupCodes"]
    assert len(codes) == 10
    return owner, secret, codes


def test_sign_in_with_two_factor_answers_redirect_then_totp_completes(enrolled, time_machine):
    owner, secret, _ = enrolled
    time_machine.move_to(time.time() + 60)  # the enrolment code's time step is spent
    client = Client()
    first = post(client, "/auth/sign-in/email", {"email": owner.user.email, "password": DEFAULT_PASSWORD})
    assert first.status_code == 200
    assert first.json()["twoFactorRedirect"] is True
    assert client.get("/auth/me").status_code == 401

    done = post(client, "/auth/two-factor/verify-totp", {"code": code_for(secret)})
    assert done.status_code == 200, done.content
    assert done.json()["twoFactorRedirect"] is False
    assert client.get("/auth/me").status_code == 200


def test_backup_code_completes_once(enrolled):
    owner, _, codes = enrolled
    client = Client()
    post(client, "/auth/sign-in/email", {"email": owner.user.email, "password": DEFAULT_PASSWORD})
    assert post(client, "/auth/two-factor/verify-backup-code", {"code": codes[0]}).status_code == 200
    again = Client()
    post(again, "/auth/sign-in/email", {"email": owner.user.email, "password": DEFAULT_PASSWORD})
    assert_error(post(again, "/auth/two-factor/verify-backup-code", {"code": codes[0]}), 400, "INVALID_TWO_FACTOR_CODE")


def test_reauthenticate_returns_a_token(owner):
    client = owner.session_client()
    response = post(client, "/user/reauthenticate", {"password": DEFAULT_PASSWORD})
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"token", "expiresAt"}
    assert_error(post(client, "/user/reauthenticate", {"password": "wrong"}), 400, "INVALID_PASSWORD")


def test_invitation_round_trip(owner, mailoutbox, django_capture_on_commit_callbacks):
    client = owner.session_client()
    with django_capture_on_commit_callbacks(execute=True):
        invited = post(client, "/auth/organization/invite-member", {"email": "new@example.com", "role": "front_desk"})
    assert invited.status_code == 201, invited.content
    invitation_id = invited.json()["id"]
    assert len(mailoutbox) == 1 and invitation_id in mailoutbox[0].body
    preview = Client().get(f"/auth/invitation-preview?id={invitation_id}")
    assert preview.status_code == 200, preview.content
    assert preview.json()["accountExists"] is False
    newcomer = Client()
    accepted = post(
        newcomer,
        "/auth/organization/accept-invitation",
        {"invitationId": invitation_id, "password": "plum-orbit-canvas-42", "name": "New"},
    )
    assert accepted.status_code == 200, accepted.content
    me = newcomer.get("/auth/me").json()
    assert me["organization"]["memberRole"] == "front_desk"


def test_workspace_put_bumps_generation(member_factory):
    member = member_factory(role="owner", clinical_workspace_available=True)
    client = member.session_client()
    before = client.get("/auth/me")["X-Service-Access-Generation"]
    response = client.put(
        f"/settings/team/members/{member.user.id}/workspace",
        {"workspace": "pms", "hideOtherWorkspace": True},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["workspaces"] == ["pms"]
    assert response["X-Service-Access-Generation"] != before
