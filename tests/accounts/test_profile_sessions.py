"""Browser sessions as the person sees them: recorded at sign-in, listed (current flag), ended one by one or all but
the current one (an ended cookie answers 401 at once), touched at most once a minute, purged when expired."""

import hashlib
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from apps.accounts.models import UserSession
from apps.accounts.services import sessions as user_sessions
from apps.accounts.tasks import purge_expired_sessions
from apps.core import crypto
from tests.helpers import assert_error

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    return time_machine


def session_key(client: Client) -> str:
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def record_of(client: Client) -> UserSession:
    return UserSession.objects.get(key_digest=hashlib.sha256(session_key(client).encode()).hexdigest())


def still_signed_in(client: Client) -> bool:
    response = client.get("/user/me")
    assert response.status_code in (200, 401), response.content
    return response.status_code == 200


# --- who may call -------------------------------------------------------------------------------------------

ROUTES = [
    ("get", "/user/sessions"),
    ("post", "/user/sessions/revoke-others"),
    ("delete", "/user/sessions/6f1c2b1e-3d4a-4c5b-8e9f-0a1b2c3d4e5f"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_api_keys_are_refused(owner, method, path):
    owner.session_client()
    before = UserSession.objects.count()

    response = getattr(owner.api_client(), method)(path, content_type="application/json")

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert UserSession.objects.count() == before


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_without_credentials_401(db, method, path):
    assert_error(getattr(Client(), method)(path, content_type="application/json"), 401, "UNAUTHENTICATED")


# --- recording ----------------------------------------------------------------------------------------------


def test_sign_in_records_the_session(owner, clock):
    client = Client(headers={"User-Agent": "Mozilla/5.0 " + "x" * 400})
    client.post(
        "/auth/sign-in/email",
        {"email": owner.user.email, "password": "correct-horse-battery-9"},
        content_type="application/json",
    )

    record = record_of(client)
    assert record.user_id == owner.user.id
    assert crypto.decrypt(record.key_encrypted) == session_key(client)
    assert session_key(client) not in record.key_encrypted
    assert record.ip_address == "127.0.0.1"
    assert record.user_agent == ("Mozilla/5.0 " + "x" * 400)[:300]
    assert record.last_seen_at == timezone.now()
    assert record.expires_at == timezone.now() + timedelta(seconds=settings.SESSION_COOKIE_AGE)
    assert Session.objects.get(session_key=session_key(client)).expire_date == record.expires_at


def test_sign_out_removes_the_record(owner):
    client = owner.session_client()
    assert UserSession.objects.filter(user=owner.user).count() == 1

    assert client.post("/auth/sign-out", content_type="application/json").status_code == 200

    assert UserSession.objects.filter(user=owner.user).count() == 0


def test_last_seen_moves_at_most_once_a_minute(owner, clock, django_assert_max_num_queries):
    client = owner.session_client()
    signed_in_at = timezone.now()

    clock.shift(timedelta(seconds=59))
    assert still_signed_in(client)
    assert record_of(client).last_seen_at == signed_in_at

    clock.shift(timedelta(seconds=2))
    assert still_signed_in(client)
    assert record_of(client).last_seen_at == signed_in_at + timedelta(seconds=61)

    clock.shift(timedelta(seconds=30))
    assert still_signed_in(client)
    assert record_of(client).last_seen_at == signed_in_at + timedelta(seconds=61)


def test_activity_does_not_extend_the_session(owner, clock):
    client = owner.session_client()
    expires_at = record_of(client).expires_at

    clock.shift(timedelta(days=3))
    assert still_signed_in(client)

    assert Session.objects.get(session_key=session_key(client)).expire_date == expires_at
    assert record_of(client).expires_at == expires_at


def test_a_session_without_a_record_gets_one(owner, clock):
    client = owner.session_client()
    UserSession.objects.all().delete()

    clock.shift(timedelta(minutes=2))
    assert still_signed_in(client)

    assert record_of(client).last_seen_at == timezone.now()


# --- the list -----------------------------------------------------------------------------------------------


def test_list_shows_live_sessions_newest_first_with_the_current_flag(owner, outsider, clock):
    first = owner.session_client()
    clock.shift(timedelta(minutes=5))
    second = Client(enforce_csrf_checks=True, headers={"User-Agent": "Phone"})
    second.post(
        "/auth/sign-in/email",
        {"email": owner.user.email, "password": "correct-horse-battery-9"},
        content_type="application/json",
    )
    outsider.session_client()

    response = first.get("/user/sessions")

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items", "nextCursor"}
    assert body["nextCursor"] is None
    newest, oldest = record_of(second), record_of(first)
    assert body["items"] == [
        {
            "id": str(newest.id),
            "createdAt": newest.created_at.strftime(TIMESTAMP_FORMAT),
            "lastSeenAt": newest.last_seen_at.strftime(TIMESTAMP_FORMAT),
            "expiresAt": newest.expires_at.strftime(TIMESTAMP_FORMAT),
            "ipAddress": "127.0.0.1",
            "userAgent": "Phone",
            "current": False,
        },
        {
            "id": str(oldest.id),
            "createdAt": oldest.created_at.strftime(TIMESTAMP_FORMAT),
            "lastSeenAt": oldest.last_seen_at.strftime(TIMESTAMP_FORMAT),
            "expiresAt": oldest.expires_at.strftime(TIMESTAMP_FORMAT),
            "ipAddress": "127.0.0.1",
            "userAgent": "",
            "current": True,
        },
    ]
    assert [item["current"] for item in second.get("/user/sessions").json()["items"]] == [True, False]


def test_expired_sessions_leave_the_list_and_are_purged(owner, clock):
    client = owner.session_client()
    stale = UserSession.objects.create(
        user=owner.user,
        key_digest="0" * 64,
        key_encrypted=crypto.encrypt("gone"),
        last_seen_at=timezone.now() - timedelta(days=20),
        expires_at=timezone.now() - timedelta(days=1),
    )

    items = client.get("/user/sessions").json()["items"]

    assert [item["id"] for item in items] == [str(record_of(client).id)]
    purge_expired_sessions()
    assert not UserSession.objects.filter(id=stale.id).exists()
    assert UserSession.objects.filter(user=owner.user).count() == 1


def test_list_pages(owner):
    clients = [owner.session_client() for _ in range(3)]

    page = clients[0].get("/user/sessions", {"limit": 2}).json()
    rest = clients[0].get("/user/sessions", {"limit": 2, "cursor": page["nextCursor"]}).json()

    assert len(page["items"]) == 2 and len(rest["items"]) == 1 and rest["nextCursor"] is None
    assert_error(clients[0].get("/user/sessions", {"limit": 0}), 400, "VALIDATION_ERROR")


# --- ending sessions ----------------------------------------------------------------------------------------


def test_ending_another_session_stops_its_cookie_at_once(owner):
    here, there = owner.session_client(), owner.session_client()
    target = record_of(there)

    response = here.delete(f"/user/sessions/{target.id}")

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert_error(there.get("/user/me"), 401, "UNAUTHENTICATED")
    assert not Session.objects.filter(session_key=session_key(there)).exists()
    assert still_signed_in(here)
    assert [item["current"] for item in here.get("/user/sessions").json()["items"]] == [True]


def test_ending_the_current_session_signs_out(owner):
    client, other = owner.session_client(), owner.session_client()

    response = client.delete(f"/user/sessions/{record_of(client).id}")

    assert response.status_code == 200, response.content
    assert_error(client.get("/user/me"), 401, "UNAUTHENTICATED")
    assert still_signed_in(other)
    assert UserSession.objects.filter(user=owner.user).count() == 1


def test_someone_elses_session_is_404(owner, outsider):
    mine, theirs = owner.session_client(), outsider.session_client()
    target = record_of(theirs)

    assert_error(mine.delete(f"/user/sessions/{target.id}"), 404, "NOT_FOUND")
    assert_error(mine.delete(f"/user/sessions/{uuid.uuid4()}"), 404, "NOT_FOUND")
    assert_error(mine.delete("/user/sessions/not-a-uuid"), 400, "VALIDATION_ERROR")
    assert still_signed_in(theirs)
    assert UserSession.objects.filter(id=target.id).exists()


def test_ending_a_session_needs_the_csrf_token(owner):
    client, other = owner.session_client(), owner.session_client()
    del client.defaults["HTTP_X_CSRFTOKEN"]

    assert_error(client.delete(f"/user/sessions/{record_of(other).id}"), 403, "CSRF_FAILED")
    assert_error(client.post("/user/sessions/revoke-others", content_type="application/json"), 403, "CSRF_FAILED")
    assert still_signed_in(other)


def test_revoke_others_keeps_only_the_current_one(owner, outsider):
    current = owner.session_client()
    others = [owner.session_client() for _ in range(2)]
    foreign = outsider.session_client()

    response = current.post("/user/sessions/revoke-others", content_type="application/json")

    assert response.status_code == 200, response.content
    assert response.json() == {"revoked": 2}
    for client in others:
        assert_error(client.get("/user/me"), 401, "UNAUTHENTICATED")
    assert still_signed_in(current)
    assert still_signed_in(foreign)
    assert [item["current"] for item in current.get("/user/sessions").json()["items"]] == [True]
    assert current.post("/user/sessions/revoke-others", content_type="application/json").json() == {"revoked": 0}


def test_session_records_are_helpers_too():
    assert user_sessions.key_digest("abc") == hashlib.sha256(b"abc").hexdigest()
