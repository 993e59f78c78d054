"""Sign-up, sign-in and sign-out through HTTP: bodies, cookies, refusals, the per-address window and its outage."""

from datetime import UTC, datetime

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from apps.accounts.models import Membership, User
from tests.factories import MembershipFactory, OrganizationFactory, UserFactory
from tests.helpers import assert_error

SIGN_UP = "/auth/sign-up/email"
SIGN_IN = "/auth/sign-in/email"
SIGN_OUT = "/auth/sign-out"
ME = "/auth/me"
STRONG_PASSWORD = "plum-orbit-canvas-42"


def post_json(client: Client, path: str, data, **extra):
    return client.post(path, data, content_type="application/json", **extra)


# --- sign-up ------------------------------------------------------------------------------------------------


def test_sign_up_creates_the_account_and_signs_in(db):
    client = Client(enforce_csrf_checks=True)

    response = post_json(client, SIGN_UP, {"email": "Ada@Example.com", "password": STRONG_PASSWORD, "name": "Ada"})

    assert response.status_code == 201, response.content
    body = response.json()
    user = User.objects.get()
    assert body == {
        "twoFactorRedirect": False,
        "user": {"id": str(user.id), "email": "ada@example.com", "name": "Ada"},
        "activeOrganizationId": None,
    }
    assert user.email == "ada@example.com"
    assert user.check_password(STRONG_PASSWORD)
    assert response.cookies["sessionid"].value
    assert response.cookies["csrftoken"].value
    assert response.cookies["sessionid"]["httponly"]

    me = client.get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["user"]["id"] == str(user.id)
    assert me.json()["organization"] is None


def test_sign_up_without_name_defaults_to_empty(db):
    response = post_json(Client(), SIGN_UP, {"email": "bo@example.com", "password": STRONG_PASSWORD})

    assert response.status_code == 201, response.content
    assert response.json()["user"]["name"] == ""


@pytest.mark.parametrize("email", ["taken@example.com", "TAKEN@example.com", "Taken@Example.COM"])
def test_sign_up_with_a_taken_email_in_any_case_is_409(db, email):
    UserFactory(email="taken@example.com")

    response = post_json(Client(), SIGN_UP, {"email": email, "password": STRONG_PASSWORD})

    assert_error(response, 409, "EMAIL_TAKEN")
    assert User.objects.count() == 1
    assert "sessionid" not in response.cookies


@pytest.mark.parametrize("password", ["short1", "password123", "12345678901234", "qwertyuiop"])
def test_sign_up_with_a_weak_password_is_400_naming_password(db, password):
    response = post_json(Client(), SIGN_UP, {"email": "ada@example.com", "password": password})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["password"]
    problems = body["details"]["fields"]["password"]
    assert problems and all(isinstance(p, str) for p in problems)
    assert not User.objects.exists()


@pytest.mark.parametrize("email", ["not-an-email", "ada@", "@example.com", "", "a" * 250 + "@example.com"])
def test_sign_up_with_a_bad_email_is_400_naming_email(db, email):
    response = post_json(Client(), SIGN_UP, {"email": email, "password": STRONG_PASSWORD})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["email"]
    assert not User.objects.exists()


@pytest.mark.parametrize(
    ("payload", "missing"),
    [
        ({}, {"email", "password"}),
        ({"email": "ada@example.com"}, {"password"}),
        ({"password": STRONG_PASSWORD}, {"email"}),
    ],
)
def test_sign_up_with_missing_fields_is_400_naming_each(db, payload, missing):
    response = post_json(Client(), SIGN_UP, payload)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert set(body["details"]["fields"]) == missing
    assert not User.objects.exists()


@pytest.mark.parametrize("raw", ['{"email": "ada@example.com", "password": ', "not json", "[1, 2", "NaN"])
def test_sign_up_with_malformed_json_is_400(db, raw):
    response = Client().post(SIGN_UP, raw, content_type="application/json")

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["body"]
    assert not User.objects.exists()


def test_sign_up_with_a_json_array_body_is_400(db):
    response = post_json(Client(), SIGN_UP, ["ada@example.com", STRONG_PASSWORD])

    assert_error(response, 400, "VALIDATION_ERROR")
    assert not User.objects.exists()


def test_sign_up_with_a_form_body_is_415(db):
    response = Client().post(SIGN_UP, {"email": "ada@example.com", "password": STRONG_PASSWORD})

    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert not User.objects.exists()


