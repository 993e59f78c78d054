"""PATCH /user/me: the person's name; unknown fields and the e-mail address are refused; GET keeps its shape."""

import pytest

from apps.accounts.models import User
from tests.helpers import assert_error

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def patch(client, body):
    return client.patch("/user/me", body, content_type="application/json")


def test_patch_changes_the_name(owner):
    client = owner.session_client()

    response = patch(client, {"name": "  Dr. Ada Rossi "})

    assert response.status_code == 200, response.content
    user = User.objects.get(pk=owner.user.pk)
    assert user.name == "Dr. Ada Rossi"
    assert response.json() == {
        "id": str(user.id),
        "email": user.email,
        "name": "Dr. Ada Rossi",
        "createdAt": user.created_at.strftime(TIMESTAMP_FORMAT),
        "emailVerifiedAt": None,
        "phoneMobile": "",
    }
    assert client.get("/user/me").json()["name"] == "Dr. Ada Rossi"


def test_an_empty_object_changes_nothing(owner):
    response = patch(owner.session_client(), {})

    assert response.status_code == 200
    assert response.json()["name"] == owner.user.name


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        ({"email": "new@example.com"}, "email", "cannot be changed here"),
        ({"name": "Ada", "nickName": "A"}, "nickName", "is not a field you can send here"),
        ({"name": "x" * 201}, "name", "Ensure this field has no more than 200 characters."),
        ({"name": None}, "name", "This field may not be null."),
    ],
)
def test_refusals_change_nothing(owner, body, field, problem):
    client = owner.session_client()
    before = User.objects.filter(pk=owner.user.pk).values().get()

    response = patch(client, body)

    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"][field] == [problem]
    assert User.objects.filter(pk=owner.user.pk).values().get() == before


def test_empty_and_non_object_bodies_are_refused(owner):
    client = owner.session_client()

    assert_error(client.patch("/user/me", b"", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(patch(client, ["name"]), 400, "VALIDATION_ERROR")
    assert_error(client.patch("/user/me", b"name=x", content_type="text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE")


def test_a_person_without_a_practice_may_patch(owner):
    owner.membership.delete()

    response = patch(owner.session_client(), {"name": "Solo"})

    assert response.status_code == 200, response.content
    assert User.objects.get(pk=owner.user.pk).name == "Solo"


def test_api_key_is_refused(owner):
    response = owner.api_client().patch("/user/me", {"name": "Bot"}, content_type="application/json")

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert User.objects.get(pk=owner.user.pk).name == owner.user.name


def test_patch_needs_the_csrf_token(owner):
    client = owner.session_client()
    del client.defaults["HTTP_X_CSRFTOKEN"]

    assert_error(patch(client, {"name": "Eve"}), 403, "CSRF_FAILED")
    assert User.objects.get(pk=owner.user.pk).name == owner.user.name
