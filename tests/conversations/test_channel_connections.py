"""Channel connections (settings): connect every kind with its provider's credentials, which are encrypted at rest
and never returned; one practice per number or address; rename, replace credentials, disconnect, reconnect,
rotate the routing token; health changes emit channel_connection.health_changed; tenancy and permissions."""

import base64
import json
import re

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from apps.conversations import services
from apps.conversations.models import ChannelConnection
from apps.events.models import Event
from tests.conftest import make_member

BASE = "/settings/channel-connections"


def ed25519_public_key() -> str:
    raw = (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    return base64.b64encode(raw).decode()


def body(kind: str, **overrides) -> dict:
    examples = {
        "sms": {
            "address": "+39 333 123 4567",
            "credentials": {"accountSid": "AC" + "1" * 32, "authToken": "sms-auth-token-secret"},
        },
        "messaging_app": {
            "address": "106540352242922",
            "credentials": {"accessToken": "EAAG-x"},
        },
        "email": {
            "address": "Reception",
            "credentials": {},
        },
        "telephony_messaging": {
            "address": "+1 (415) 555-0100",
            "credentials": {"publicKey": ed25519_public_key(), "apiKey": "KEY-telephony-secret"},
        },
    }
    return {"kind": kind, "name": f"Front desk {kind}", **examples[kind], **overrides}


def post(client, data):
    return client.post(BASE, json.dumps(data), content_type="application/json")


def patch(client, id, data):
    return client.patch(f"{BASE}/{id}", json.dumps(data), content_type="application/json")


@pytest.mark.parametrize(
    ("kind", "address", "callback"),
    [
        ("sms", "+393331234567", "/webhooks/sms/{token}"),
        ("messaging_app", "106540352242922", "/webhooks/messaging-app"),
        ("email", r"reception\.[a-z2-9]{10}@inbound\.practice\.example", "/webhooks/email-provider"),
        ("telephony_messaging", "+14155550100", "/webhooks/telephony-messaging/{token}"),
    ],
)
def test_connect_each_kind_without_ever_returning_credentials(api, owner, kind, address, callback):
    data = body(kind)
    response = post(api, data)
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["kind"] == kind and created["status"] == "pending"
    if kind == "email":  # the chosen first part, a private suffix, the platform's inbound domain
        assert re.fullmatch(address, created["address"]), created["address"]
    else:
        assert created["address"] == address
    assert created["health"] == "unknown"
    assert sorted(created["credentialKeys"]) == sorted(data["credentials"])
    assert created["callbackUrl"] == "http://testserver" + callback.format(token=created["routingToken"])
    for secret in data["credentials"].values():
        assert secret not in response.content.decode()
    stored = ChannelConnection.objects.for_org(owner.organization).get(id=created["id"])
    for secret in data["credentials"].values():
        assert secret not in stored.credentials_encrypted  # encrypted at rest
    decrypted = services.connection_credentials(stored)
    assert sorted(decrypted.values()) == sorted(data["credentials"].values())
    listed = api.get(BASE).json()["items"]
    assert [item["id"] for item in listed] == [created["id"]]
    assert api.get(f"{BASE}/{created['id']}").json() == created


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (body("sms", address="333 123"), "address"),
        (body("messaging_app", address="not-an-id"), "address"),
        (body("email", address="not an address"), "address"),
        (body("email", address="reception@studio.example"), "address"),  # the domain is the platform's
        (body("sms", credentials={"accountSid": "AC1"}), "credentials"),  # authToken missing
        (body("sms", credentials={"accountSid": "AC1", "authToken": "x", "apiKey": "y"}), "credentials"),
        (body("telephony_messaging", credentials={"publicKey": "bm90LWEta2V5"}), "credentials"),
        (body("email", credentials={"signingSecret": "whsec_x"}), "credentials"),  # the platform's, not theirs
        (body("messaging_app", credentials={}), "credentials"),  # accessToken missing
        ({**body("sms"), "kind": "fax"}, "kind"),
        ({**body("sms"), "routingToken": "mine"}, "routingToken"),
        ({k: v for k, v in body("sms").items() if k != "name"}, "name"),
    ],
)
def test_bad_connections_are_refused_naming_the_field(api, data, field):
    response = post(api, data)
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["code"] == "VALIDATION_ERROR"
    assert field in error["details"]["fields"], error
    assert not ChannelConnection.objects.unscoped().exists()


