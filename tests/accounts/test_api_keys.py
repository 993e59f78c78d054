"""API keys: minted and revoked by a browser session, stored as a SHA-256 digest, listed newest first with a cursor,
authenticating as their user, and drawing from a per-key Redis bucket that fails open."""

import hashlib
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts.models import ApiKey, User
from tests.helpers import assert_error

CREATE = "/auth/api-key/create"
DELETE = "/auth/api-key/delete"
LIST = "/user/api-keys"
ME = "/auth/me"
KEY_FIELDS = {"id", "name", "start", "createdAt", "lastUsedAt", "expiresAt"}


def post_json(client: Client, path: str, data, **extra):
    return client.post(path, data, content_type="application/json", **extra)


def bearer(key: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {key}"})


def key_rows() -> list[tuple]:
    """What a refusal must leave alone (last_used_at is not in it: an authenticated key was used)."""
    return list(ApiKey.objects.order_by("id").values_list("id", "user_id", "name", "key_hash", "revoked_at"))


# --- create -------------------------------------------------------------------------------------------------


def test_create_returns_the_secret_once_and_stores_only_its_digest(owner):
    session = owner.session_client()

    response = post_json(session, CREATE, {"name": "  Zapier  "})

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == KEY_FIELDS | {"key"}
    secret = body["key"]
    assert secret.startswith("svc_key_")
    assert len(secret) > len("svc_key_") + 30
    assert body["name"] == "Zapier"
    assert secret.startswith(body["start"])
    assert body["start"].startswith("svc_key_")
    assert len(body["start"]) < len(secret)
    assert body["lastUsedAt"] is None
    assert body["expiresAt"] is None
    assert body["createdAt"].endswith("Z")

    row = ApiKey.objects.get(id=body["id"])
    assert row.user_id == owner.user.id
    assert row.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    secret_body = secret.removeprefix("svc_key_")
    for value in ApiKey.objects.filter(id=row.id).values().get().values():
        assert secret not in str(value)
        assert secret_body not in str(value)

    me = bearer(secret).get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["user"]["id"] == str(owner.user.id)
    assert me.json()["organization"]["id"] == str(owner.organization.id)


def test_two_keys_never_share_a_secret(owner):
    session = owner.session_client()

    first = post_json(session, CREATE, {"name": "a"}).json()
    second = post_json(session, CREATE, {"name": "a"}).json()

    assert first["key"] != second["key"]
    assert first["id"] != second["id"]


@pytest.mark.parametrize(
    "payload",
    [{}, {"name": ""}, {"name": "   "}, {"name": "x" * 101}, {"name": None}],
)
def test_create_with_a_bad_name_is_400_naming_name(owner, payload):
    session = owner.session_client()
    before = key_rows()

    response = post_json(session, CREATE, payload)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["name"]
    assert key_rows() == before


def test_create_without_csrf_token_is_403(owner):
    session = owner.session_client()
    del session.defaults["HTTP_X_CSRFTOKEN"]
    before = key_rows()

    response = post_json(session, CREATE, {"name": "no csrf"})

    assert_error(response, 403, "CSRF_FAILED")
    assert key_rows() == before


# --- list ---------------------------------------------------------------------------------------------------


def test_list_is_newest_first_and_shows_no_secret(owner, outsider):
    session = owner.session_client()
    created = [post_json(session, CREATE, {"name": f"key {i}"}).json() for i in range(3)]

    response = session.get(LIST)

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items", "nextCursor"}
    assert body["nextCursor"] is None
    items = body["items"]
    assert [item["name"] for item in items] == ["key 2", "key 1", "key 0", "tests"]
    assert [item["id"] for item in items[:3]] == [c["id"] for c in reversed(created)]
    for item in items:
        assert set(item) == KEY_FIELDS
    outsider_key = ApiKey.objects.get(user=outsider.user)
    assert str(outsider_key.id) not in {item["id"] for item in items}
    for c in created:
        assert c["key"] not in response.content.decode()


def test_list_pages_with_a_cursor_until_null(owner, django_assert_max_num_queries):
    session = owner.session_client()
    for i in range(5):
        post_json(session, CREATE, {"name": f"key {i}"})
    expected = [
        str(i)
        for i in ApiKey.objects.filter(user=owner.user).order_by("-created_at", "-id").values_list("id", flat=True)
    ]
    assert len(expected) == 6

    seen, pages, cursor = [], 0, None
    while True:
        query = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        with django_assert_max_num_queries(3):
            response = session.get(LIST, query)
        assert response.status_code == 200, response.content
        body = response.json()
        assert len(body["items"]) <= 2
        seen += [item["id"] for item in body["items"]]
        pages += 1
        cursor = body["nextCursor"]
        if cursor is None:
            break
        assert pages < 10

    assert seen == expected
    assert len(set(seen)) == len(seen)
    assert pages == 3


def test_list_query_count_does_not_grow_with_keys(owner, django_assert_max_num_queries):
    session = owner.session_client()
    for i in range(30):
        post_json(session, CREATE, {"name": f"key {i}"})

    with django_assert_max_num_queries(3):
        response = session.get(LIST, {"limit": 100})

    assert response.status_code == 200
    assert len(response.json()["items"]) == 31


def test_list_default_page_is_25(owner):
    session = owner.session_client()
    for i in range(26):
        post_json(session, CREATE, {"name": f"key {i}"})

    body = session.get(LIST).json()

    assert len(body["items"]) == 25
    assert body["nextCursor"]


@pytest.mark.parametrize("limit", ["0", "101", "x", "-1", "2.5", ""])
def test_list_with_an_invalid_limit_is_400_naming_limit(owner, limit):
    response = owner.session_client().get(LIST, {"limit": limit})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["limit"]


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "cj14",  # "r=x"
        "cD0yMDI0",  # "p=2024": decodes, but the position is not a timestamp
        "bz0xJnA9eA==",  # "o=1&p=x"
    ],
)
def test_list_with_a_garbage_cursor_is_400_naming_cursor(owner, cursor):
    response = owner.session_client().get(LIST, {"cursor": cursor})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["cursor"]


