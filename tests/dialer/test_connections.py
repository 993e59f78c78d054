"""/dialer/connections: the practice's telephony account. The API key is encrypted at rest and never shown again;
the webhook URL carries the routing token; settings-level permissions; another practice's ids are 404 (path) or
400 (body)."""

import pytest

from apps.core import crypto
from apps.dialer.models import DialerConnection
from tests.conftest import make_member
from tests.dialer.conftest import (
    API_KEY,
    APP_ID,
    TelnyxAccount,
    connect,
    patch_json,
    post_json,
    token_of,
)
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def stored(owner) -> DialerConnection:
    return DialerConnection.objects.for_org(owner.organization).get()


def test_create_answers_the_webhook_url_and_never_the_api_key(owner, api, account, settings):
    body = connect(api, account, recordCalls=True)
    row = stored(owner)
    assert body == {
        "id": str(row.id),
        "name": "Front desk line",
        "provider": "telnyx",
        "status": "active",
        "webhookUrl": f"{settings.SVC_BASE_URL}/webhooks/telephony/{row.routing_token}",
        "failoverProbeUrl": f"{settings.SVC_BASE_URL}/webhooks/telephony/{row.routing_token}/failover-probe",
        "publicKey": account.public_key,
        "apiKeySet": True,
        "callControlAppId": APP_ID,
        "recordCalls": True,
        "missedCallAssigneeId": None,
        "createdAt": body["createdAt"],
        "updatedAt": body["updatedAt"],
        "disconnectedAt": None,
    }
    # Encrypted at rest, readable by the service only.
    assert API_KEY not in row.api_key_encrypted
    assert crypto.decrypt(row.api_key_encrypted) == API_KEY
    # Never shown again: not in the list, not in a read.
    for response in (api.get("/dialer/connections"), api.get(f"/dialer/connections/{row.id}")):
        assert response.status_code == 200
        assert API_KEY not in response.content.decode()
    listed = api.get("/dialer/connections").json()
    assert (listed["total"], listed["limit"], listed["offset"]) == (1, 25, 0)
    assert listed["items"][0]["id"] == str(row.id)


def test_create_validates_keys_and_the_assignee(owner, api, account, outsider):
    base = {"name": "Line", "apiKey": API_KEY, "publicKey": account.public_key}
    cases = [
        ({**base, "publicKey": "not-a-key"}, "publicKey"),
        ({**base, "publicKey": "AAAA"}, "publicKey"),
        ({**base, "apiKey": "short"}, "apiKey"),
        ({k: v for k, v in base.items() if k != "apiKey"}, "apiKey"),
        ({**base, "missedCallAssigneeId": str(outsider.user.id)}, "missedCallAssigneeId"),
        ({**base, "recordCalls": "yes"}, "recordCalls"),
        ({**base, "apiSecret": "x"}, "apiSecret"),
    ]
    for body, field in cases:
        error = assert_error(post_json(api, "/dialer/connections", body), 400, "VALIDATION_ERROR")
        assert field in error["details"]["fields"], (field, error)
    assert not DialerConnection.objects.for_org(owner.organization).exists()


def test_update_replaces_the_key_rotates_the_token_and_sets_the_assignee(owner, api, account):
    made = connect(api, account)
    desk = make_member(role="front_desk", organization=owner.organization)
    old_token = token_of(made)
    response = patch_json(
        api,
        f"/dialer/connections/{made['id']}",
        {"apiKey": "KEY-new-0123456789", "rotateToken": True, "missedCallAssigneeId": str(desk.user.id)},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["missedCallAssigneeId"] == str(desk.user.id)
    assert token_of(body) != old_token
    assert "KEY-new" not in response.content.decode()
    assert crypto.decrypt(stored(owner).api_key_encrypted) == "KEY-new-0123456789"
    # The old URL answers 404 at once.
    assert post_json(api, f"/webhooks/telephony/{old_token}", {}).status_code == 404
    # An empty patch is refused; nothing changes.
    assert_error(patch_json(api, f"/dialer/connections/{made['id']}", {}), 400, "VALIDATION_ERROR")


def test_disconnect_stops_callbacks_and_keeps_the_row(owner, api, account, client):
    made = connect(api, account)
    assert api.delete(f"/dialer/connections/{made['id']}").status_code == 204
    row = stored(owner)
    assert row.status == "disconnected" and row.disconnected_at is not None
    assert (
        client.post(f"/webhooks/telephony/{token_of(made)}", b"{}", content_type="application/json").status_code == 404
    )
    assert api.delete(f"/dialer/connections/{made['id']}").status_code == 204  # idempotent


def test_roles_connections_are_settings(owner, api, account):
    made = connect(api, account)
    desk = make_member(role="front_desk", organization=owner.organization).api_client()
    analyst = make_member(role="analyst", organization=owner.organization).api_client()
    nurse = make_member(role="nurse", organization=owner.organization).api_client()
    assert desk.get("/dialer/connections").status_code == 200  # settings:read
    for client in (desk, analyst):
        assert_error(post_json(client, "/dialer/connections", {"name": "x"}), 403, "PERMISSION_DENIED")
        assert_error(patch_json(client, f"/dialer/connections/{made['id']}", {"name": "x"}), 403, "PERMISSION_DENIED")
        assert_error(client.delete(f"/dialer/connections/{made['id']}"), 403, "PERMISSION_DENIED")
    assert_error(nurse.get("/dialer/connections"), 403, "PERMISSION_DENIED")
    assert stored(owner).name == "Front desk line" and stored(owner).status == "active"


def test_another_practice_sees_nothing_and_changes_nothing(owner, api, account, outsider):
    made = connect(api, account)
    other = outsider.api_client()
    assert other.get("/dialer/connections").json()["items"] == []
    path = f"/dialer/connections/{made['id']}"
    assert_error(other.get(path), 404, "NOT_FOUND")
    assert_error(patch_json(other, path, {"name": "Mine now"}), 404, "NOT_FOUND")
    assert_error(other.delete(path), 404, "NOT_FOUND")
    row = stored(owner)
    assert (row.name, row.status) == ("Front desk line", "active")


def test_a_second_account_key_pair_cannot_sign_for_this_connection(api, account, client):
    """The routing token grants nothing alone: another account's key pair is refused."""
    made = connect(api, account)
    stranger = TelnyxAccount()
    raw = b'{"data": {"id": "e1", "event_type": "call.initiated", "payload": {}}}'
    response = client.post(
        f"/webhooks/telephony/{token_of(made)}", raw, content_type="application/json", headers=stranger.headers(raw)
    )
    assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
