"""/settings/pms/connections: connect (secret shown once), read, update, rotate, disconnect; pms:manage only;
another practice's connection is 404 and untouched."""

import json

import pytest

from apps.pms.models import PmsConnection
from tests.helpers import assert_error
from tests.pms.conftest import API_KEY, connect, live, patient, post_json, signed_headers, token_of

pytestmark = pytest.mark.django_db


def test_connecting_shows_the_secret_once_and_never_the_api_key(owner, api, connection):
    assert connection["provider"] == "pmsconnect"
    assert connection["signingSecret"].startswith("pmswhsec_")
    assert connection["apiKeySet"] is True and "apiKey" not in connection
    assert connection["callbackUrl"].endswith(f"/webhooks/pms/pmsconnect/{token_of(connection)}")
    read = api.get(f"/settings/pms/connections/{connection['id']}").json()
    assert "signingSecret" not in read and read["health"] == "healthy"
    stored = PmsConnection.objects.for_org(owner.organization).get()
    assert (
        API_KEY not in stored.api_key_encrypted and connection["signingSecret"] not in stored.signing_secret_encrypted
    )
    listed = api.get("/settings/pms/connections").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == connection["id"]


def test_one_live_connection_per_practice(api, pms, connection):
    second = post_json(api, "/settings/pms/connections", {"name": "Two", "baseUrl": pms.base_url, "apiKey": API_KEY})
    assert_error(second, 409, "PMS_ALREADY_CONNECTED")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"name": "PMS", "baseUrl": "http://pms.example.org", "apiKey": API_KEY}, "baseUrl", id="http"),
        pytest.param({"name": "PMS", "baseUrl": "https://10.0.0.1", "apiKey": API_KEY}, "baseUrl", id="ip"),
        pytest.param({"name": " ", "baseUrl": "https://pms.example.org", "apiKey": API_KEY}, "name", id="blank"),
        pytest.param({"name": "PMS", "baseUrl": "https://pms.example.org", "apiKey": "short"}, "apiKey", id="key"),
        pytest.param({"name": "PMS", "baseUrl": "https://pms.example.org"}, "apiKey", id="missing"),
        pytest.param({"name": "PMS", "baseUrl": "https://pms.example.org", "apiKey": API_KEY, "x": 1}, "x", id="extra"),
    ],
)
def test_bad_connection_input_is_400_naming_the_field(owner, api, body, field):
    response = assert_error(post_json(api, "/settings/pms/connections", body), 400, "VALIDATION_ERROR")
    assert field in response["details"]["fields"]
    assert not PmsConnection.objects.for_org(owner.organization).exists()


def test_front_desk_cannot_manage_the_pms(owner, member_factory, connection):
    front_desk = member_factory(role="front_desk", organization=owner.organization)
    for client in (front_desk.api_client(), front_desk.session_client()):
        assert_error(client.get("/settings/pms/connections"), 403, "PERMISSION_DENIED")
        assert_error(client.get(f"/settings/pms/connections/{connection['id']}"), 403, "PERMISSION_DENIED")
        assert_error(
            post_json(
                client, "/settings/pms/connections", {"name": "x", "baseUrl": "https://a.example", "apiKey": API_KEY}
            ),
            403,
            "PERMISSION_DENIED",
        )
        assert_error(client.delete(f"/settings/pms/connections/{connection['id']}"), 403, "PERMISSION_DENIED")
    assert PmsConnection.objects.for_org(owner.organization).get().status == "active"


def test_another_practices_connection_is_404_and_untouched(owner, outsider, connection):
    stranger = outsider.api_client()
    path = f"/settings/pms/connections/{connection['id']}"
    assert_error(stranger.get(path), 404, "NOT_FOUND")
    assert_error(stranger.patch(path, json.dumps({"name": "Mine"}), content_type="application/json"), 404, "NOT_FOUND")
    assert_error(post_json(stranger, f"{path}/rotate", {"signingSecret": True}), 404, "NOT_FOUND")
    assert_error(stranger.delete(path), 404, "NOT_FOUND")
    assert stranger.get("/settings/pms/connections").json()["total"] == 0
    stored = PmsConnection.objects.for_org(owner.organization).get()
    assert (stored.name, stored.status, stored.routing_token) == ("Practice PMS", "active", token_of(connection))


