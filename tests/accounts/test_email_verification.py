"""E-mail verification through HTTP, delivered over SMTP to a real local server (aiosmtpd): sign-up sends the link,
opening it verifies the address, a change of address takes effect only through a link sent to the new one, and the
request route never says whether an account exists."""

import re
import time

import pytest

from apps.accounts.models import User
from tests.helpers import assert_error

PASSWORD = "a-long-passphrase-for-tests-9"
JSON = "application/json"


def link_token(message) -> str:
    text = next(part for part in message.walk() if part.get_content_type() == "text/plain").get_payload(decode=True)
    return re.search(r"/verify-email\?token=([\w.:-]+)", text.decode()).group(1)


def open_link(client, token: str):
    return client.get("/auth/verify-email", {"token": token})


def sign_up(client, address: str, capture):
    with capture(execute=True):
        response = client.post(
            "/auth/sign-up/email", {"email": address, "password": PASSWORD}, content_type="application/json"
        )
    assert response.status_code == 201, response.content
    return response


def test_sign_up_sends_the_link_and_opening_it_verifies_the_address(
    client,
    db,
    smtp,
    django_capture_on_commit_callbacks,
):
    sign_up(client, "Maria@Studio.example", django_capture_on_commit_callbacks)
    [message] = smtp.messages
    assert message["To"] == "maria@studio.example" and "Confirm your e-mail" in message["Subject"]
    assert {part.get_content_type() for part in message.walk()} >= {"text/plain", "text/html"}
    assert client.get("/user/me").json()["emailVerifiedAt"] is None

    opened = open_link(client, link_token(message))
    assert opened.status_code == 200 and opened.json() == {"status": True, "email": "maria@studio.example"}
    verified_at = client.get("/user/me").json()["emailVerifiedAt"]
    assert verified_at
    assert open_link(client, link_token(message)).status_code == 200  # opening again changes nothing
    assert client.get("/user/me").json()["emailVerifiedAt"] == verified_at


def test_asking_again_sends_only_for_an_unverified_account_and_always_answers_the_same(
    client,
    owner,
    smtp,
    django_capture_on_commit_callbacks,
):
    for address in (owner.user.email, "nobody@example.com"):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post("/auth/send-verification-email", {"email": address}, content_type="application/json")
        assert response.status_code == 200 and response.json() == {"status": True}
    [message] = smtp.messages
    assert message["To"] == owner.user.email
    open_link(client, link_token(message))
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/auth/send-verification-email", {"email": owner.user.email}, content_type="application/json")
    assert len(smtp.messages) == 1  # verified: nothing more to send


def test_a_change_of_address_takes_effect_only_through_the_link_sent_to_the_new_one(
    owner,
    client,
    smtp,
    django_capture_on_commit_callbacks,
):
    browser = owner.session_client()
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            "/user/change-email", {"newEmail": "New@Studio.example"}, content_type="application/json"
        )
    assert response.status_code == 200 and response.json() == {"status": True}
    assert browser.get("/user/me").json()["email"] == owner.user.email  # not yet
    [message] = smtp.messages
    assert message["To"] == "new@studio.example"
    token = link_token(message)

    assert open_link(client, token).json() == {"status": True, "email": "new@studio.example"}
    me = browser.get("/user/me").json()
    assert me["email"] == "new@studio.example" and me["emailVerifiedAt"]
    assert_error(open_link(client, token), 400, "INVALID_VERIFICATION_TOKEN")  # spent: the address changed


def test_a_new_address_taken_meanwhile_is_409_and_nothing_changes(
    owner,
    outsider,
    client,
    smtp,
    django_capture_on_commit_callbacks,
):
    browser = owner.session_client()
    with django_capture_on_commit_callbacks(execute=True):
        browser.post("/user/change-email", {"newEmail": "shared@studio.example"}, content_type="application/json")
    User.objects.filter(pk=outsider.user.pk).update(email="shared@studio.example")
    assert_error(open_link(client, link_token(smtp.messages[0])), 409, "EMAIL_TAKEN")
    assert User.objects.get(pk=owner.user.pk).email == owner.user.email


def test_wrong_tampered_and_expired_links_are_refused(
    client,
    db,
    smtp,
    django_capture_on_commit_callbacks,
    time_machine,
):
    sign_up(client, "luca@studio.example", django_capture_on_commit_callbacks)
    token = link_token(smtp.messages[0])
    for bad in (token[:-2] + "xx", "not-a-token", "e30:1abc:xyz"):
        assert_error(open_link(client, bad), 400, "INVALID_VERIFICATION_TOKEN")
    assert_error(client.get("/auth/verify-email"), 400, "VALIDATION_ERROR")
    time_machine.move_to(time.time() + 24 * 3600 + 60)
    assert_error(open_link(client, token), 400, "INVALID_VERIFICATION_TOKEN")


def test_machine_credentials_cannot_change_the_address(owner):
    response = owner.api_client().post(
        "/user/change-email", {"newEmail": "x@y.example"}, content_type="application/json"
    )
    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")


@pytest.mark.parametrize("body", [{}, {"newEmail": "not an address"}, {"newEmail": "a@b.example", "admin": True}])
def test_bad_change_bodies_are_400(owner, body):
    response = owner.session_client().post("/user/change-email", body, content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR")
