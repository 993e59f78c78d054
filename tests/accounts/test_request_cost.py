"""The cost of an authenticated request (issue 16): an API key or OAuth access token resolves to its person,
membership, role and practice in one SQL statement (memberships still read on every request), and a bearer resolved
within the hour costs one Redis command (seen check, its hour and the credential bucket in one Lua script).

Counted through HTTP against the real PostgreSQL (CaptureQueriesContext) and the real Redis (MONITOR, keeping only
the commands of this process's own connections to this test's database, so a neighbour's traffic cannot count).
"""

import json
import uuid
from contextlib import contextmanager
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_redis import get_redis_connection

from apps.accounts.authentication import api_key_digest
from apps.accounts.models import ApiKey, Membership
from apps.oauth.authentication import token_checksum
from tests.factories import MembershipFactory, OrganizationFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

ME = "/auth/me"


def statements():
    return CaptureQueriesContext(connection)


def _pool_addresses(pool) -> set[tuple[str, int]]:
    connections = [*pool._available_connections, *pool._in_use_connections]
    return {conn._sock.getsockname()[:2] for conn in connections if getattr(conn, "_sock", None) is not None}


@contextmanager
def redis_commands():
    """The Redis commands this process's cache pool sends while the block runs, as the server saw them (MONITOR on a
    connection of its own; filtered to this test's database and the pool's own client addresses)."""
    location = settings.CACHES["default"]["LOCATION"]
    watcher = redis.Redis.from_url(location, socket_timeout=5)
    database = watcher.connection_pool.connection_kwargs.get("db", 0)
    seen: list[list[str]] = []
    with watcher.monitor() as monitor:
        yield seen
        marker = f"end-of-block-{uuid.uuid4()}"
        redis.Redis.from_url(location).echo(marker)
        ours = _pool_addresses(get_redis_connection("default").connection_pool)
        while True:
            line = monitor.next_command()
            if marker in line["command"]:
                break
            if line.get("client_type") == "lua":
                continue  # what a script ran inside its one call (MONITOR shows those too)
            if line["db"] == database and (line["client_address"], int(line["client_port"])) in ours:
                seen.append(line["command"].split())


@pytest.fixture
def two_practices(member_factory):
    member = member_factory(role="owner")
    second = OrganizationFactory()
    MembershipFactory(organization=second, user=member.user, role="manager")
    return member, second


def _seen_value(digest: str):
    return get_redis_connection("default").get(f"svc:seen-bearer:{digest}")


# --- one SQL statement -------------------------------------------------------------------------------------------


def test_auth_me_with_an_api_key_is_one_statement(owner):
    client = owner.api_client()
    assert client.get(ME).status_code == 200  # first use records lastUsedAt (an UPDATE at most once a minute)

    with statements() as captured:
        response = client.get(ME)
    queries = captured.captured_queries

    assert response.status_code == 200, response.content
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert "LATERAL" in queries[0]["sql"]
    organization = response.json()["organization"]
    assert organization["id"] == str(owner.organization.id)
    assert organization["memberRole"] == "owner"


def test_auth_me_with_an_api_key_and_x_organization_id_is_one_statement(two_practices):
    member, second = two_practices
    client = member.api_client(organization_id=second.id)
    assert client.get(ME).status_code == 200

    with statements() as captured:
        response = client.get(ME)
    queries = captured.captured_queries

    assert response.status_code == 200, response.content
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert response.json()["organization"]["id"] == str(second.id)
    assert response.json()["organization"]["memberRole"] == "manager"


def test_an_ambiguous_api_key_is_told_apart_in_the_same_statement(two_practices):
    member, _ = two_practices
    client = member.api_client()
    assert client.get(ME).status_code == 200

    with statements() as captured:
        response = client.get(ME)
    queries = captured.captured_queries

    assert len(queries) == 1
    assert response.json()["organization"] is None  # two candidates, no header: /auth/me names no practice
    assert_error(client.get("/patients"), 403, "ORGANIZATION_AMBIGUOUS")


def test_a_header_naming_a_foreign_practice_or_no_uuid_keeps_its_answers(owner, outsider):
    foreign = owner.api_client(organization_id=outsider.organization.id)
    assert_error(foreign.get("/patients"), 403, "ORGANIZATION_FORBIDDEN")
    broken = bearer(owner.api_key, **{"X-Organization-ID": "not-a-uuid"})
    body = assert_error(broken.get("/patients"), 400, "VALIDATION_ERROR")
    assert "X-Organization-ID" in body["details"]["fields"]


def test_auth_me_with_an_oauth_token_is_one_statement(owner):
    raw, _ = mint(owner)
    client = bearer(raw)
    assert client.get(ME).status_code == 200  # first use records the connection's lastUsedAt

    with statements() as captured:
        response = client.get(ME)
    queries = captured.captured_queries

    assert response.status_code == 200, response.content
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert response.json()["organization"]["id"] == str(owner.organization.id)


def test_an_oauth_token_ignores_x_organization_id_in_one_statement(two_practices):
    member, second = two_practices
    raw, _ = mint(member)
    client = bearer(raw, **{"X-Organization-ID": str(second.id)})
    assert client.get(ME).status_code == 200

    with statements() as captured:
        response = client.get(ME)
    queries = captured.captured_queries

    assert len(queries) == 1, [q["sql"] for q in queries]
    assert response.json()["organization"]["id"] == str(member.organization.id)