# --- sign-in ------------------------------------------------------------------------------------------------


def test_sign_in_starts_a_session_in_the_first_practice(owner, password):
    later = OrganizationFactory()
    MembershipFactory(organization=later, user=owner.user, role="analyst")
    client = Client(enforce_csrf_checks=True)

    response = post_json(client, SIGN_IN, {"email": owner.user.email, "password": password})

    assert response.status_code == 200, response.content
    assert response.json() == {
        "twoFactorRedirect": False,
        "user": {"id": str(owner.user.id), "email": owner.user.email, "name": owner.user.name},
        "activeOrganizationId": str(owner.organization.id),
    }
    assert response.cookies["sessionid"].value
    assert response.cookies["csrftoken"].value

    me = client.get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["session"] == {"activeOrganizationId": str(owner.organization.id)}
    assert me.json()["organization"]["id"] == str(owner.organization.id)
    assert me.json()["organization"]["memberRole"] == "owner"


def test_sign_in_without_membership_has_no_active_practice(db, password):
    user = UserFactory()

    response = post_json(Client(), SIGN_IN, {"email": user.email, "password": password})

    assert response.status_code == 200, response.content
    assert response.json()["activeOrganizationId"] is None


def test_sign_in_email_is_case_insensitive(owner, password):
    client = Client()

    response = post_json(client, SIGN_IN, {"email": f"  {owner.user.email.upper()}", "password": password})

    assert response.status_code == 200, response.content
    assert response.json()["user"]["id"] == str(owner.user.id)
    assert client.get(ME).status_code == 200


def test_wrong_password_and_unknown_email_answer_the_same_401(owner, password):
    sessions_before = Session.objects.count()

    wrong = post_json(Client(), SIGN_IN, {"email": owner.user.email, "password": password + "x"})
    unknown = post_json(Client(), SIGN_IN, {"email": "nobody@example.com", "password": password})

    wrong_body = assert_error(wrong, 401, "INVALID_CREDENTIALS")
    unknown_body = assert_error(unknown, 401, "INVALID_CREDENTIALS")
    assert wrong_body == unknown_body
    assert "sessionid" not in wrong.cookies
    assert "sessionid" not in unknown.cookies
    assert Session.objects.count() == sessions_before


def test_sign_in_of_a_deactivated_user_is_401(owner, password):
    User.objects.filter(id=owner.user.id).update(is_active=False)

    response = post_json(Client(), SIGN_IN, {"email": owner.user.email, "password": password})

    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert not Session.objects.exists()


def test_sign_in_password_is_not_trimmed(owner, password):
    response = post_json(Client(), SIGN_IN, {"email": owner.user.email, "password": f" {password} "})

    assert_error(response, 401, "INVALID_CREDENTIALS")


def test_sign_in_with_missing_fields_is_400(db):
    response = post_json(Client(), SIGN_IN, {"email": "ada@example.com"})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert set(body["details"]["fields"]) == {"password"}
    assert not Session.objects.exists()


def test_sign_in_with_a_form_body_is_415(owner, password):
    response = Client().post(SIGN_IN, {"email": owner.user.email, "password": password})

    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert not Session.objects.exists()


def test_sign_in_ignores_a_stray_invalid_bearer(owner, password):
    """Public route: a credential header must not turn it into 401."""
    client = Client(headers={"Authorization": "Bearer svc_key_garbage"})

    response = post_json(client, SIGN_IN, {"email": owner.user.email, "password": password})

    assert response.status_code == 200, response.content


def test_deactivating_a_user_ends_their_session(owner):
    client = owner.session_client()

    User.objects.filter(id=owner.user.id).update(is_active=False)

    assert_error(client.get(ME), 401, "UNAUTHENTICATED")


def test_changing_the_password_ends_existing_sessions(owner):
    client = owner.session_client()
    user = User.objects.get(id=owner.user.id)

    user.set_password("another-long-password-7")
    user.save()

    assert_error(client.get(ME), 401, "UNAUTHENTICATED")


# --- sign-out -----------------------------------------------------------------------------------------------


def test_sign_out_ends_the_session(owner):
    client = owner.session_client()
    assert client.get(ME).status_code == 200

    response = post_json(client, SIGN_OUT, {})

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert_error(client.get(ME), 401, "UNAUTHENTICATED")


