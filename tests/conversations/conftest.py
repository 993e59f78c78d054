"""Fixtures of the conversations tests: an SMS connection of the owner's practice and signed inbound SMS."""

import base64
import hashlib
import hmac
import json
import re
from urllib.parse import urlencode

import pytest

AUTH_TOKEN = "twilio-auth-token-of-the-practice"
PRACTICE_NUMBER = "+390212345678"


def twilio_signature(auth_token: str, url: str, params: dict) -> str:
    """As twilio-python's RequestValidator computes it: the URL, then each parameter's name and value by name."""
    signed = url + "".join(f"{name}{params[name]}" for name in sorted(params))
    return base64.b64encode(hmac.new(auth_token.encode(), signed.encode(), hashlib.sha1).digest()).decode()


def connect_sms(api) -> dict:
    """An SMS connection made through the settings route; its JSON."""
    response = api.post(
        "/settings/channel-connections",
        json.dumps(
            {
                "kind": "sms",
                "name": "Reception SMS",
                "address": PRACTICE_NUMBER,
                "credentials": {"accountSid": "AC" + "0" * 32, "authToken": AUTH_TOKEN},
            }
        ),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def connection(api):
    return connect_sms(api)


GRAPH_FIELDS = "id,display_phone_number,verified_name"
REFUSED_TOKEN = "EAAG-refused"


@pytest.fixture(autouse=True)
def graph(httpserver, settings):
    """The messaging platform's Graph API on a local server, as connecting a number asks it: GET /{phone-number-id}
    with the number's token answers the number, except for REFUSED_TOKEN (Graph's 400 OAuthException 190)."""
    from werkzeug import Response

    def number(request):
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not token or token == REFUSED_TOKEN:
            error = {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}
            return Response(json.dumps({"error": error}), status=400, content_type="application/json")
        number_id = request.path.rsplit("/", 1)[-1]
        found = {"id": number_id, "display_phone_number": "+39 02 1234 5678", "verified_name": "Studio Rossi"}
        return Response(json.dumps(found), content_type="application/json")

    httpserver.expect_request(
        re.compile(r"^/v21\.0/\d+$"), method="GET", query_string={"fields": GRAPH_FIELDS}
    ).respond_with_handler(number)
    settings.SVC_MESSAGING_APP_GRAPH_URL = httpserver.url_for("/v21.0")
    return httpserver


def deliver(client, connection, params: dict, *, signature: str | None = None, token: str | None = None, **headers):
    path = f"/webhooks/sms/{token or connection['routingToken']}"
    if signature is None:
        signature = twilio_signature(AUTH_TOKEN, "http://testserver" + path, params)
    return client.post(
        path,
        urlencode(params),
        content_type="application/x-www-form-urlencoded",
        headers={"X-Twilio-Signature": signature, **headers},
    )


@pytest.fixture
def inbound(client, connection, django_capture_on_commit_callbacks):
    """Deliver a signed SMS and run what the commit publishes (the processing task, eager in tests)."""

    def send(params: dict, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return deliver(client, connection, params, **kwargs)

    return send


# --- the other providers' signing schemes, as the providers compute them -----------------------------------------

MESSAGING_APP_SECRET = "test-messaging-app-secret"  # config.settings.test
EMAIL_WEBHOOK_SECRET = "whsec_dGVzdC1lLW1haWwtc2lnbmluZy1zZWNyZXQ="  # config.settings.test


def hub_signature(raw: bytes, secret: str = MESSAGING_APP_SECRET) -> str:
    """WhatsApp Cloud API: X-Hub-Signature-256."""
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def svix_headers(raw: bytes, *, event_id: str, timestamp: int, secret: str = EMAIL_WEBHOOK_SECRET) -> dict:
    """Resend (Svix / Standard Webhooks): v1,<base64 HMAC-SHA256(key, id.timestamp.body)>."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{event_id}.{timestamp}.".encode() + raw
    signature = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return {"svix-id": event_id, "svix-timestamp": str(timestamp), "svix-signature": f"v1,{signature}"}


class TelnyxAccount:
    """A telephony account's Ed25519 key pair, generated per test: the public key is what the practice connects,
    the private key signs callbacks as Telnyx does ("timestamp|body")."""

    def __init__(self):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self.private_key = Ed25519PrivateKey.generate()
        raw = self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode()

    def headers(self, raw: bytes, timestamp: int) -> dict:
        signature = self.private_key.sign(str(timestamp).encode() + b"|" + raw)
        return {"telnyx-signature-ed25519": base64.b64encode(signature).decode(), "telnyx-timestamp": str(timestamp)}


def connect(api, kind: str, address: str, credentials: dict | None = None, name: str | None = None) -> dict:
    response = api.post(
        "/settings/channel-connections",
        json.dumps(
            {"kind": kind, "name": name or f"{kind} line", "address": address, "credentials": credentials or {}}
        ),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()