# --- delete -------------------------------------------------------------------------------------------------


def test_delete_revokes_at_once(owner):
    session = owner.session_client()
    created = post_json(session, CREATE, {"name": "to revoke"}).json()
    assert bearer(created["key"]).get(ME).status_code == 200

    response = post_json(session, DELETE, {"keyId": created["id"]})

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert_error(bearer(created["key"]).get(ME), 401, "UNAUTHENTICATED")
    listed = {item["id"] for item in session.get(LIST).json()["items"]}
    assert created["id"] not in listed
    assert ApiKey.objects.get(id=created["id"]).revoked_at is not None
    # The member's other key keeps working.
    assert owner.api_client().get(ME).status_code == 200


def test_delete_twice_is_404(owner):
    session = owner.session_client()
    created = post_json(session, CREATE, {"name": "once"}).json()
    assert post_json(session, DELETE, {"keyId": created["id"]}).status_code == 200
    before = key_rows()

    response = post_json(session, DELETE, {"keyId": created["id"]})

    assert_error(response, 404, "NOT_FOUND")
    assert key_rows() == before


def test_deleting_another_users_key_is_404_and_it_keeps_working(owner, outsider):
    outsider_key = ApiKey.objects.get(user=outsider.user)
    before = key_rows()

    response = post_json(owner.session_client(), DELETE, {"keyId": str(outsider_key.id)})

    assert_error(response, 404, "NOT_FOUND")
    assert key_rows() == before
    assert outsider.api_client().get(ME).status_code == 200


def test_deleting_a_colleagues_key_is_404(owner, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    colleague_key = ApiKey.objects.get(user=colleague.user)
    before = key_rows()

    response = post_json(owner.session_client(), DELETE, {"keyId": str(colleague_key.id)})

    assert_error(response, 404, "NOT_FOUND")
    assert key_rows() == before
    assert colleague.api_client().get(ME).status_code == 200


def test_deleting_an_unknown_key_is_404(owner):
    before = key_rows()

    response = post_json(owner.session_client(), DELETE, {"keyId": str(uuid.uuid4())})

    assert_error(response, 404, "NOT_FOUND")
    assert key_rows() == before


@pytest.mark.parametrize("payload", [{"keyId": "not-a-uuid"}, {"keyId": ""}, {"keyId": None}, {}])
def test_deleting_with_a_bad_key_id_is_400_naming_key_id(owner, payload):
    before = key_rows()

    response = post_json(owner.session_client(), DELETE, payload)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["keyId"]
    assert key_rows() == before


# --- machine credentials on the key routes ------------------------------------------------------------------


def test_creating_with_an_api_key_is_403(owner):
    before = key_rows()

    response = post_json(owner.api_client(), CREATE, {"name": "minted by a key"})

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert key_rows() == before


def test_listing_with_an_api_key_is_403(owner):
    assert_error(owner.api_client().get(LIST), 403, "BROWSER_SESSION_REQUIRED")


def test_deleting_with_an_api_key_is_403(owner):
    own_key = ApiKey.objects.get(user=owner.user)
    before = key_rows()

    response = post_json(owner.api_client(), DELETE, {"keyId": str(own_key.id)})

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert key_rows() == before
    assert owner.api_client().get(ME).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"), [("post", CREATE), ("get", LIST), ("post", DELETE)], ids=["create", "list", "delete"]
)
def test_key_routes_without_credentials_are_401(db, method, path):
    before = key_rows()

    response = getattr(Client(), method)(path, **({"content_type": "application/json"} if method == "post" else {}))

    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert key_rows() == before