def test_sign_out_without_a_body_works(owner):
    client = owner.session_client()

    response = client.generic("POST", SIGN_OUT)

    assert response.status_code == 200, response.content
    assert_error(client.get(ME), 401, "UNAUTHENTICATED")


def test_sign_out_without_csrf_token_is_403_and_the_session_stays(owner):
    client = owner.session_client()
    del client.defaults["HTTP_X_CSRFTOKEN"]
    sessions_before = Session.objects.count()

    response = post_json(client, SIGN_OUT, {})

    body = assert_error(response, 403, "CSRF_FAILED")
    assert "CSRF" in body["message"]
    assert Session.objects.count() == sessions_before
    me = client.get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["user"]["id"] == str(owner.user.id)


def test_sign_out_with_a_wrong_csrf_token_is_403(owner):
    client = owner.session_client()
    client.defaults["HTTP_X_CSRFTOKEN"] = "x" * 32

    response = post_json(client, SIGN_OUT, {})

    assert_error(response, 403, "CSRF_FAILED")
    assert client.get(ME).status_code == 200


def test_sign_out_with_an_api_key_is_403_browser_session_required(owner):
    response = post_json(owner.api_client(), SIGN_OUT, {})

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert owner.api_client().get(ME).status_code == 200


def test_sign_out_without_credentials_is_401_with_a_challenge(db):
    response = post_json(Client(), SIGN_OUT, {})

    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")


# --- the per-address sign-in window -------------------------------------------------------------------------


def test_sign_in_is_limited_per_client_address(owner, password, settings, time_machine):
    settings.SVC_SIGN_IN_RATE = "3/m"
    time_machine.move_to(datetime.now(tz=UTC), tick=False)  # all attempts in one fixed window
    credentials = {"email": owner.user.email, "password": password}

    statuses = [post_json(Client(), SIGN_IN, credentials).status_code for _ in range(3)]
    sessions_before = Session.objects.count()
    limited = post_json(Client(), SIGN_IN, credentials)

    assert statuses == [200, 200, 200]
    body = assert_error(limited, 429, "RATE_LIMITED")
    retry_after = limited["Retry-After"]
    assert retry_after.isdigit()
    assert 1 <= int(retry_after) <= 60
    assert body["details"] == {"retryAfter": int(retry_after)}
    assert "sessionid" not in limited.cookies
    assert Session.objects.count() == sessions_before

    other_address = post_json(Client(), SIGN_IN, credentials, REMOTE_ADDR="10.1.2.3")
    assert other_address.status_code == 200, other_address.content


def test_failed_sign_ins_count_towards_the_window(owner, password, settings, time_machine):
    settings.SVC_SIGN_IN_RATE = "3/m"
    time_machine.move_to(datetime.now(tz=UTC), tick=False)

    for _ in range(3):
        assert post_json(Client(), SIGN_IN, {"email": owner.user.email, "password": "wrong-guess"}).status_code == 401
    response = post_json(Client(), SIGN_IN, {"email": owner.user.email, "password": password})

    assert_error(response, 429, "RATE_LIMITED")
    assert not Session.objects.exists()


def test_sign_in_window_reopens_in_the_next_minute(owner, password, settings, time_machine):
    settings.SVC_SIGN_IN_RATE = "3/m"
    time_machine.move_to(datetime.now(tz=UTC), tick=False)
    credentials = {"email": owner.user.email, "password": password}
    for _ in range(3):
        post_json(Client(), SIGN_IN, credentials)
    assert post_json(Client(), SIGN_IN, credentials).status_code == 429

    time_machine.shift(61)

    assert post_json(Client(), SIGN_IN, credentials).status_code == 200


def test_sign_in_fails_closed_when_redis_is_down(owner, password, settings):
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"},
    }

    response = post_json(Client(), SIGN_IN, {"email": owner.user.email, "password": password})

    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert response["Retry-After"].isdigit()
    assert int(response["Retry-After"]) >= 1
    assert "sessionid" not in response.cookies
    assert not Session.objects.exists()


def test_sign_up_fails_closed_when_redis_is_down(db, settings):
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"},
    }

    response = post_json(Client(), SIGN_UP, {"email": "ada@example.com", "password": STRONG_PASSWORD})

    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert response["Retry-After"].isdigit()
    assert not User.objects.exists()
    assert not Membership.objects.unscoped().exists()
