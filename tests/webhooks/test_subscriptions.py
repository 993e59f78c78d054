"""POST /settings/webhook-endpoints/subscriptions (spec "Delivery rules" 7, state table rows for subscriptions).

Connections are real OAuth connections with real access tokens (tests/oauth/tokens.py); everything after
authentication is the real route.
"""

import threading
import uuid

import pytest
from django.utils import timezone
from werkzeug import Response

from apps.oauth.models import AccessToken, Connection
from apps.webhooks.models import WebhookEndpoint
from tests.helpers import assert_error
from tests.oauth.tokens import application, bearer, mint

ROUTE = "/settings/webhook-endpoints/subscriptions"


class ConnectionSwitch:
    """Disconnects a connection as seen from another thread (the receiver's): the test's own transaction is not
    visible there, so the re-read the route makes mid-subscribe is answered from this flag."""

    def __init__(self, connection_id):
        self.connection_id = connection_id
        self.active = True


@pytest.fixture
def connect(monkeypatch, owner):
    switches: dict = {}
    real_check = AccessToken.connection_is_active

    def connection_is_active(token):
        switch = switches.get(token.connection_id)
        return real_check(token) and (switch is None or switch.active)

    monkeypatch.setattr(AccessToken, "connection_is_active", connection_is_active)

    def make(member=owner):
        raw, token = mint(member, "read write", app=application(f"Agent {len(switches)}"))
        switches[token.connection_id] = ConnectionSwitch(token.connection_id)
        return bearer(raw), switches[token.connection_id]

    return make


@pytest.fixture
def echoing(receiver):
    """A receiver that passes the verification probe (2xx echoing X-Hook-Secret)."""
    seen = []

    def handler(request):
        seen.append(dict(request.headers))
        secret = request.headers.get("X-Hook-Secret", "")
        return Response("ok", 200, headers={"X-Hook-Secret": secret})

    receiver.expect_request("/hook").respond_with_handler(handler)
    return seen


def body(receiver, key="crm-sync", **overrides):
    return {
        "name": "Sync",
        "url": receiver.url_for("/hook"),
        "events": ["patient.created"],
        "subscriptionKey": key,
        **overrides,
    }


def post(client, data):
    return client.post(ROUTE, data, content_type="application/json")


def test_api_keys_and_sessions_need_an_oauth_connection(api, owner, receiver):
    assert_error(post(api, body(receiver)), 403, "OAUTH_CONNECTION_REQUIRED")
    assert_error(post(owner.session_client(), body(receiver)), 403, "OAUTH_CONNECTION_REQUIRED")
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


def test_subscribe_verifies_then_enables(connect, owner, receiver, echoing):
    client, _ = connect()
    response = post(client, body(receiver))
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["status"] == "enabled" and created["verifiedAt"] and created["signingSecret"].startswith("whsec_")
    assert created["subscriptionKey"] == "crm-sync"
    assert len(echoing) == 1 and echoing[0]["X-Hook-Secret"]
    # The challenge is never stored.
    endpoint = WebhookEndpoint.objects.for_org(owner.organization).get()
    assert echoing[0]["X-Hook-Secret"] not in str(endpoint.__dict__)


def test_repeating_returns_the_same_endpoint_and_secret_and_applies_name_and_events(connect, receiver, echoing):
    client, _ = connect()
    first = post(client, body(receiver)).json()
    again = post(client, body(receiver, name="Renamed", events=["patient.updated", "task.created"]))
    assert again.status_code == 200
    assert again.json()["id"] == first["id"] and again.json()["signingSecret"] == first["signingSecret"]
    assert again.json()["name"] == "Renamed" and again.json()["events"] == ["patient.updated", "task.created"]


def test_same_key_answers_200_even_at_the_cap(connect, owner, receiver, echoing):
    client, _ = connect()
    first = post(client, body(receiver)).json()
    for n in range(19):
        post(client, body(receiver, key=f"k{n}"))
    assert WebhookEndpoint.objects.for_org(owner.organization).filter(archived_at__isnull=True).count() == 20
    assert_error(post(client, body(receiver, key="one-more")), 409, "WEBHOOK_ENDPOINT_LIMIT_REACHED")
    again = post(client, body(receiver))
    assert again.status_code == 200 and again.json()["id"] == first["id"]


def test_failed_probe_archives_and_returns_the_slot(connect, owner, receiver):
    receiver.expect_request("/hook").respond_with_data("nope", status=200)  # 2xx but no echo
    client, _ = connect()
    response = post(client, body(receiver))
    error = assert_error(response, 409, "WEBHOOK_VERIFICATION_FAILED")
    assert error["details"]["responseStatus"] == 200 and error["details"]["error"]
    endpoint = WebhookEndpoint.objects.for_org(owner.organization).get()
    assert endpoint.archived_at is not None and not endpoint.enabled


def test_probe_refused_with_a_server_error(connect, owner, receiver):
    receiver.expect_request("/hook").respond_with_data("down", status=503)
    client, _ = connect()
    error = assert_error(post(client, body(receiver)), 409, "WEBHOOK_VERIFICATION_FAILED")
    assert error["details"]["responseStatus"] == 503


