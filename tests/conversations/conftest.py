"""Fixtures of the conversations tests: an SMS connection of the owner's practice and signed inbound SMS."""

import base64
import hashlib
import hmac
import json
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