# --- bearer authentication ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer svc_key_notarealkeyatall",
        "Bearer random",
        "Bearer a b",
        "Bearer ",
        "bearer svc_key_x y",
        "Bearer svc_oat_not-an-oauth-token",
    ],
)
def test_bad_bearer_is_401(owner, authorization):
    response = Client(headers={"Authorization": authorization}).get(ME)

    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_bearer_scheme_is_case_insensitive(owner):
    response = Client(headers={"Authorization": f"bearer {owner.api_key}"}).get(ME)

    assert response.status_code == 200, response.content


def test_a_bad_bearer_wins_over_a_valid_session(owner):
    """An explicit but wrong credential is refused even when a session cookie is also sent."""
    session = owner.session_client()

    response = session.get(ME, headers={"Authorization": "Bearer svc_key_wrong"})

    assert_error(response, 401, "UNAUTHENTICATED")


def test_key_of_a_deactivated_user_is_401(owner):
    User.objects.filter(id=owner.user.id).update(is_active=False)

    assert_error(owner.api_client().get(ME), 401, "UNAUTHENTICATED")


def test_expired_key_is_401(owner):
    ApiKey.objects.filter(user=owner.user).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert_error(owner.api_client().get(ME), 401, "UNAUTHENTICATED")


def test_key_survives_losing_every_membership(owner):
    owner.membership.delete()

    response = owner.api_client().get(ME)

    assert response.status_code == 200, response.content
    assert response.json()["organization"] is None


def test_last_used_is_recorded_at_most_once_a_minute(owner, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    key = ApiKey.objects.get(user=owner.user)
    assert key.last_used_at is None

    assert owner.api_client().get(ME).status_code == 200
    key.refresh_from_db()
    first_use = key.last_used_at
    assert first_use == timezone.now()

    time_machine.shift(30)
    assert owner.api_client().get(ME).status_code == 200
    key.refresh_from_db()
    assert key.last_used_at == first_use

    time_machine.shift(61)
    assert owner.api_client().get(ME).status_code == 200
    key.refresh_from_db()
    assert key.last_used_at == timezone.now()

    listed = {item["id"]: item for item in owner.session_client().get(LIST).json()["items"]}
    assert listed[str(key.id)]["lastUsedAt"] == key.last_used_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- the per-key bucket -------------------------------------------------------------------------------------


def test_api_key_bucket_refuses_with_retry_after(owner, outsider, settings):
    settings.SVC_API_KEY_BUCKET = (3, 0.5)
    client = owner.api_client()
    # Warm the request path up first (another key, its own bucket): the bucket refills by Redis time, so the four
    # requests below must run within a second for the exact Retry-After.
    assert outsider.api_client().get(ME).status_code == 200

    statuses = [client.get(ME).status_code for _ in range(3)]
    limited = client.get(ME)

    assert statuses == [200, 200, 200]
    body = assert_error(limited, 429, "RATE_LIMITED")
    assert limited["Retry-After"] == "2"  # ceil(1 token / 0.5 per second)
    assert body["details"] == {"retryAfter": 2}

    # Another user's key draws from its own bucket.
    assert outsider.api_client().get(ME).status_code == 200


def test_api_key_bucket_is_per_key_not_per_user(owner, settings):
    settings.SVC_API_KEY_BUCKET = (2, 0.5)
    session = owner.session_client()
    second_key = post_json(session, CREATE, {"name": "second"}).json()["key"]
    client = owner.api_client()
    for _ in range(2):
        assert client.get(ME).status_code == 200
    assert client.get(ME).status_code == 429

    assert bearer(second_key).get(ME).status_code == 200
    # Sessions do not draw from a key bucket.
    assert session.get(ME).status_code == 200


def test_api_key_bucket_fails_open_when_redis_is_down(owner, settings):
    settings.SVC_API_KEY_BUCKET = (1, 0.5)
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"},
    }

    statuses = [owner.api_client().get(ME).status_code for _ in range(3)]

    assert statuses == [200, 200, 200]
