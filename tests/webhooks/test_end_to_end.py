import hashlib
import hmac
import json

from werkzeug import Response

from apps.webhooks import delivery


def verify(secret, headers, body):
    expected = (
        "v1="
        + hmac.new(
            secret.encode(),
            f"{headers['X-Service-Timestamp']}.{headers['X-Service-Delivery-Id']}.".encode() + body,
            hashlib.sha256,
        ).hexdigest()
    )
    return any(hmac.compare_digest(expected, part) for part in headers["X-Service-Signature"].split(","))


def test_endpoint_verify_enable_and_deliver_a_signed_event(api, owner, receiver):
    received = []

    def handler(request):
        received.append((dict(request.headers), request.get_data()))
        return Response("ok", 200)

    receiver.expect_request("/hook", method="POST").respond_with_handler(handler)
    r = api.post(
        "/settings/webhook-endpoints",
        {"name": "CRM sync", "url": receiver.url_for("/hook"), "events": ["patient.created"]},
        content_type="application/json",
    )
    assert r.status_code == 201, r.content
    ep = r.json()
    secret = ep["signingSecret"]
    assert ep["status"] == "disabled" and ep["verifiedAt"] is None
    assert api.post(f"/settings/webhook-endpoints/{ep['id']}/enable").json()["code"] == "WEBHOOK_ENDPOINT_NOT_VERIFIED"
    r = api.post(f"/settings/webhook-endpoints/{ep['id']}/test")
    assert r.status_code == 202, r.content
    delivery.drain_endpoint(ep["id"])
    assert len(received) == 1 and verify(secret, *received[0])
    assert api.get(f"/settings/webhook-endpoints/{ep['id']}").json()["verifiedAt"]
    assert api.post(f"/settings/webhook-endpoints/{ep['id']}/enable").json()["status"] == "enabled"
    api.post("/patients", {"firstName": "A", "email": "a@example.com"}, content_type="application/json")
    processed, _touched = delivery.fan_out()
    assert processed == 1
    delivery.drain_endpoint(ep["id"])
    assert len(received) == 2 and verify(secret, *received[1])
    body = json.loads(received[1][1])
    assert body["type"] == "patient.created"
    d = api.get(f"/settings/webhook-endpoints/{ep['id']}/deliveries").json()
    assert [x["status"] for x in d["items"]] == ["delivered", "delivered"]
