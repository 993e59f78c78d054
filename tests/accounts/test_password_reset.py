"""Password reset through HTTP, with the e-mail delivered over SMTP to a real local server (aiosmtpd): the request
never says whether an account exists, the link works once and for an hour, the reset signs the person out
everywhere, and both routes have their buckets."""

import re
import time

from django.core import mail

from tests.helpers import assert_error

NEW_PASSWORD = "a-new-long-passphrase-42"


def request_reset(client, address: str, capture):
    with capture(execute=True):
        return client.post("/auth/request-password-reset", {"email": address}, content_type="application/json")


def link_token(message) -> str:
    text = next(part for part in message.walk() if part.get_content_type() == "text/plain").get_payload(decode=True)
    return re.search(r"/reset-password\?token=([\w.-]+)", text.decode()).group(1)


def reset(client, token: str, password: str = NEW_PASSWORD):
    return client.post(
        "/auth/reset-password", {"token": token, "newPassword": password}, content_type="application/json"
    )


def test_the_link_arrives_by_smtp_in_text_and_html_and_resets_once(
    client, owner, smtp, django_capture_on_commit_callbacks
):
    response = request_reset(client, owner.user.email.upper(), django_capture_on_commit_callbacks)
    assert response.status_code == 200 and response.json() == {"status": True}
    [message] = smtp.messages
    assert message["To"] == owner.user.email and "Reset your Practice CRM password" in message["Subject"]
    assert {part.get_content_type() for part in message.walk()} >= {"text/plain", "text/html"}
    token = link_token(message)

    assert reset(client, token).json() == {"status": True}
    signed_in = client.post(
        "/auth/sign-in/email", {"email": owner.user.email, "password": NEW_PASSWORD}, content_type="application/json"
    )
    assert signed_in.status_code == 200
    assert_error(reset(client, token, "another-long-passphrase-7"), 400, "INVALID_RESET_TOKEN")  # used once


def test_an_unknown_address_gets_the_same_answer_and_no_mail(client, db, smtp, django_capture_on_commit_callbacks):
    response = request_reset(client, "nobody@example.com", django_capture_on_commit_callbacks)
    assert response.status_code == 200 and response.json() == {"status": True}
    assert smtp.messages == []


def test_the_reset_ends_every_session_of_the_person(owner, client, smtp, django_capture_on_commit_callbacks):
    browser = owner.session_client()
    assert browser.get("/auth/me").status_code == 200
    request_reset(client, owner.user.email, django_capture_on_commit_callbacks)
    assert reset(client, link_token(smtp.messages[0])).status_code == 200
    assert browser.get("/auth/me").status_code == 401


def test_a_link_older_than_an_hour_or_tampered_is_refused(
    owner, client, smtp, django_capture_on_commit_callbacks, time_machine
):
    request_reset(client, owner.user.email, django_capture_on_commit_callbacks)
    token = link_token(smtp.messages[0])
    encoded, signature = token.split(".", 1)
    for bad in (f"{encoded}.{signature[:-1]}x", f"{encoded}", "x.y", "", "bm90LWEtdXVpZA.abc"):
        assert_error(reset(client, bad), 400, "INVALID_RESET_TOKEN" if bad else "VALIDATION_ERROR")
    time_machine.move_to(time.time() + 3601)
    assert_error(reset(client, token), 400, "INVALID_RESET_TOKEN")


def test_a_weak_new_password_is_refused_naming_it_and_the_token_still_works(
    owner, client, smtp, django_capture_on_commit_callbacks
):
    request_reset(client, owner.user.email, django_capture_on_commit_callbacks)
    token = link_token(smtp.messages[0])
    body = assert_error(reset(client, token, "123"), 400, "VALIDATION_ERROR")
    assert "newPassword" in body["details"]["fields"]
    assert reset(client, token).status_code == 200


def test_one_address_gets_at_most_three_links_an_hour(owner, client, smtp, django_capture_on_commit_callbacks):
    for _ in range(5):
        assert request_reset(client, owner.user.email, django_capture_on_commit_callbacks).status_code == 200
    assert len(smtp.messages) == 3


def test_the_routes_are_limited_per_client_address(client, db, settings, django_capture_on_commit_callbacks):
    settings.SVC_PASSWORD_RESET_RATE = "2/m"
    for _ in range(2):
        assert request_reset(client, "someone@example.com", django_capture_on_commit_callbacks).status_code == 200
    response = request_reset(client, "someone@example.com", django_capture_on_commit_callbacks)
    assert_error(response, 429, "RATE_LIMITED")
    assert response["Retry-After"]


def test_bad_bodies_are_400_naming_the_field(client, db):
    missing = client.post("/auth/request-password-reset", {}, content_type="application/json")
    assert "email" in assert_error(missing, 400, "VALIDATION_ERROR")["details"]["fields"]
    extra = client.post(
        "/auth/reset-password",
        {"token": "a.b", "newPassword": NEW_PASSWORD, "admin": True},
        content_type="application/json",
    )
    assert "admin" in assert_error(extra, 400, "VALIDATION_ERROR")["details"]["fields"]


def test_without_smtp_the_console_backend_of_make_run_is_not_needed_in_tests(
    owner, client, django_capture_on_commit_callbacks
):
    """The test settings' locmem backend records the same message (what `make run` prints on the console)."""
    request_reset(client, owner.user.email, django_capture_on_commit_callbacks)
    [message] = mail.outbox
    assert "/reset-password?token=" in message.body and message.alternatives[0][1] == "text/html"
