"""The back office for webhooks (endpoints never show their secret; deliveries can be replayed) and the
webhooks_deliver_now debugging command against a real local receiver."""

import hashlib
import hmac
import json
import uuid
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.utils import timezone
from werkzeug import Response

from apps.events.models import Event
from apps.events.services import Actor, emit
from apps.webhooks import services
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.factories import UserFactory

ENDPOINTS = "/admin/webhooks/webhookendpoint/"
DELIVERIES = "/admin/webhooks/webhookdelivery/"


@pytest.fixture
def staff_client(db):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


def new_endpoint(member, *, url="https://hooks.example.com/hook", events=("patient.created",), name="CRM sync"):
    return services.endpoint_create(
        organization=member.organization, user=member.user, name=name, url=url, events=list(events)
    )


def emit_event(organization, type="patient.created"):
    with transaction.atomic():
        return emit(
            organization=organization,
            type=type,
            subject_type="patient",
            subject_id=uuid.uuid4(),
            actor=Actor.system(),
        )


@pytest.fixture
def endpoint_with_deliveries(owner):
    created = new_endpoint(owner)
    endpoint, old_secret = created.endpoint, created.signing_secret
    endpoint, secret = services.secret_rotate(organization=owner.organization, endpoint=endpoint)
    tests = [services.endpoint_test(organization=owner.organization, endpoint=endpoint) for _ in range(2)]
    endpoint.refresh_from_db()
    return endpoint, secret, old_secret, tests


# --- pages ---------------------------------------------------------------------------------------------------------


def test_changelists_and_change_pages_open(staff_client, endpoint_with_deliveries):
    endpoint, _secret, _old, tests = endpoint_with_deliveries

    for path in (
        ENDPOINTS,
        f"{ENDPOINTS}?enabled__exact=0",
        f"{ENDPOINTS}?q=CRM",
        f"{ENDPOINTS}{endpoint.id}/change/",
        DELIVERIES,
        f"{DELIVERIES}?status__exact=pending",
        f"{DELIVERIES}?kind__exact=test",
        f"{DELIVERIES}?event_type__exact=webhook_endpoint.test",
        f"{DELIVERIES}?q={endpoint.id}",
        f"{DELIVERIES}{tests[0].id}/change/",
    ):
        response = staff_client.get(path)
        assert response.status_code == 200, path
    listing = staff_client.get(DELIVERIES).content.decode()
    assert all(str(delivery.id) in listing for delivery in tests)


def test_the_endpoint_pages_never_show_a_secret(staff_client, endpoint_with_deliveries):
    endpoint, secret, old_secret, tests = endpoint_with_deliveries
    assert endpoint.secret_encrypted and endpoint.previous_secret_encrypted

    for path in (
        ENDPOINTS,
        f"{ENDPOINTS}{endpoint.id}/change/",
        DELIVERIES,
        f"{DELIVERIES}{tests[0].id}/change/",
    ):
        page = staff_client.get(path).content.decode()
        for hidden in (secret, old_secret, endpoint.secret_encrypted, endpoint.previous_secret_encrypted):
            assert hidden not in page, path
        assert "whsec_" not in page, path


