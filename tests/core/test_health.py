"""Liveness and readiness probes: public, and never a word about any practice."""

import copy

import pytest
from django.test import Client


@pytest.fixture
def redis_down(settings):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = "redis://127.0.0.1:1/0"
    settings.CACHES = caches


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-credential"),
        pytest.param({"Authorization": "Bearer svc_key_bogus"}, id="bogus-api-key"),
        pytest.param({"Authorization": "Bearer svc_oat_bogus"}, id="bogus-oauth-token"),
        pytest.param({"Authorization": "Basic Zm9vOmJhcg=="}, id="basic"),
        pytest.param({"Authorization": "Bearer a b c"}, id="malformed"),
        pytest.param({"Cookie": "sessionid=bogus"}, id="bogus-session-cookie"),
    ],
)
def test_runtime_health_is_204_without_body_whatever_the_credential(headers):
    response = Client(headers=headers).get("/health/runtime")

    assert response.status_code == 204
    assert response.content == b""


def test_runtime_health_needs_neither_database_nor_redis(redis_down, django_db_blocker):
    with django_db_blocker.block():
        response = Client().get("/health/runtime")

    assert response.status_code == 204
    assert response.content == b""


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-credential"),
        pytest.param({"Authorization": "Bearer svc_key_bogus"}, id="bogus-api-key"),
    ],
)
def test_readiness_reports_ok_and_nothing_else(db, headers):
    response = Client(headers=headers).get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok", "migrations": "ok"}}


def test_readiness_reveals_no_practice_data(owner, api):
    response = api.get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok", "migrations": "ok"}}
    text = response.content.decode()
    for private in (str(owner.organization.id), owner.organization.name, owner.user.email, str(owner.user.id)):
        assert private not in text
    assert "X-Service-Access-Generation" not in response


def test_readiness_is_503_when_redis_is_down(db, redis_down):
    response = Client().get("/health")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "ok", "redis": "failing", "migrations": "ok"},
    }


def test_readiness_reports_pending_migrations(db, monkeypatch):
    monkeypatch.setattr("apps.core.health._migrations", lambda: "pending")

    response = Client().get("/health")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "ok", "redis": "ok", "migrations": "pending"},
    }
