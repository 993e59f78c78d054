"""A database outage while verifying a credential answers 503 AUTH_UNAVAILABLE with Retry-After, never 401; the
liveness probe keeps answering and readiness reports the database failing.

The outage is real: the connection is closed and its settings point at a port where nothing listens, so the next
query has to reconnect and fails. The test client does not close connections around requests, which is why the
connection is closed by hand first. Port and connection are restored before the test ends, so the transactional
teardown (which flushes the tables) finds a working database.
"""

from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection
from django.test import Client

from apps.accounts.models import ApiKey

pytestmark = pytest.mark.django_db(transaction=True)

ME = "/auth/me"


@contextmanager
def database_down(monkeypatch):
    connection.close()
    with monkeypatch.context() as patch:
        patch.setitem(connection.settings_dict, "PORT", "1")
        try:
            yield
        finally:
            connection.close()
    connection.close()


def assert_database_unreachable() -> None:
    with pytest.raises(OperationalError):
        connection.ensure_connection()


def assert_auth_unavailable(response) -> None:
    assert response.status_code == 503, response.content
    body = response.json()
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == "AUTH_UNAVAILABLE"
    assert body["details"] == {}
    assert response["Retry-After"].isdigit()
    assert int(response["Retry-After"]) >= 1
    assert "WWW-Authenticate" not in response


def test_api_key_gets_503_auth_unavailable_when_the_database_is_down(owner, monkeypatch):
    client = owner.api_client()

    with database_down(monkeypatch):
        assert_database_unreachable()
        response = client.get(ME)

    assert_auth_unavailable(response)
    # Back up: the same request with the same key works, and nothing was revoked meanwhile.
    assert client.get(ME).status_code == 200
    assert ApiKey.objects.get(user=owner.user).revoked_at is None


def test_session_gets_503_auth_unavailable_when_the_database_is_down(owner, monkeypatch):
    client = owner.session_client()
    assert client.get(ME).status_code == 200

    with database_down(monkeypatch):
        assert_database_unreachable()
        response = client.get(ME)

    assert_auth_unavailable(response)
    assert client.get(ME).status_code == 200


def test_session_write_gets_503_not_a_csrf_or_auth_refusal(owner, monkeypatch):
    client = owner.session_client()

    with database_down(monkeypatch):
        response = client.post("/auth/api-key/create", {"name": "during outage"}, content_type="application/json")

    assert_auth_unavailable(response)
    assert ApiKey.objects.filter(user=owner.user).count() == 1


@pytest.mark.parametrize("authorization", ["Bearer svc_key_unknown", "Bearer anything"])
def test_unknown_bearer_is_not_401_while_the_database_is_down(db, monkeypatch, authorization):
    """401 would tell the client its credential is stale; during an outage nobody can know that."""
    client = Client(headers={"Authorization": authorization})

    with database_down(monkeypatch):
        response = client.get(ME)

    assert_auth_unavailable(response)


def test_liveness_answers_while_the_database_is_down(db, monkeypatch):
    with database_down(monkeypatch):
        assert_database_unreachable()
        response = Client().get("/health/runtime")

    assert response.status_code == 204
    assert response.content == b""


def test_readiness_reports_the_database_failing(db, monkeypatch):
    with database_down(monkeypatch):
        response = Client().get("/health")

    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "failing"
    assert body["checks"]["redis"] == "ok"
    assert body["checks"]["migrations"] == "failing"


def test_readiness_is_ok_with_the_database_up(db):
    response = Client().get("/health")

    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok", "migrations": "ok"}}