def test_saving_an_endpoint_in_the_back_office_keeps_its_secret(staff_client, owner):
    created = new_endpoint(owner)
    endpoint = created.endpoint
    page = staff_client.get(f"{ENDPOINTS}{endpoint.id}/change/")
    assert page.status_code == 200

    response = staff_client.post(
        f"{ENDPOINTS}{endpoint.id}/change/",
        {
            "name": "Renamed by staff",
            "url": endpoint.url,
            "events": "patient.created",
            "paused_reason": "",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    endpoint.refresh_from_db()
    assert endpoint.name == "Renamed by staff"
    from apps.core import crypto

    assert crypto.decrypt(endpoint.secret_encrypted) == created.signing_secret


def test_deliveries_cannot_be_added_by_hand(staff_client, endpoint_with_deliveries):
    assert staff_client.get(f"{DELIVERIES}add/").status_code == 403


# --- replay action -------------------------------------------------------------------------------------------------


def test_the_replay_action_queues_replays(staff_client, owner, endpoint_with_deliveries):
    endpoint, _secret, _old, tests = endpoint_with_deliveries
    gone = new_endpoint(owner, name="Gone")
    gone_delivery = services.endpoint_test(organization=owner.organization, endpoint=gone.endpoint)
    services.endpoint_archive(organization=owner.organization, endpoint=gone.endpoint)
    before = WebhookDelivery.objects.unscoped().count()

    response = staff_client.post(
        DELIVERIES,
        {"action": "replay", "_selected_action": [str(d.id) for d in (*tests, gone_delivery)]},
    )

    assert response.status_code == 302
    replays = list(WebhookDelivery.objects.for_org(owner.organization).filter(kind="replay"))
    assert WebhookDelivery.objects.unscoped().count() == before + 2
    assert sorted((r.logical_id, r.body) for r in replays) == sorted((t.logical_id, t.body) for t in tests)
    assert {r.endpoint_id for r in replays} == {endpoint.id}
    assert all(r.status == "pending" and r.attempts == 0 for r in replays)
    assert not {r.id for r in replays} & {t.id for t in tests}
    # The archived endpoint got no replay.
    assert not WebhookDelivery.objects.for_org(owner.organization).filter(endpoint=gone.endpoint, kind="replay")


# --- webhooks_deliver_now ----------------------------------------------------------------------------------------


def verify(secret, headers, body) -> bool:
    signed = f"{headers['X-Service-Timestamp']}.{headers['X-Service-Delivery-Id']}.".encode() + body
    expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, part) for part in headers["X-Service-Signature"].split(","))


def run_command() -> dict:
    out = StringIO()
    call_command("webhooks_deliver_now", stdout=out)
    return json.loads(out.getvalue())


def test_deliver_now_fans_out_pending_events_and_delivers_them(owner, outsider, receiver):
    received = []

    def handler(request):
        received.append((dict(request.headers), request.get_data()))
        return Response("ok", 200)

    receiver.expect_request("/hook", method="POST").respond_with_handler(handler)
    created = new_endpoint(owner, url=receiver.url_for("/hook"), events=("patient.created", "task.created"))
    WebhookEndpoint.objects.unscoped().filter(id=created.endpoint.id).update(enabled=True, verified_at=timezone.now())
    idle = new_endpoint(owner, name="Disabled", url=receiver.url_for("/idle"))
    events = [
        emit_event(owner.organization, "patient.created"),
        emit_event(owner.organization, "task.created"),
        emit_event(owner.organization, "journey.created"),  # not subscribed
        emit_event(outsider.organization, "patient.created"),  # another practice, no endpoint
    ]
    pending = Event.objects.unscoped().filter(fanned_out_at__isnull=True).count()
    assert pending >= len(events)

    result = run_command()

    assert result == {"eventsFannedOut": pending, "deliveriesSent": {str(created.endpoint.id): 2}}
    assert len(received) == 2
    assert sorted(json.loads(body)["id"] for _, body in received) == sorted(str(e.id) for e in events[:2])
    for headers, body in received:
        assert verify(created.signing_secret, headers, body)
        assert headers["Content-Type"] == "application/json"
    deliveries = WebhookDelivery.objects.for_org(owner.organization).filter(endpoint=created.endpoint)
    assert sorted(d.status for d in deliveries) == ["delivered", "delivered"]
    assert not WebhookDelivery.objects.unscoped().filter(endpoint=idle.endpoint).exists()
    assert not Event.objects.unscoped().filter(fanned_out_at__isnull=True).exists()

    # A second run finds nothing new.
    assert run_command() == {"eventsFannedOut": 0, "deliveriesSent": {}}
    assert len(received) == 2


def test_deliver_now_sends_a_queued_test_to_a_disabled_endpoint(owner, receiver):
    received = []

    def handler(request):
        received.append(request.get_data())
        return Response("", 200)

    receiver.expect_request("/hook", method="POST").respond_with_handler(handler)
    created = new_endpoint(owner, url=receiver.url_for("/hook"))
    delivery = services.endpoint_test(organization=owner.organization, endpoint=created.endpoint)

    result = run_command()

    assert result == {"eventsFannedOut": 0, "deliveriesSent": {str(created.endpoint.id): 1}}
    assert len(received) == 1 and json.loads(received[0])["id"] == str(delivery.logical_id)
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    created.endpoint.refresh_from_db()
    assert created.endpoint.verified_at is not None and created.endpoint.enabled is False