def test_an_address_belongs_to_one_practice_until_disconnected(api, owner, outsider):
    mine = post(api, body("sms")).json()
    theirs = post(outsider.api_client(), body("sms", address="+393331234567"))
    assert theirs.status_code == 409 and theirs.json()["code"] == "CHANNEL_ADDRESS_ALREADY_CONNECTED"
    assert post(api, body("sms")).status_code == 409  # twice in one practice too

    disconnected = api.delete(f"{BASE}/{mine['id']}")
    assert disconnected.status_code == 200 and disconnected.json()["status"] == "disconnected"
    assert disconnected.json()["disconnectedAt"]
    assert api.delete(f"{BASE}/{mine['id']}").json()["disconnectedAt"] == disconnected.json()["disconnectedAt"]
    assert post(outsider.api_client(), body("sms")).status_code == 201

    reconnect = patch(api, mine["id"], {"status": "active"})
    assert reconnect.status_code == 409 and reconnect.json()["code"] == "CHANNEL_ADDRESS_ALREADY_CONNECTED"
    assert api.get(f"{BASE}/{mine['id']}").json()["status"] == "disconnected"


def test_rename_replace_some_credentials_and_reconnect(api, owner):
    created = post(api, body("telephony_messaging")).json()
    response = patch(api, created["id"], {"name": "Texting line", "credentials": {"apiKey": "rotated"}})
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Texting line"
    stored = ChannelConnection.objects.for_org(owner.organization).get(id=created["id"])
    credentials = services.connection_credentials(stored)
    assert credentials["api_key"] == "rotated" and len(base64.b64decode(credentials["public_key"])) == 32
    assert patch(api, created["id"], {"credentials": {"authToken": "x"}}).status_code == 400  # not this kind's
    assert patch(api, created["id"], {"status": "failing"}).status_code == 400  # set by the service, not by hand
    assert patch(api, created["id"], {"kind": "sms"}).status_code == 400
    assert patch(api, created["id"], {"status": "disconnected"}).json()["status"] == "disconnected"
    again = patch(api, created["id"], {"status": "active"}).json()
    assert again["status"] == "active" and again["disconnectedAt"] is None


def test_rotating_the_routing_token_changes_the_callback_url(api):
    created = post(api, body("sms")).json()
    rotated = api.post(f"{BASE}/{created['id']}/rotate-token")
    assert rotated.status_code == 200
    assert rotated.json()["routingToken"] != created["routingToken"]
    assert rotated.json()["callbackUrl"].endswith(rotated.json()["routingToken"])


def test_list_filters_by_kind_and_status(api):
    sms = post(api, body("sms")).json()
    email = post(api, body("email")).json()
    api.delete(f"{BASE}/{email['id']}")
    assert [i["id"] for i in api.get(BASE, {"kind": "sms"}).json()["items"]] == [sms["id"]]
    assert [i["id"] for i in api.get(BASE, {"status": "disconnected"}).json()["items"]] == [email["id"]]
    assert api.get(BASE, {"kind": "fax"}).status_code == 400
    assert api.get(BASE, {"colour": "red"}).status_code == 400