def test_the_statement_still_reads_memberships_on_every_request(owner):
    client = owner.api_client()
    raw, _ = mint(owner)
    assert client.get(ME).json()["organization"]["memberRole"] == "owner"
    assert bearer(raw).get(ME).json()["organization"]["memberRole"] == "owner"

    Membership.objects.for_org(owner.organization).filter(user=owner.user).update(role="analyst")
    assert client.get(ME).json()["organization"]["memberRole"] == "analyst"
    assert bearer(raw).get(ME).json()["organization"]["memberRole"] == "analyst"

    Membership.objects.for_org(owner.organization).filter(user=owner.user).delete()
    assert client.get(ME).json()["organization"] is None
    assert_error(bearer(raw).get(ME), 403, "ORGANIZATION_FORBIDDEN")


# --- one Redis command -------------------------------------------------------------------------------------------


def test_a_known_api_key_costs_one_redis_command(owner):
    client = owner.api_client()
    key = ApiKey.objects.get(user=owner.user)
    assert client.get(ME).status_code == 200  # unseen: address-block window, then remembered with its bucket
    assert _seen_value(api_key_digest(owner.api_key)) == f"key:{key.id}".encode()

    with redis_commands() as commands:
        response = client.get(ME)

    assert response.status_code == 200
    assert [command[0] for command in commands] == ["EVALSHA"], commands


def test_a_known_oauth_token_costs_one_redis_command(owner):
    raw, token = mint(owner)
    client = bearer(raw)
    assert client.get(ME).status_code == 200
    assert _seen_value(token_checksum(raw)) == f"connection:{token.connection_id}".encode()

    with redis_commands() as commands:
        response = client.get(ME)

    assert response.status_code == 200
    assert [command[0] for command in commands] == ["EVALSHA"], commands


def test_the_one_command_also_draws_from_the_bucket(owner, settings):
    settings.SVC_API_KEY_BUCKET = (3, 0.001)
    client = owner.api_client()
    assert [client.get(ME).status_code for _ in range(3)] == [200, 200, 200]

    with redis_commands() as commands:
        refused = client.get(ME)

    assert_error(refused, 429, "RATE_LIMITED")
    assert int(refused["Retry-After"]) >= 1
    assert len(commands) == 1, commands


def test_the_counting_sees_an_unseen_bearer_costing_more(owner):
    """The MONITOR count can fail: the first request of a bearer takes more than one command."""
    with redis_commands() as commands:
        assert owner.api_client().get(ME).status_code == 200
    assert len(commands) > 1, commands


# --- a refused bearer is no longer "seen" --------------------------------------------------------------------------


@pytest.fixture
def small_window(settings):
    settings.SVC_UNSEEN_BEARER_RATE = "2/m"


def _exhaust_block(address: str) -> None:
    for n in range(2):
        bearer(f"svc_key_guess{n}").get(ME, REMOTE_ADDR=address)


def test_a_revoked_api_key_is_forgotten_and_screened_again(owner, small_window):
    client = owner.api_client()
    digest = api_key_digest(owner.api_key)
    assert client.get(ME, REMOTE_ADDR="203.0.113.1").status_code == 200
    assert _seen_value(digest) is not None
    _exhaust_block("203.0.113.9")
    assert client.get(ME, REMOTE_ADDR="203.0.113.9").status_code == 200  # seen: skips the exhausted window

    ApiKey.objects.filter(user=owner.user).update(revoked_at=timezone.now())
    assert_error(client.get(ME, REMOTE_ADDR="198.51.100.1"), 401, "UNAUTHENTICATED")

    assert _seen_value(digest) is None
    assert_error(client.get(ME, REMOTE_ADDR="203.0.113.9"), 429, "RATE_LIMITED")


def test_an_expired_oauth_token_is_forgotten_and_screened_again(owner, small_window):
    raw, token = mint(owner)
    client = bearer(raw)
    assert client.get(ME, REMOTE_ADDR="203.0.113.1").status_code == 200
    _exhaust_block("203.0.113.9")
    assert client.get(ME, REMOTE_ADDR="203.0.113.9").status_code == 200

    type(token).objects.filter(pk=token.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert_error(client.get(ME, REMOTE_ADDR="198.51.100.1"), 401, "UNAUTHENTICATED")

    assert _seen_value(token_checksum(raw)) is None
    assert_error(client.get(ME, REMOTE_ADDR="203.0.113.9"), 429, "RATE_LIMITED")


def test_auth_me_answers_exactly_what_its_documented_serializer_renders(two_practices):
    """/auth/me renders its selector's dict without a serializer pass; MeOutput (the schema) must render it the same."""
    from djangorestframework_camel_case.util import camelize, underscoreize

    from apps.accounts.api.serializers import MeOutput

    member, second = two_practices
    client = member.api_client()
    for headers in ({}, {"HTTP_X_ORGANIZATION_ID": str(second.id)}):
        response = client.get(ME, **headers)
        assert response.status_code == 200, response.content
        body = response.json()
        assert json.loads(json.dumps(camelize(MeOutput(underscoreize(body)).data))) == body