def test_a_different_url_or_another_connection_conflicts(connect, owner, receiver, echoing):
    client, _ = connect()
    post(client, body(receiver))
    assert_error(post(client, body(receiver, url=receiver.url_for("/other"))), 409, "WEBHOOK_SUBSCRIPTION_CONFLICT")
    other_client, _ = connect()
    assert_error(post(other_client, body(receiver)), 409, "WEBHOOK_SUBSCRIPTION_CONFLICT")
    assert WebhookEndpoint.objects.for_org(owner.organization).filter(archived_at__isnull=True).count() == 1


def test_a_paused_endpoint_stays_paused(connect, owner, receiver, echoing):
    client, _ = connect()
    created = post(client, body(receiver)).json()
    WebhookEndpoint.objects.for_org(owner.organization).filter(id=created["id"]).update(paused=True, enabled=False)
    assert_error(post(client, body(receiver, name="New name")), 409, "WEBHOOK_ENDPOINT_PAUSED")
    endpoint = WebhookEndpoint.objects.for_org(owner.organization).get(id=created["id"])
    assert endpoint.paused and endpoint.name == "Sync"


def test_connection_revoked_during_subscribe(connect, owner, receiver):
    client, record = connect()

    def handler(request):
        record.active = False  # disconnected while the probe is in flight
        return Response("ok", 200, headers={"X-Hook-Secret": request.headers.get("X-Hook-Secret", "")})

    receiver.expect_request("/hook").respond_with_handler(handler)
    assert_error(post(client, body(receiver)), 403, "OAUTH_CONNECTION_REVOKED")
    assert not WebhookEndpoint.objects.for_org(owner.organization).filter(archived_at__isnull=True).exists()


def test_bad_bodies(connect, receiver, echoing):
    client, _ = connect()
    for data in (body(receiver, subscriptionKey=""), body(receiver, events=[]), {**body(receiver), "extra": 1}):
        assert_error(post(client, data), 400, "VALIDATION_ERROR")


def test_disconnecting_archives_the_connections_endpoints(connect, owner, receiver, echoing):
    from apps.webhooks.services import endpoints_archive_for_connection

    client, _ = connect()
    created = post(client, body(receiver)).json()
    connection_id = WebhookEndpoint.objects.for_org(owner.organization).get(id=created["id"]).connection_id
    assert endpoints_archive_for_connection(organization=owner.organization, connection_id=connection_id) == 1
    assert WebhookEndpoint.objects.for_org(owner.organization).get(id=created["id"]).archived_at is not None


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_calls_converge(connect, owner, receiver):
    """Two identical subscribes at once: one creates (201); the other answers 200 with the same endpoint once the
    first committed, or 409 IN_PROGRESS while it had not — never a second endpoint."""
    gate = threading.Event()

    def slow_echo(request):
        gate.wait(5)
        return Response("ok", 200, headers={"X-Hook-Secret": request.headers.get("X-Hook-Secret", "")})

    receiver.expect_request("/hook").respond_with_handler(slow_echo)
    client, _ = connect()
    results = []

    def call():
        from django.db import connection

        try:
            results.append(post(client, body(receiver)))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    # The second call finds the first one's lock while its probe waits.
    import time

    deadline = time.monotonic() + 5
    while len(results) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    gate.set()
    for thread in threads:
        thread.join(10)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [201, 409], [r.content for r in results]
    assert [r.json()["code"] for r in results if r.status_code == 409] == ["WEBHOOK_SUBSCRIPTION_IN_PROGRESS"]
    assert WebhookEndpoint.objects.for_org(owner.organization).filter(archived_at__isnull=True).count() == 1
    after = post(client, body(receiver))
    assert after.status_code == 200


def test_the_hourly_sweep_archives_endpoints_whose_connection_lost_consent(
    connect, owner, receiver, echoing, monkeypatch
):
    from apps.webhooks import services
    from apps.webhooks.tasks import archive_lost_subscriptions

    first_client, _ = connect()
    second_client, _ = connect()
    kept = post(first_client, body(receiver, key="kept")).json()
    lost = post(second_client, body(receiver, key="lost")).json()
    manual = services.endpoint_create(
        organization=owner.organization,
        user=owner.user,
        name="manual",
        url=receiver.url_for("/hook"),
        events=["patient.created"],
    ).endpoint
    assert archive_lost_subscriptions() == 0  # every connection still has its consent

    # A disconnect whose archiving was lost (the sweep is the backstop): the connection is revoked, endpoints live.
    lost_connection = WebhookEndpoint.objects.for_org(owner.organization).get(id=lost["id"]).connection_id
    Connection.objects.unscoped().filter(pk=lost_connection).update(revoked_at=timezone.now())
    assert archive_lost_subscriptions() == 1
    endpoints = {e.id: e for e in WebhookEndpoint.objects.for_org(owner.organization)}
    assert endpoints[uuid.UUID(lost["id"])].archived_at is not None
    assert endpoints[uuid.UUID(kept["id"])].archived_at is None
    assert endpoints[manual.id].archived_at is None  # endpoints made in settings belong to no connection
