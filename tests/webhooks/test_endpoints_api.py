"""Webhook endpoint management (settings): create, validation and destination safety, the 20-endpoint cap, the
state machine (test → verified → enable, pause, resume, url change), secrets, delivery inspection and replay,
tenancy and role permissions. Deliveries are driven synchronously with fan_out() and drain_endpoint() against a
real local receiver (pytest-httpserver)."""

import hashlib
import hmac
import json
import uuid
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.utils import timezone
from werkzeug import Response

from apps.core import crypto
from apps.events.models import Event
from apps.events.services import Actor, emit
from apps.webhooks import delivery as engine
from apps.webhooks import sender
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.helpers import assert_error

BASE = "/settings/webhook-endpoints"
PUBLIC_URL = "https://hooks.example.com/hook"

ENDPOINT_KEYS = {
    "id",
    "name",
    "url",
    "events",
    "status",
    "enabled",
    "paused",
    "pausedReason",
    "verifiedAt",
    "consecutiveFailures",
    "previousSecretExpiresAt",
    "subscriptionKey",
    "archivedAt",
    "createdAt",
    "updatedAt",
}
DELIVERY_KEYS = {
    "id",
    "endpointId",
    "logicalId",
    "eventType",
    "kind",
    "status",
    "attempts",
    "publications",
    "responseStatus",
    "responseSnippet",
    "lastError",
    "nextAttemptAt",
    "lastPublishedAt",
    "deadlineAt",
    "completedAt",
    "createdAt",
}


# --- helpers -----------------------------------------------------------------------------------------------------


def create(client, **overrides):
    body = {"name": "CRM sync", "url": PUBLIC_URL, "events": ["patient.created"]} | overrides
    return client.post(BASE, body, content_type="application/json")


def made(client, **overrides) -> dict:
    response = create(client, **overrides)
    assert response.status_code == 201, response.content
    return response.json()


def patch(client, endpoint_id, body):
    return client.patch(f"{BASE}/{endpoint_id}", body, content_type="application/json")


def post(client, path):
    return client.post(path, content_type="application/json")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def signatures_valid_for(secret: str, headers: dict, body: bytes) -> int:
    """An independent verifier: how many of the v1= values in X-Service-Signature this secret produces."""
    signed = f"{headers['X-Service-Timestamp']}.{headers['X-Service-Delivery-Id']}.".encode() + body
    expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return sum(hmac.compare_digest(expected, part) for part in headers["X-Service-Signature"].split(","))


def emit_event(organization, type="patient.created"):
    with transaction.atomic():
        return emit(
            organization=organization,
            type=type,
            subject_type="patient",
            subject_id=uuid.uuid4(),
            actor=Actor.system(),
        )


def endpoint_row(endpoint_id) -> WebhookEndpoint:
    return WebhookEndpoint.objects.unscoped().get(id=endpoint_id)


def deliveries_of(endpoint_id):
    return WebhookDelivery.objects.unscoped().filter(endpoint_id=endpoint_id)


@pytest.fixture
def hook(receiver):
    """A receiver at /hook answering `hook.status` (200 unless changed) and recording (headers, raw body)."""
    state = SimpleNamespace(status=200, received=[], url=receiver.url_for("/hook"))

    def handler(request):
        state.received.append((dict(request.headers), request.get_data()))
        return Response("ok" if state.status < 300 else "nope", status=state.status)

    receiver.expect_request("/hook", method="POST").respond_with_handler(handler)
    return state


def verified_endpoint(client, hook, **overrides) -> dict:
    """An endpoint at the receiver that passed a test delivery (still disabled)."""
    endpoint = made(client, url=hook.url, **overrides)
    assert post(client, f"{BASE}/{endpoint['id']}/test").status_code == 202
    engine.drain_endpoint(endpoint["id"])
    body = client.get(f"{BASE}/{endpoint['id']}").json()
    assert body["verifiedAt"] is not None
    return body | {"signingSecret": endpoint["signingSecret"]}


def enabled_endpoint(client, hook, **overrides) -> dict:
    endpoint = verified_endpoint(client, hook, **overrides)
    response = post(client, f"{BASE}/{endpoint['id']}/enable")
    assert response.status_code == 200, response.content
    return response.json() | {"signingSecret": endpoint["signingSecret"]}


# --- create --------------------------------------------------------------------------------------------------------


def test_create_returns_the_secret_once_and_starts_disabled_and_unverified(api, owner):
    response = create(
        api, name="  CRM sync  ", events=["patient.created", "task.created", "patient.created", "task.created"]
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == ENDPOINT_KEYS | {"signingSecret"}
    assert body["signingSecret"].startswith("whsec_") and len(body["signingSecret"]) > len("whsec_") + 30
    assert body["status"] == "disabled"
    assert body["enabled"] is False and body["paused"] is False
    assert body["verifiedAt"] is None and body["archivedAt"] is None and body["previousSecretExpiresAt"] is None
    assert body["consecutiveFailures"] == 0
    assert body["events"] == ["patient.created", "task.created"]
    assert body["name"] == "CRM sync"
    assert body["url"] == PUBLIC_URL

    row = WebhookEndpoint.objects.for_org(owner.organization).get(id=body["id"])
    assert row.events == ["patient.created", "task.created"]
    assert row.created_by_id == owner.user.id


def test_the_signing_secret_is_stored_encrypted(api, owner):
    body = made(api)

    row = WebhookEndpoint.objects.for_org(owner.organization).get(id=body["id"])
    assert row.secret_encrypted != body["signingSecret"]
    assert body["signingSecret"] not in row.secret_encrypted
    assert crypto.decrypt(row.secret_encrypted) == body["signingSecret"]


def test_reads_never_return_the_signing_secret(api, owner):
    created = made(api)
    secret = created["signingSecret"]
    token = endpoint_row(created["id"]).secret_encrypted

    responses = [
        api.get(BASE),
        api.get(f"{BASE}?includeArchived=true"),
        api.get(f"{BASE}/{created['id']}"),
        patch(api, created["id"], {"name": "Renamed"}),
        post(api, f"{BASE}/{created['id']}/pause"),
        api.delete(f"{BASE}/{created['id']}"),
    ]

    for response in responses:
        assert response.status_code == 200, response.content
        text = response.content.decode()
        assert "signingSecret" not in text and "secret_encrypted" not in text
        assert secret not in text and token not in text
    listed = responses[0].json()
    assert set(listed) == {"items", "limit"} and listed["limit"] == 20
    assert [set(item) for item in listed["items"]] == [ENDPOINT_KEYS]
    assert set(responses[2].json()) == ENDPOINT_KEYS


# --- validation ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": None},
        {"name": ["CRM"]},
    ],
    ids=["blank", "whitespace", "too-long", "null", "list"],
)
def test_create_refuses_a_bad_name(api, owner, changes):
    body = assert_error(create(api, **changes), 400, "VALIDATION_ERROR")

    assert set(body["details"]["fields"]) == {"name"}
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


