"""End to end: a committed patient change reaches a real HTTP receiver through the outbox, the Redis broker and a
real Celery worker, signed."""

import hashlib
import hmac
import json
import time

from werkzeug import Response

from apps.webhooks import services
from apps.webhooks.models import WebhookEndpoint
from config.celery import app as celery_app


def test_a_committed_event_is_delivered_by_a_worker(start_worker, owner, httpserver, settings, monkeypatch):
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True
    received = []
    httpserver.expect_request("/hook").respond_with_handler(
        lambda request: received.append((dict(request.headers), request.get_data())) or Response("ok", 200)
    )
    created = services.endpoint_create(
        organization=owner.organization,
        user=owner.user,
        name="e2e",
        url=httpserver.url_for("/hook"),
        events=["patient.created"],
    )
    WebhookEndpoint.objects.for_org(owner.organization).filter(id=created.endpoint.id).update(
        enabled=True, verified_at=created.endpoint.created_at
    )
    worker = start_worker(DEBUG="1", SVC_WEBHOOKS_ALLOW_LOOPBACK="1")
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)

    response = owner.api_client().post(
        "/patients", {"firstName": "Ada", "email": "ada@example.com"}, content_type="application/json"
    )
    assert response.status_code == 201

    deadline = time.monotonic() + 120
    while not received:
        assert worker.poll() is None, worker.log()
        assert time.monotonic() < deadline, f"no delivery within 120 s; worker log: {worker.log()}"
        time.sleep(0.1)
    headers, body = received[0]
    signed = f"{headers['X-Service-Timestamp']}.{headers['X-Service-Delivery-Id']}.".encode() + body
    expected = "v1=" + hmac.new(created.signing_secret.encode(), signed, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Service-Signature"], expected)
    envelope = json.loads(body)
    assert envelope["type"] == "patient.created" and envelope["subject"]["id"] == response.json()["id"]