def test_update_changes_name_and_url(api, pms, connection):
    path = f"/settings/pms/connections/{connection['id']}"
    changed = api.patch(path, json.dumps({"name": "Dentally"}), content_type="application/json")
    assert changed.status_code == 200 and changed.json()["name"] == "Dentally"
    empty = assert_error(api.patch(path, "{}", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert empty["details"]["fields"]


def test_rotating_the_secret_keeps_the_previous_one_for_a_day(owner, api, client, connection, deliver):
    rotated = post_json(api, f"/settings/pms/connections/{connection['id']}/rotate", {"signingSecret": True})
    assert rotated.status_code == 200, rotated.content
    secret = rotated.json()["signingSecret"]
    assert secret and secret != connection["signingSecret"] and rotated.json()["previousSecretUntil"]
    assert deliver([live("patient", patient(30))], secret=secret).status_code == 200
    assert deliver([live("patient", patient(31))], secret=connection["signingSecret"]).status_code == 200
    assert_error(post_json(api, f"/settings/pms/connections/{connection['id']}/rotate", {}), 400, "VALIDATION_ERROR")


def test_rotating_the_token_retires_the_old_url(api, client, connection):
    rotated = post_json(api, f"/settings/pms/connections/{connection['id']}/rotate", {"routingToken": True}).json()
    assert rotated["signingSecret"] is None and rotated["callbackUrl"] != connection["callbackUrl"]
    raw = json.dumps({"events": [live("patient", patient(9))]}).encode()
    headers = signed_headers(connection["signingSecret"], raw)
    old_path = f"/webhooks/pms/pmsconnect/{token_of(connection)}"
    old = client.post(old_path, raw, content_type="application/json", headers=headers)
    assert_error(old, 404, "NOT_FOUND")
    new = client.post(
        f"/webhooks/pms/pmsconnect/{token_of(rotated)}",
        raw,
        content_type="application/json",
        headers=signed_headers(connection["signingSecret"], raw),
    )
    assert new.status_code == 200


def test_disconnecting_wipes_credentials_and_is_repeatable(
    owner, api, pms, connection, django_capture_on_commit_callbacks
):
    path = f"/settings/pms/connections/{connection['id']}"
    gone = api.delete(path)
    assert gone.status_code == 200
    assert (gone.json()["status"], gone.json()["callbackUrl"], gone.json()["apiKeySet"]) == (
        "disconnected",
        None,
        False,
    )
    assert api.delete(path).status_code == 200
    assert_error(post_json(api, f"{path}/rotate", {"signingSecret": True}), 409, "PMS_CONNECTION_DISCONNECTED")
    assert_error(post_json(api, f"{path}/imports"), 409, "PMS_CONNECTION_DISCONNECTED")
    # A new PMS can be connected now.
    connect(api, pms, django_capture_on_commit_callbacks)
    assert PmsConnection.objects.for_org(owner.organization).count() == 2


def test_health_changes_record_an_event_each(owner, api, pms, django_capture_on_commit_callbacks):
    from tests.pms.conftest import events_of

    created = connect(api, pms, django_capture_on_commit_callbacks, apiKey="wrong-key-0123456789")
    fixed = api.patch(
        f"/settings/pms/connections/{created['id']}", json.dumps({"apiKey": API_KEY}), content_type="application/json"
    )
    assert fixed.json()["health"] == "healthy"
    changes = [e.data for e in events_of(owner.organization, "pms_connection.health_changed")]
    assert changes == [
        {"health": "failing", "previousHealth": "healthy", "reason": "pms_credentials_refused"},
        {"health": "healthy", "previousHealth": "failing", "reason": None},
    ]