def test_create_requires_name_url_and_events(api, owner):
    for missing in ("name", "url", "events"):
        body = {"name": "CRM sync", "url": PUBLIC_URL, "events": ["patient.created"]}
        del body[missing]
        error = assert_error(api.post(BASE, body, content_type="application/json"), 400, "VALIDATION_ERROR")
        assert set(error["details"]["fields"]) == {missing}, error
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


def test_a_name_of_200_characters_is_accepted(api):
    assert made(api, name="n" * 200)["name"] == "n" * 200


@pytest.mark.parametrize(
    "events",
    [
        [],
        ["patient.exploded"],
        ["patient.created", "not.an.event"],
        ["webhook_endpoint.test"],
        "patient.created",
        {"patient.created": True},
        None,
        [None],
        [1],
    ],
    ids=["empty", "unknown", "one-unknown", "test-is-not-in-catalogue", "string", "object", "null", "null-item", "int"],
)
def test_create_refuses_bad_events(api, owner, events):
    body = assert_error(create(api, events=events), 400, "VALIDATION_ERROR")

    assert set(body["details"]["fields"]) == {"events"}
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/hook",
        "ftp://hooks.example.com/hook",
        "hooks.example.com/hook",
        "https://hooks.example.com:8443/hook",
        "https://hooks.example.com:80/hook",
        "https://user:pw@hooks.example.com/hook",
        "https://user@hooks.example.com/hook",
        "https://hooks.example.com@10.0.0.1/hook",
        "https://10.0.0.1/",
        "https://127.0.0.1/",
        "https://169.254.169.254/latest/meta-data",
        "https://93.184.216.34/",
        "https://[::1]/",
        "https://[fd00::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://2130706433/",
        "https://0x7f.1/",
        "https://0177.0.0.1/",
        "https://127.1/",
        "https://localhost/",
        "https://internal.example.com/hook",
        "https://mixed.example.com/hook",
        "https://metadata.example.com/hook",
        "https://v6local.example.com/hook",
        "https://ula.example.com/hook",
        "https://mapped.example.com/hook",
        "https://cgnat.example.com/hook",
        "https://",
        "",
    ],
)
def test_create_refuses_an_unsafe_or_malformed_url(api, owner, url):
    body = assert_error(create(api, url=url), 400, "VALIDATION_ERROR")

    assert set(body["details"]["fields"]) == {"url"}, body
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


def test_plain_http_to_loopback_is_refused_without_the_development_allowance(api, owner):
    assert_error(create(api, url="http://127.0.0.1:8080/hook"), 400, "VALIDATION_ERROR")
    assert_error(create(api, url="http://localhost:8080/hook"), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    "url", ["https://hooks.example.com/hook", "https://HOOKS.example.com:443/a?b=c", "https://alias.example.com/"]
)
def test_create_accepts_a_public_https_url(api, url):
    assert made(api, url=url)["url"] == url