def test_another_practices_connection_is_404_everywhere(api, outsider):
    theirs = post(outsider.api_client(), body("sms")).json()
    assert api.get(BASE).json()["items"] == []
    for response in (
        api.get(f"{BASE}/{theirs['id']}"),
        patch(api, theirs["id"], {"name": "mine now"}),
        api.delete(f"{BASE}/{theirs['id']}"),
        api.post(f"{BASE}/{theirs['id']}/rotate-token"),
    ):
        assert response.status_code == 404, response.content
    assert outsider.api_client().get(f"{BASE}/{theirs['id']}").json()["name"] == theirs["name"]


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_settings_readers_read_but_only_admins_change(owner, role):
    created = post(owner.api_client(), body("sms")).json()
    member = make_member(role=role, organization=owner.organization)
    client = member.api_client()
    assert client.get(BASE).status_code == 200
    assert client.get(f"{BASE}/{created['id']}").status_code == 200
    for response in (
        post(client, body("email")),
        patch(client, created["id"], {"name": "x"}),
        client.delete(f"{BASE}/{created['id']}"),
        client.post(f"{BASE}/{created['id']}/rotate-token"),
    ):
        assert response.status_code == 403, response.content


def test_clinical_roles_cannot_read_connections(owner):
    dentist = make_member(role="dentist", organization=owner.organization)
    assert dentist.api_client().get(BASE).status_code == 403


def test_a_health_change_emits_one_event_without_the_address_or_credentials(api, owner):
    created = post(api, body("sms")).json()
    connection = ChannelConnection.objects.for_org(owner.organization).get(id=created["id"])
    assert services.connection_record_health(connection=connection, health="unhealthy", reason="signature failures")
    assert not services.connection_record_health(connection=connection, health="unhealthy", reason="again")
    assert services.connection_record_health(connection=connection, health="healthy")
    events = list(
        Event.objects.for_org(owner.organization)
        .filter(type="channel_connection.health_changed")
        .order_by("created_at", "id")
    )
    assert [(e.data["previousHealth"], e.data["health"]) for e in events] == [
        ("unknown", "unhealthy"),
        ("unhealthy", "healthy"),
    ]
    assert all(e.subject_id == created["id"] and e.data["kind"] == "sms" for e in events)
    text = json.dumps([e.data for e in events])
    assert "+393331234567" not in text and "sms-auth-token-secret" not in text
    read = api.get(f"{BASE}/{created['id']}").json()
    assert read["health"] == "healthy" and read["healthChangedAt"]


def test_two_practices_choosing_the_same_inbox_name_get_different_private_addresses(api, outsider):
    """An inbound address cannot be claimed by guessing: each connection's has its own random suffix."""
    mine = post(api, body("email")).json()
    theirs = post(outsider.api_client(), body("email")).json()
    assert mine["address"] != theirs["address"]
    assert mine["address"].startswith("reception.") and theirs["address"].startswith("reception.")


def test_a_messaging_app_number_connects_only_with_a_token_the_platform_accepts_for_it(api, owner, graph, settings):
    """One app secret signs every number's callbacks, so the number ties them to a practice: the platform (Graph
    GET /{phone-number-id} with the token) must confirm the token reaches it, on connect, token change and reconnect."""
    from tests.conversations.conftest import REFUSED_TOKEN

    refused = post(api, body("messaging_app", credentials={"accessToken": REFUSED_TOKEN}))
    assert refused.status_code == 400 and "credentials" in refused.json()["details"]["fields"]
    assert not ChannelConnection.objects.for_org(owner.organization).exists()
    asked = [request for request, _ in graph.log if request.path == "/v21.0/106540352242922"]
    assert asked and asked[-1].headers["Authorization"] == f"Bearer {REFUSED_TOKEN}"

    created = post(api, body("messaging_app")).json()
    assert patch(api, created["id"], {"credentials": {"accessToken": REFUSED_TOKEN}}).status_code == 400
    api.delete(f"{BASE}/{created['id']}")
    asked_before = len(graph.log)
    assert patch(api, created["id"], {"status": "pending"}).status_code == 200  # reconnecting asks again
    assert len(graph.log) == asked_before + 1

    settings.SVC_MESSAGING_APP_GRAPH_URL = "http://127.0.0.1:9/v21.0"  # nothing answers there
    down = post(api, body("messaging_app", address="106540352242999"))
    assert down.status_code == 503 and down.json()["code"] == "MESSAGING_PLATFORM_UNAVAILABLE"
    assert down.headers["Retry-After"]