def test_url_length_is_counted_in_utf8_bytes(api, owner):
    prefix = "https://hooks.example.com/"
    exactly = prefix + "é" * ((2048 - len(prefix)) // 2)
    assert len(exactly.encode()) == 2048 and len(exactly) < 2048

    assert made(api, url=exactly)["url"] == exactly

    ascii_over = prefix + "a" * (2049 - len(prefix))
    multibyte_over = exactly + "é"
    assert len(multibyte_over) < 2048 < len(multibyte_over.encode())
    for url in (ascii_over, multibyte_over):
        body = assert_error(create(api, url=url), 400, "VALIDATION_ERROR")
        assert set(body["details"]["fields"]) == {"url"}
    assert WebhookEndpoint.objects.for_org(owner.organization).count() == 1


@pytest.mark.parametrize("extra", [{"enabled": True}, {"signingSecret": "whsec_mine"}, {"verifiedAt": None}])
def test_create_refuses_unknown_keys(api, owner, extra):
    (name,) = extra
    body = assert_error(create(api, **extra), 400, "VALIDATION_ERROR")

    assert name in body["details"]["fields"]
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


def test_create_refuses_an_empty_body_or_a_non_object(api, owner):
    assert_error(api.post(BASE, content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(api.post(BASE, {}, content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(api.post(BASE, [], content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(api.post(BASE, "[1", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()


# --- the 20-endpoint cap and archiving --------------------------------------------------------------------------


def test_the_21st_endpoint_is_refused_and_deleting_one_frees_a_slot(api, owner):
    ids = [made(api, name=f"Endpoint {n}")["id"] for n in range(20)]

    assert_error(create(api, name="One too many"), 409, "WEBHOOK_ENDPOINT_LIMIT_REACHED")
    assert WebhookEndpoint.objects.for_org(owner.organization).count() == 20

    response = api.delete(f"{BASE}/{ids[3]}")
    assert response.status_code == 200, response.content
    archived = response.json()
    assert archived["status"] == "archived" and archived["enabled"] is False
    assert abs(parse_time(archived["archivedAt"]) - timezone.now()) < timedelta(minutes=1)
    assert api.get(f"{BASE}/{ids[3]}").json()["status"] == "archived"

    replacement = made(api, name="Replacement")
    assert_error(create(api, name="Again too many"), 409, "WEBHOOK_ENDPOINT_LIMIT_REACHED")
    assert WebhookEndpoint.objects.for_org(owner.organization).count() == 21
    assert WebhookEndpoint.objects.for_org(owner.organization).filter(archived_at__isnull=True).count() == 20

    listed = [item["id"] for item in api.get(BASE).json()["items"]]
    assert len(listed) == 20 and ids[3] not in listed and replacement["id"] in listed
    assert [item["id"] for item in api.get(f"{BASE}?includeArchived=false").json()["items"]] == listed
    with_archived = api.get(f"{BASE}?includeArchived=true").json()["items"]
    assert len(with_archived) == 21
    assert [item["status"] for item in with_archived if item["id"] == ids[3]] == ["archived"]


def test_the_cap_is_per_practice(api, owner, outsider):
    other = outsider.api_client()
    for n in range(20):
        made(other, name=f"Theirs {n}")

    assert made(api, name="Mine")["status"] == "disabled"


def test_deleting_twice_keeps_the_endpoint_archived(api):
    endpoint = made(api)
    first = api.delete(f"{BASE}/{endpoint['id']}").json()

    response = api.delete(f"{BASE}/{endpoint['id']}")

    assert response.status_code == 200
    assert response.json()["status"] == "archived" and response.json()["archivedAt"] == first["archivedAt"]


def test_deleting_fails_the_queued_deliveries(api, owner):
    endpoint = made(api)
    queued = post(api, f"{BASE}/{endpoint['id']}/test").json()["deliveryId"]

    api.delete(f"{BASE}/{endpoint['id']}")

    delivery = WebhookDelivery.objects.for_org(owner.organization).get(id=queued)
    assert delivery.status == "failed" and delivery.completed_at is not None


def test_list_refuses_bad_query_parameters(api):
    for query in ("includeArchived=yes", "includeArchived=1", "status=enabled", "limit=5"):
        assert_error(api.get(f"{BASE}?{query}"), 400, "VALIDATION_ERROR")


# --- update --------------------------------------------------------------------------------------------------------


def test_patch_changes_name_and_events(api, owner):
    endpoint = made(api)

    response = patch(api, endpoint["id"], {"name": " Renamed ", "events": ["task.created", "task.created"]})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "Renamed" and body["events"] == ["task.created"]
    assert body["url"] == PUBLIC_URL and body["status"] == "disabled"
    row = endpoint_row(endpoint["id"])
    assert (row.name, row.events) == ("Renamed", ["task.created"])
    assert crypto.decrypt(row.secret_encrypted) == endpoint["signingSecret"]


def test_a_new_url_disables_an_enabled_endpoint_and_clears_verification(api, hook):
    endpoint = enabled_endpoint(api, hook)
    assert endpoint["status"] == "enabled" and endpoint["verifiedAt"]

    same = patch(api, endpoint["id"], {"url": hook.url, "name": "Same place"}).json()
    assert same["status"] == "enabled" and same["verifiedAt"] == endpoint["verifiedAt"]

    moved = patch(api, endpoint["id"], {"url": PUBLIC_URL})

    assert moved.status_code == 200, moved.content
    body = moved.json()
    assert body["url"] == PUBLIC_URL
    assert body["status"] == "disabled" and body["enabled"] is False and body["verifiedAt"] is None
    assert_error(post(api, f"{BASE}/{endpoint['id']}/enable"), 409, "WEBHOOK_ENDPOINT_NOT_VERIFIED")
    row = endpoint_row(endpoint["id"])
    assert row.enabled is False and row.verified_at is None


@pytest.mark.parametrize(
    "body",
    [
        {"url": "http://hooks.example.com/hook"},
        {"url": "https://internal.example.com/hook"},
        {"url": "https://10.0.0.1/"},
        {"events": []},
        {"events": ["nope.nope"]},
        {"name": ""},
        {"name": "x" * 201},
        {"enabled": True},
        {"status": "enabled"},
    ],
)
def test_patch_validates_like_create_and_changes_nothing(api, body):
    endpoint = made(api)

    error = assert_error(patch(api, endpoint["id"], body), 400, "VALIDATION_ERROR")

    assert set(error["details"]["fields"]) == set(body)
    after = api.get(f"{BASE}/{endpoint['id']}").json()
    assert {k: after[k] for k in ("name", "url", "events", "status")} == {
        "name": "CRM sync",
        "url": PUBLIC_URL,
        "events": ["patient.created"],
        "status": "disabled",
    }


def test_patch_refuses_an_empty_body(api):
    endpoint = made(api)

    assert_error(api.patch(f"{BASE}/{endpoint['id']}", content_type="application/json"), 400, "VALIDATION_ERROR")


def test_an_archived_endpoint_cannot_be_changed(api, owner):
    endpoint = made(api)
    api.delete(f"{BASE}/{endpoint['id']}")

    assert_error(patch(api, endpoint["id"], {"name": "Back"}), 409, "WEBHOOK_ENDPOINT_ARCHIVED")
    assert endpoint_row(endpoint["id"]).name == "CRM sync"
    for action in ("test", "enable", "pause", "secret/rotate"):
        response = post(api, f"{BASE}/{endpoint['id']}/{action}")
        assert response.status_code in (404, 409), (action, response.content)
    assert not deliveries_of(endpoint["id"]).exists()
    row = endpoint_row(endpoint["id"])
    assert row.archived_at is not None and not row.enabled and not row.previous_secret_encrypted


def test_deliveries_of_an_archived_endpoint_stay_readable_but_cannot_be_replayed(api):
    endpoint = made(api)
    delivery_id = post(api, f"{BASE}/{endpoint['id']}/test").json()["deliveryId"]
    api.delete(f"{BASE}/{endpoint['id']}")

    listed = api.get(f"{BASE}/{endpoint['id']}/deliveries").json()["items"]
    assert [(item["id"], item["status"]) for item in listed] == [(delivery_id, "failed")]
    assert api.get(f"{BASE}/{endpoint['id']}/deliveries/{delivery_id}").json()["lastError"] == "endpoint archived"
    response = post(api, f"{BASE}/{endpoint['id']}/deliveries/{delivery_id}/replay")
    assert response.status_code in (404, 409), response.content
    assert deliveries_of(endpoint["id"]).count() == 1


# --- test, enable, pause -----------------------------------------------------------------------------------------


def test_enable_needs_a_successful_test_then_pause_and_resume(api, hook):
    endpoint = made(api, url=hook.url)
    assert_error(post(api, f"{BASE}/{endpoint['id']}/enable"), 409, "WEBHOOK_ENDPOINT_NOT_VERIFIED")

    queued = post(api, f"{BASE}/{endpoint['id']}/test")
    assert queued.status_code == 202, queued.content
    engine.drain_endpoint(endpoint["id"])
    read = api.get(f"{BASE}/{endpoint['id']}").json()
    assert read["verifiedAt"] is not None and read["status"] == "disabled"

    enabled = post(api, f"{BASE}/{endpoint['id']}/enable")
    assert enabled.status_code == 200, enabled.content
    assert enabled.json()["status"] == "enabled" and enabled.json()["enabled"] is True

    paused = post(api, f"{BASE}/{endpoint['id']}/pause")
    assert paused.status_code == 200, paused.content
    assert paused.json()["status"] == "paused" and paused.json()["paused"] is True

    WebhookEndpoint.objects.unscoped().filter(id=endpoint["id"]).update(consecutive_failures=7)
    resumed = post(api, f"{BASE}/{endpoint['id']}/enable")

    assert resumed.status_code == 200, resumed.content
    body = resumed.json()
    assert body["status"] == "enabled" and body["paused"] is False and body["enabled"] is True
    assert body["consecutiveFailures"] == 0 and body["pausedReason"] == ""


def test_test_route_works_while_disabled_and_while_paused(api, hook):
    endpoint = made(api, url=hook.url)

    response = post(api, f"{BASE}/{endpoint['id']}/test")

    assert response.status_code == 202, response.content
    queued = response.json()
    assert set(queued) == {"deliveryId", "status"} and queued["status"] == "pending"
    engine.drain_endpoint(endpoint["id"])
    assert len(hook.received) == 1
    headers, raw = hook.received[0]
    assert headers["X-Service-Delivery-Id"] == queued["deliveryId"]
    assert signatures_valid_for(endpoint["signingSecret"], headers, raw) == 1
    envelope = json.loads(raw)
    assert envelope["type"] == "webhook_endpoint.test" and envelope["version"] == "1"
    assert api.get(f"{BASE}/{endpoint['id']}/deliveries/{queued['deliveryId']}").json()["status"] == "delivered"

    post(api, f"{BASE}/{endpoint['id']}/enable")
    assert post(api, f"{BASE}/{endpoint['id']}/pause").json()["status"] == "paused"
    response = post(api, f"{BASE}/{endpoint['id']}/test")

    assert response.status_code == 202, response.content
    engine.drain_endpoint(endpoint["id"])
    assert len(hook.received) == 2
    assert hook.received[1][0]["X-Service-Delivery-Id"] == response.json()["deliveryId"]
    delivered = api.get(f"{BASE}/{endpoint['id']}/deliveries/{response.json()['deliveryId']}").json()
    assert delivered["status"] == "delivered" and delivered["kind"] == "test"
    assert api.get(f"{BASE}/{endpoint['id']}").json()["status"] == "paused"


@pytest.mark.parametrize("status", [500, 429, 408, 404, 410])
def test_a_failed_test_does_not_verify_retry_or_count_as_a_failure(api, hook, time_machine, status):
    hook.status = status
    endpoint = made(api, url=hook.url)

    queued = post(api, f"{BASE}/{endpoint['id']}/test").json()
    engine.drain_endpoint(endpoint["id"])

    failed = api.get(f"{BASE}/{endpoint['id']}/deliveries/{queued['deliveryId']}").json()
    assert failed["status"] == "failed" and failed["attempts"] == 1 and failed["responseStatus"] == status
    assert failed["completedAt"] is not None
    read = api.get(f"{BASE}/{endpoint['id']}").json()
    assert read["verifiedAt"] is None and read["consecutiveFailures"] == 0
    assert_error(post(api, f"{BASE}/{endpoint['id']}/enable"), 409, "WEBHOOK_ENDPOINT_NOT_VERIFIED")

    # Nothing is retried later, whatever the schedule.
    time_machine.move_to(timezone.now() + timedelta(hours=3))
    engine.drain_endpoint(endpoint["id"])
    assert len(hook.received) == 1
    assert engine.due_endpoint_ids() == []
    assert WebhookDelivery.objects.unscoped().get(id=queued["deliveryId"]).attempts == 1


def test_a_failed_test_leaves_the_failure_streak_of_an_enabled_endpoint_alone(api, hook):
    endpoint = enabled_endpoint(api, hook)
    WebhookEndpoint.objects.unscoped().filter(id=endpoint["id"]).update(consecutive_failures=3)
    hook.status = 404

    queued = post(api, f"{BASE}/{endpoint['id']}/test").json()
    engine.drain_endpoint(endpoint["id"])

    assert WebhookDelivery.objects.unscoped().get(id=queued["deliveryId"]).status == "failed"
    read = api.get(f"{BASE}/{endpoint['id']}").json()
    assert read["consecutiveFailures"] == 3 and read["status"] == "enabled"


def test_a_successful_test_verifies_and_resets_the_streak(api, hook):
    endpoint = enabled_endpoint(api, hook)
    WebhookEndpoint.objects.unscoped().filter(id=endpoint["id"]).update(consecutive_failures=4)

    post(api, f"{BASE}/{endpoint['id']}/test")
    engine.drain_endpoint(endpoint["id"])

    assert api.get(f"{BASE}/{endpoint['id']}").json()["consecutiveFailures"] == 0


def test_a_test_answered_by_the_old_url_does_not_verify_a_new_url(api, owner, hook, monkeypatch):
    """The url changes (PATCH) while the test request to the old url is in flight: the old url's 200 must not
    verify the new, never-tested url ("a new successful test is needed")."""
    endpoint = made(api, url=hook.url)
    post(api, f"{BASE}/{endpoint['id']}/test")
    real_post = sender.post

    def url_changes_while_in_flight(url, body, headers):
        outcome = real_post(url, body, headers)
        moved = patch(api, endpoint["id"], {"url": PUBLIC_URL})
        assert moved.status_code == 200 and moved.json()["verifiedAt"] is None
        return outcome

    monkeypatch.setattr(sender, "post", url_changes_while_in_flight)
    engine.drain_endpoint(endpoint["id"])

    assert len(hook.received) == 1
    read = api.get(f"{BASE}/{endpoint['id']}").json()
    assert read["url"] == PUBLIC_URL
    assert read["verifiedAt"] is None
    assert_error(post(api, f"{BASE}/{endpoint['id']}/enable"), 409, "WEBHOOK_ENDPOINT_NOT_VERIFIED")


@pytest.mark.parametrize(
    "change",
    [
        lambda client, endpoint_id: post(client, f"{BASE}/{endpoint_id}/pause"),
        lambda client, endpoint_id: patch(client, endpoint_id, {"url": PUBLIC_URL}),
    ],
    ids=["paused", "url-changed"],
)
def test_no_more_events_go_out_once_the_endpoint_is_paused_or_moved_mid_drain(
    api, owner, hook, monkeypatch, time_machine, change
):
    """Pause or a url change lands while the first of three event deliveries is in flight: the other two are not
    sent (not to the old url, not while paused or disabled); they wait, and go out once the endpoint is enabled
    again."""
    time_machine.move_to(timezone.now())
    endpoint = enabled_endpoint(api, hook)
    for _ in range(3):
        emit_event(owner.organization)
    engine.fan_out()
    before = len(hook.received)
    real_post = sender.post
    changed = []

    def change_while_in_flight(url, body, headers):
        outcome = real_post(url, body, headers)
        if not changed:
            changed.append(change(api, endpoint["id"]))
            assert changed[0].status_code == 200, changed[0].content
        return outcome

    monkeypatch.setattr(sender, "post", change_while_in_flight)
    engine.drain_endpoint(endpoint["id"])

    assert len(hook.received) == before + 1
    events = deliveries_of(endpoint["id"]).filter(kind="event")
    assert sorted(d.status for d in events if d.status != "delivered") in (["pending"] * 2, ["in_flight"] * 2)

    # Back at the receiver, verified and enabled again: the held two go out (once each).
    if api.get(f"{BASE}/{endpoint['id']}").json()["url"] != hook.url:
        patch(api, endpoint["id"], {"url": hook.url})
        post(api, f"{BASE}/{endpoint['id']}/test")
        engine.drain_endpoint(endpoint["id"])
    assert post(api, f"{BASE}/{endpoint['id']}/enable").json()["status"] == "enabled"
    time_machine.shift(timedelta(minutes=10))
    engine.drain_endpoint(endpoint["id"])
    assert sorted(d.status for d in events.all()) == ["delivered"] * 3
    sent_events = [json.loads(raw)["id"] for _, raw in hook.received if json.loads(raw)["type"] == "patient.created"]
    assert sorted(sent_events) == sorted(str(d.logical_id) for d in events)


# --- secrets -------------------------------------------------------------------------------------------------------


def test_rotation_shows_the_new_secret_once_and_signs_with_both_until_revoked(api, hook):
    endpoint = verified_endpoint(api, hook)
    old = endpoint["signingSecret"]

    response = post(api, f"{BASE}/{endpoint['id']}/secret/rotate")

    assert response.status_code == 200, response.content
    rotated = response.json()
    assert set(rotated) == {"signingSecret", "previousSecretExpiresAt"}
    new = rotated["signingSecret"]
    assert new.startswith("whsec_") and new != old
    expires = parse_time(rotated["previousSecretExpiresAt"])
    assert abs(expires - (timezone.now() + timedelta(hours=24))) < timedelta(minutes=1)
    row = endpoint_row(endpoint["id"])
    assert crypto.decrypt(row.secret_encrypted) == new and crypto.decrypt(row.previous_secret_encrypted) == old
    assert new not in row.secret_encrypted
    read = api.get(f"{BASE}/{endpoint['id']}")
    assert read.json()["previousSecretExpiresAt"] == rotated["previousSecretExpiresAt"]
    assert new not in read.content.decode() and old not in read.content.decode()

    # During the overlap each delivery carries two v1= signatures: one per secret.
    post(api, f"{BASE}/{endpoint['id']}/test")
    engine.drain_endpoint(endpoint["id"])
    headers, raw = hook.received[-1]
    assert len(headers["X-Service-Signature"].split(",")) == 2
    assert signatures_valid_for(new, headers, raw) == 1 and signatures_valid_for(old, headers, raw) == 1

    revoked = post(api, f"{BASE}/{endpoint['id']}/secret/revoke-previous")

    assert revoked.status_code == 200, revoked.content
    assert revoked.json()["previousSecretExpiresAt"] is None
    assert "signingSecret" not in revoked.json()
    post(api, f"{BASE}/{endpoint['id']}/test")
    engine.drain_endpoint(endpoint["id"])
    headers, raw = hook.received[-1]
    assert headers["X-Service-Signature"].count("v1=") == 1
    assert signatures_valid_for(new, headers, raw) == 1 and signatures_valid_for(old, headers, raw) == 0
    assert_error(post(api, f"{BASE}/{endpoint['id']}/secret/revoke-previous"), 409, "WEBHOOK_NO_PREVIOUS_SECRET")


def test_the_previous_secret_stops_signing_after_24_hours(api, hook, time_machine):
    endpoint = verified_endpoint(api, hook)
    new = post(api, f"{BASE}/{endpoint['id']}/secret/rotate").json()["signingSecret"]

    time_machine.move_to(timezone.now() + timedelta(hours=24, seconds=5))
    post(api, f"{BASE}/{endpoint['id']}/test")
    engine.drain_endpoint(endpoint["id"])

    headers, raw = hook.received[-1]
    assert headers["X-Service-Signature"].count("v1=") == 1
    assert signatures_valid_for(new, headers, raw) == 1
    assert_error(post(api, f"{BASE}/{endpoint['id']}/secret/revoke-previous"), 409, "WEBHOOK_NO_PREVIOUS_SECRET")


def test_revoking_without_a_previous_secret_is_a_conflict(api):
    endpoint = made(api)

    assert_error(post(api, f"{BASE}/{endpoint['id']}/secret/revoke-previous"), 409, "WEBHOOK_NO_PREVIOUS_SECRET")


# --- deliveries: inspection and replay ------------------------------------------------------------------------


@pytest.fixture
def history(api, owner, hook, time_machine):
    """An enabled endpoint with five deliveries of distinct ages: its verification test (delivered), three
    patient.created events (delivered) and a failed test (receiver 500)."""
    time_machine.move_to(timezone.now())
    endpoint = enabled_endpoint(api, hook)
    for _ in range(3):
        time_machine.shift(5)
        emit_event(owner.organization)
        engine.fan_out()
    engine.drain_endpoint(endpoint["id"])
    time_machine.shift(5)
    hook.status = 500
    post(api, f"{BASE}/{endpoint['id']}/test")
    engine.drain_endpoint(endpoint["id"])
    hook.status = 200
    return endpoint


def pages(client, path, **query):
    items, cursor, seen = [], None, 0
    while True:
        params = dict(query, limit=2) | ({"cursor": cursor} if cursor else {})
        response = client.get(path, params)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"items", "nextCursor"}
        assert len(body["items"]) <= 2
        items += body["items"]
        cursor = body["nextCursor"]
        seen += 1
        if cursor is None:
            return items, seen


def test_deliveries_are_listed_newest_first_with_cursor_paging(api, owner, history):
    path = f"{BASE}/{history['id']}/deliveries"

    items, page_count = pages(api, path)

    assert page_count == 3 and len(items) == 5
    assert all(set(item) == DELIVERY_KEYS for item in items)
    expected = list(
        WebhookDelivery.objects.for_org(owner.organization)
        .filter(endpoint_id=history["id"])
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
    )
    assert [item["id"] for item in items] == [str(i) for i in expected]
    created = [parse_time(item["createdAt"]) for item in items]
    assert created == sorted(created, reverse=True) and len(set(created)) == 5
    assert [(item["kind"], item["status"]) for item in items] == [
        ("test", "failed"),
        ("event", "delivered"),
        ("event", "delivered"),
        ("event", "delivered"),
        ("test", "delivered"),
    ]
    assert all(item["endpointId"] == history["id"] for item in items)
    assert api.get(path).json()["items"] == items
    assert api.get(path).json()["nextCursor"] is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"status": "failed"}, [("test", "failed")]),
        ({"status": "delivered"}, [("event", "delivered")] * 3 + [("test", "delivered")]),
        ({"status": "pending"}, []),
        ({"kind": "event"}, [("event", "delivered")] * 3),
        ({"kind": "test"}, [("test", "failed"), ("test", "delivered")]),
        ({"kind": "replay"}, []),
        ({"eventType": "patient.created"}, [("event", "delivered")] * 3),
        ({"eventType": "webhook_endpoint.test"}, [("test", "failed"), ("test", "delivered")]),
        ({"eventType": "task.created"}, []),
        ({"kind": "test", "status": "delivered"}, [("test", "delivered")]),
    ],
)
def test_deliveries_can_be_filtered(api, history, query, expected):
    items, _ = pages(api, f"{BASE}/{history['id']}/deliveries", **query)

    assert [(item["kind"], item["status"]) for item in items] == expected
    if "eventType" in query:
        assert {item["eventType"] for item in items} <= {query["eventType"]}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=bogus", "status"),
        ("status=archived", "status"),
        ("kind=bogus", "kind"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=two", "limit"),
        ("cursor=not-a-cursor", "cursor"),
        ("unknown=1", "unknown"),
        ("endpointId=x", "endpointId"),
    ],
)
def test_delivery_list_refuses_bad_query_parameters(api, history, query, field):
    body = assert_error(api.get(f"{BASE}/{history['id']}/deliveries?{query}"), 400, "VALIDATION_ERROR")

    assert field in body["details"]["fields"], body


def test_one_delivery_can_be_read(api, history):
    listed = api.get(f"{BASE}/{history['id']}/deliveries", {"kind": "event"}).json()["items"][0]

    response = api.get(f"{BASE}/{history['id']}/deliveries/{listed['id']}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body == listed
    assert body["status"] == "delivered" and body["attempts"] == 1 and body["responseStatus"] == 200
    assert body["eventType"] == "patient.created" and body["responseSnippet"] == "ok"
    assert_error(api.get(f"{BASE}/{history['id']}/deliveries/{uuid.uuid4()}"), 404, "NOT_FOUND")


def test_replay_makes_a_new_delivery_with_the_same_logical_id_and_body(api, owner, hook, history):
    original = WebhookDelivery.objects.for_org(owner.organization).filter(kind="event").order_by("created_at")[0]
    before = len(hook.received)

    response = post(api, f"{BASE}/{history['id']}/deliveries/{original.id}/replay")

    assert response.status_code == 202, response.content
    queued = response.json()
    assert set(queued) == {"deliveryId", "status"} and queued["status"] == "pending"
    assert queued["deliveryId"] != str(original.id)
    replay = WebhookDelivery.objects.for_org(owner.organization).get(id=queued["deliveryId"])
    assert replay.kind == "replay" and replay.endpoint_id == original.endpoint_id
    assert replay.logical_id == original.logical_id and replay.body == original.body
    assert replay.event_type == original.event_type and replay.event_id == original.event_id
    assert replay.attempts == 0 and replay.status == "pending"

    engine.drain_endpoint(history["id"])

    assert len(hook.received) == before + 1
    headers, raw = hook.received[-1]
    assert raw == original.body.encode()
    assert json.loads(raw)["id"] == str(original.logical_id)
    assert headers["X-Service-Delivery-Id"] == queued["deliveryId"]
    assert signatures_valid_for(history["signingSecret"], headers, raw) == 1
    replayed = api.get(f"{BASE}/{history['id']}/deliveries/{queued['deliveryId']}").json()
    assert replayed["status"] == "delivered" and replayed["kind"] == "replay"
    assert replayed["logicalId"] == str(original.logical_id)
    assert [i["id"] for i in api.get(f"{BASE}/{history['id']}/deliveries?kind=replay").json()["items"]] == [
        queued["deliveryId"]
    ]
    original.refresh_from_db()
    assert original.status == "delivered" and original.attempts == 1


def test_a_failed_delivery_can_be_replayed(api, owner, hook, history):
    failed = WebhookDelivery.objects.for_org(owner.organization).get(status="failed")

    response = post(api, f"{BASE}/{history['id']}/deliveries/{failed.id}/replay")

    assert response.status_code == 202, response.content
    replay = WebhookDelivery.objects.for_org(owner.organization).get(id=response.json()["deliveryId"])
    assert (replay.logical_id, replay.body, replay.kind) == (failed.logical_id, failed.body, "replay")


# --- tenancy ---------------------------------------------------------------------------------------------------------


def owner_routes(endpoint_id, delivery_id):
    one = f"{BASE}/{endpoint_id}"
    return [
        ("get", one, None),
        ("patch", one, {"name": "Stolen"}),
        ("delete", one, None),
        ("post", f"{one}/test", None),
        ("post", f"{one}/enable", None),
        ("post", f"{one}/pause", None),
        ("post", f"{one}/secret/rotate", None),
        ("post", f"{one}/secret/revoke-previous", None),
        ("get", f"{one}/deliveries", None),
        ("get", f"{one}/deliveries/{delivery_id}", None),
        ("post", f"{one}/deliveries/{delivery_id}/replay", None),
    ]


def call(client, method, path, body=None):
    if body is None:
        return getattr(client, method)(path, content_type="application/json")
    return getattr(client, method)(path, body, content_type="application/json")


def test_another_practice_gets_404_on_every_route(api, owner, outsider):
    endpoint = made(api)
    post(api, f"{BASE}/{endpoint['id']}/secret/rotate")
    delivery_id = post(api, f"{BASE}/{endpoint['id']}/test").json()["deliveryId"]
    theirs = outsider.api_client()
    their_endpoint = made(theirs, name="Theirs")

    for method, path, body in owner_routes(endpoint["id"], delivery_id):
        assert_error(call(theirs, method, path, body), 404, "NOT_FOUND")
    # Their own endpoint id with the owner's delivery id: still not found.
    for method, path, body in owner_routes(their_endpoint["id"], delivery_id)[-2:]:
        assert_error(call(theirs, method, path, body), 404, "NOT_FOUND")

    listed = theirs.get(f"{BASE}?includeArchived=true").json()["items"]
    assert [item["id"] for item in listed] == [their_endpoint["id"]]
    row = endpoint_row(endpoint["id"])
    assert row.name == "CRM sync" and row.archived_at is None and row.previous_secret_encrypted
    assert deliveries_of(endpoint["id"]).count() == 1
    assert not deliveries_of(their_endpoint["id"]).exists()


def test_a_delivery_under_another_endpoint_of_the_same_practice_is_not_found(api, owner):
    first = made(api, name="First")
    second = made(api, name="Second")
    delivery_id = post(api, f"{BASE}/{second['id']}/test").json()["deliveryId"]

    assert_error(api.get(f"{BASE}/{first['id']}/deliveries/{delivery_id}"), 404, "NOT_FOUND")
    assert_error(post(api, f"{BASE}/{first['id']}/deliveries/{delivery_id}/replay"), 404, "NOT_FOUND")
    assert api.get(f"{BASE}/{first['id']}/deliveries").json()["items"] == []
    assert deliveries_of(second["id"]).count() == 1 and not deliveries_of(first["id"]).exists()
    assert api.get(f"{BASE}/{second['id']}/deliveries/{delivery_id}").status_code == 200


# --- permissions -----------------------------------------------------------------------------------------------------


@pytest.fixture
def owned(api):
    endpoint = made(api)
    delivery_id = post(api, f"{BASE}/{endpoint['id']}/test").json()["deliveryId"]
    return SimpleNamespace(endpoint=endpoint, delivery_id=delivery_id)


def read_routes(owned):
    one = f"{BASE}/{owned.endpoint['id']}"
    return [BASE, one, f"{one}/deliveries", f"{one}/deliveries/{owned.delivery_id}"]


def write_routes(owned):
    one = f"{BASE}/{owned.endpoint['id']}"
    return [
        ("post", BASE, {"name": "Mine", "url": PUBLIC_URL, "events": ["patient.created"]}),
        ("patch", one, {"name": "Renamed"}),
        ("delete", one, None),
        ("post", f"{one}/test", None),
        ("post", f"{one}/enable", None),
        ("post", f"{one}/pause", None),
        ("post", f"{one}/secret/rotate", None),
        ("post", f"{one}/secret/revoke-previous", None),
        ("post", f"{one}/deliveries/{owned.delivery_id}/replay", None),
    ]


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_settings_readers_can_read_but_not_write(owner, owned, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()

    for path in read_routes(owned):
        response = client.get(path)
        assert response.status_code == 200, (path, response.content)
        assert owned.endpoint["signingSecret"] not in response.content.decode()
    for method, path, body in write_routes(owned):
        assert_error(call(client, method, path, body), 403, "PERMISSION_DENIED")

    assert WebhookEndpoint.objects.for_org(owner.organization).count() == 1
    row = endpoint_row(owned.endpoint["id"])
    assert row.name == "CRM sync" and row.archived_at is None and not row.paused
    assert row.previous_secret_encrypted == ""
    assert deliveries_of(owned.endpoint["id"]).count() == 1


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_are_refused_everything(owner, owned, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()

    for path in read_routes(owned):
        assert_error(client.get(path), 403, "PERMISSION_DENIED")
    for method, path, body in write_routes(owned):
        assert_error(call(client, method, path, body), 403, "PERMISSION_DENIED")
    assert WebhookEndpoint.objects.for_org(owner.organization).count() == 1
    assert deliveries_of(owned.endpoint["id"]).count() == 1


def test_a_manager_can_manage_endpoints(owner, owned, member_factory):
    client = member_factory(role="manager", organization=owner.organization).api_client()
    one = f"{BASE}/{owned.endpoint['id']}"

    for path in read_routes(owned):
        assert client.get(path).status_code == 200, path
    created = create(client, name="Manager's")
    assert created.status_code == 201 and created.json()["signingSecret"].startswith("whsec_")
    assert patch(client, owned.endpoint["id"], {"name": "Renamed"}).json()["name"] == "Renamed"
    assert post(client, f"{one}/test").status_code == 202
    assert post(client, f"{one}/pause").json()["status"] == "paused"
    assert post(client, f"{one}/secret/rotate").status_code == 200
    assert post(client, f"{one}/secret/revoke-previous").status_code == 200
    assert post(client, f"{one}/deliveries/{owned.delivery_id}/replay").status_code == 202
    assert_error(post(client, f"{one}/enable"), 409, "WEBHOOK_ENDPOINT_NOT_VERIFIED")
    assert client.delete(one).json()["status"] == "archived"


# --- path ids ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["not-a-uuid", "12345", "00000000-0000-0000-0000-00000000000g"])
def test_bad_path_ids_are_validation_errors_naming_the_parameter(api, owned, bad):
    good = owned.endpoint["id"]
    cases = [
        ("get", f"{BASE}/{bad}", None, "id"),
        ("patch", f"{BASE}/{bad}", {"name": "x"}, "id"),
        ("delete", f"{BASE}/{bad}", None, "id"),
        ("post", f"{BASE}/{bad}/test", None, "id"),
        ("post", f"{BASE}/{bad}/enable", None, "id"),
        ("post", f"{BASE}/{bad}/pause", None, "id"),
        ("post", f"{BASE}/{bad}/secret/rotate", None, "id"),
        ("post", f"{BASE}/{bad}/secret/revoke-previous", None, "id"),
        ("get", f"{BASE}/{bad}/deliveries", None, "id"),
        ("get", f"{BASE}/{bad}/deliveries/{owned.delivery_id}", None, "id"),
        ("get", f"{BASE}/{good}/deliveries/{bad}", None, "deliveryId"),
        ("post", f"{BASE}/{good}/deliveries/{bad}/replay", None, "deliveryId"),
    ]
    for method, path, body, field in cases:
        error = assert_error(call(api, method, path, body), 400, "VALIDATION_ERROR")
        assert set(error["details"]["fields"]) == {field}, (path, error)
    assert endpoint_row(good).archived_at is None


def test_unknown_ids_are_not_found(api, owned):
    missing = uuid.uuid4()
    for method, path, body in owner_routes(missing, owned.delivery_id):
        assert_error(call(api, method, path, body), 404, "NOT_FOUND")


# --- events ------------------------------------------------------------------------------------------------------


def test_webhook_routes_emit_no_catalogue_events(api, owner, hook):
    before = Event.objects.unscoped().count()

    endpoint = made(api, url=hook.url)
    patch(api, endpoint["id"], {"name": "Renamed", "events": ["task.created"]})
    delivery_id = post(api, f"{BASE}/{endpoint['id']}/test").json()["deliveryId"]
    engine.drain_endpoint(endpoint["id"])
    post(api, f"{BASE}/{endpoint['id']}/enable")
    post(api, f"{BASE}/{endpoint['id']}/pause")
    post(api, f"{BASE}/{endpoint['id']}/enable")
    post(api, f"{BASE}/{endpoint['id']}/secret/rotate")
    post(api, f"{BASE}/{endpoint['id']}/secret/revoke-previous")
    post(api, f"{BASE}/{endpoint['id']}/deliveries/{delivery_id}/replay")
    engine.drain_endpoint(endpoint["id"])
    patch(api, endpoint["id"], {"url": PUBLIC_URL})
    api.delete(f"{BASE}/{endpoint['id']}")

    assert Event.objects.unscoped().count() == before
    assert engine.fan_out() == (0, set())
