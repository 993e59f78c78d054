"""POST /webhooks/telephony/{token}: the 256 KiB cap (413 before reading), the Ed25519 signature over the raw
bytes (missing, wrong, stale: 401, nothing stored), the routing token (unknown: 404), the durable receipt with
connection-scoped dedupe (a duplicate answers 200 and changes nothing), malformed bodies (400), parking of events
for numbers not connected here (review, replay, dismiss) and a failed store or park (503 with Retry-After)."""

import json
import time

import pytest
from django.db import connection as database

from apps.dialer.models import Call, EventState, TelephonyEvent
from tests.conftest import make_member
from tests.dialer.conftest import (
    PRACTICE_NUMBER,
    InboundCall,
    TelnyxAccount,
    order_number,
    post_json,
    signed_post,
    telnyx_event,
    token_of,
)
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def events(owner):
    return TelephonyEvent.objects.for_org(owner.organization)


def test_a_signed_call_event_is_received_once_and_applied(owner, number, deliver):
    call = InboundCall()
    body = call.initiated()
    response = deliver(body)
    assert response.status_code == 200
    assert response.json() == {"received": True, "duplicate": False, "parked": False}
    receipt = events(owner).get()
    assert (receipt.event_id, receipt.event_type, receipt.state) == (body["data"]["id"], "call.initiated", "processed")
    assert receipt.payload == {}  # cleared once applied
    assert Call.objects.for_org(owner.organization).count() == 1

    # The provider retries the same event: acknowledged, nothing changes.
    again = deliver(body)
    assert again.status_code == 200
    assert again.json() == {"received": True, "duplicate": True, "parked": False}
    assert events(owner).count() == 1
    assert Call.objects.for_org(owner.organization).count() == 1


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"telnyx-signature-ed25519": "", "telnyx-timestamp": ""}, "required"),
        ({"telnyx-timestamp": ""}, "required"),
        ({"telnyx-signature-ed25519": "bm90LWEtc2lnbmF0dXJl"}, "does not match"),
        ({"telnyx-signature-ed25519": "%%%not base64%%%"}, "does not match"),
        ({"telnyx-timestamp": "yesterday"}, "five minutes"),
    ],
)
def test_a_missing_or_wrong_signature_is_refused_and_nothing_is_stored(
    owner, line, number, client, account, headers, problem
):
    raw = json.dumps(InboundCall().initiated()).encode()
    signed = account.headers(raw)
    response = client.post(
        f"/webhooks/telephony/{token_of(line)}", raw, content_type="application/json", headers={**signed, **headers}
    )
    error = assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
    assert problem in error["message"]
    assert not events(owner).exists()


def test_a_stale_or_future_timestamp_is_refused_even_correctly_signed(owner, line, number, client, account):
    body = InboundCall().initiated()
    for moment in (time.time() - 301, time.time() + 301):
        response = signed_post(client, token_of(line), body, account, timestamp=int(moment))
        assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
    # Inside the window either way: accepted.
    assert signed_post(client, token_of(line), body, account, timestamp=int(time.time()) - 280).status_code == 200
    assert events(owner).count() == 1


def test_the_signature_covers_the_raw_bytes(owner, line, number, client, account):
    """Re-serialising the JSON (spacing) breaks the signature: the check is over the bytes as sent."""
    body = InboundCall().initiated()
    raw = json.dumps(body).encode()
    headers = account.headers(raw)
    tampered = json.dumps(body, separators=(",", ":")).encode()
    response = client.post(
        f"/webhooks/telephony/{token_of(line)}", tampered, content_type="application/json", headers=headers
    )
    assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
    assert not events(owner).exists()


def test_oversized_bodies_answer_413_before_anything(owner, line, client, account):
    raw = b'{"data": {"id": "x", "event_type": "call.initiated", "payload": {"pad": "' + b"a" * (256 * 1024) + b'"}}}'
    response = client.post(
        f"/webhooks/telephony/{token_of(line)}", raw, content_type="application/json", headers=account.headers(raw)
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert not events(owner).exists()


def test_unknown_token_answers_404(owner, line, client, account):
    body = InboundCall().initiated()
    for token in ("x" * 32, "short", "a" * 200):
        assert_error(signed_post(client, token, body, account), 404, "NOT_FOUND")
    assert not events(owner).exists()


def test_a_body_that_is_not_json_is_refused_with_415(line, client, account):
    raw = b"data=1"
    response = client.post(
        f"/webhooks/telephony/{token_of(line)}",
        raw,
        content_type="application/x-www-form-urlencoded",
        headers=account.headers(raw),
    )
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"not json", "body"),
        (b"[1, 2]", "body"),
        (b'{"data": 1}', "data"),
        (b'{"data": {"event_type": "call.initiated", "payload": {}}}', "data.id"),
        (b'{"data": {"id": "e1", "payload": {}}}', "data.event_type"),
        (b'{"data": {"id": "e1", "event_type": "call.hangup", "payload": []}}', "data.payload"),
        (b'{"data": {"id": "' + b"e" * 129 + b'", "event_type": "call.hangup", "payload": {}}}', "data.id"),
        (b'{"data": {"id": "e1", "event_type": "call.hangup", "payload": {"to": "\\u0000"}}}', "body"),
        (b'{"data": {"id": "e1", "event_type": "call.hangup", "payload": {"d": NaN}}}', "body"),
        (b'\xff\xfe{"data": {}}', "body"),
    ],
)
def test_malformed_signed_bodies_answer_400_naming_the_field(owner, line, client, account, raw, field):
    response = client.post(
        f"/webhooks/telephony/{token_of(line)}", raw, content_type="application/json", headers=account.headers(raw)
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(error["details"]["fields"]) == [field]
    assert not events(owner).exists()


def test_an_event_for_a_number_not_connected_here_is_parked_for_review(
    owner, api, line, number, deliver, django_capture_on_commit_callbacks
):
    other = InboundCall(called="+390299999999")  # a number of the account the practice has not connected
    response = deliver(other.initiated())
    assert response.json() == {"received": True, "duplicate": False, "parked": True}
    parked = events(owner).get()
    assert parked.state == EventState.PARKED
    assert parked.payload["data"]["payload"]["to"] == "+390299999999"  # kept (verified) for the review
    assert not Call.objects.for_org(owner.organization).exists()

    listed = api.get("/dialer/parked-events").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == str(parked.id)
    assert listed["items"][0]["eventType"] == "call.initiated"
    assert listed["items"][0]["payload"] == parked.payload  # the provider's body with its own key names
    assert listed["items"][0]["payload"]["meta"]["delivered_to"]

    # Replaying before the number is connected changes nothing.
    assert_error(post_json(api, f"/dialer/parked-events/{parked.id}/replay"), 409, "DIALER_EVENT_STILL_UNROUTED")
    parked.refresh_from_db()
    assert parked.state == EventState.PARKED

    # Once the number is the practice's, the replay applies it.
    order_number(api, "+390299999999")
    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(api, f"/dialer/parked-events/{parked.id}/replay")
    assert response.status_code == 200 and response.json()["state"] == "received"
    parked.refresh_from_db()
    assert parked.state == EventState.PROCESSED
    assert Call.objects.for_org(owner.organization).get().to_number == "+390299999999"
    assert_error(post_json(api, f"/dialer/parked-events/{parked.id}/dismiss"), 409, "DIALER_EVENT_ALREADY_DECIDED")


def test_a_parked_retry_is_a_duplicate_and_dismissing_drops_the_body(owner, api, line, number, deliver):
    body = InboundCall(called="+390299999999").initiated()
    assert deliver(body).json()["parked"] is True
    assert deliver(body).json() == {"received": True, "duplicate": True, "parked": False}
    parked = events(owner).get()
    response = post_json(api, f"/dialer/parked-events/{parked.id}/dismiss")
    assert response.status_code == 200 and response.json()["state"] == "dismissed"
    parked.refresh_from_db()
    assert (parked.state, parked.payload) == (EventState.DISMISSED, {})
    assert api.get("/dialer/parked-events").json()["total"] == 0


def test_parked_events_are_settings_and_tenant_scoped(owner, api, line, number, deliver, outsider):
    deliver(InboundCall(called="+390299999999").initiated())
    parked = events(owner).get()
    desk = make_member(role="front_desk", organization=owner.organization).api_client()
    assert_error(desk.get("/dialer/parked-events"), 403, "PERMISSION_DENIED")
    assert_error(post_json(desk, f"/dialer/parked-events/{parked.id}/dismiss"), 403, "PERMISSION_DENIED")
    other = outsider.api_client()
    assert other.get("/dialer/parked-events").json()["items"] == []
    for action in ("replay", "dismiss"):
        assert_error(post_json(other, f"/dialer/parked-events/{parked.id}/{action}"), 404, "NOT_FOUND")
    assert_error(other.get(f"/dialer/parked-events?connectionId={line['id']}"), 400, "VALIDATION_ERROR")
    parked.refresh_from_db()
    assert parked.state == EventState.PARKED


def test_events_of_another_practices_connection_are_theirs_only(owner, api, line, number, deliver, outsider, client):
    """The same event id on two connections is two events (dedupe is per connection)."""
    their_account = TelnyxAccount()
    their = post_json(
        outsider.api_client(),
        "/dialer/connections",
        {"name": "Theirs", "apiKey": "KEY-theirs-000000", "publicKey": their_account.public_key},
    ).json()
    body = InboundCall().initiated()
    assert deliver(body).json()["duplicate"] is False
    response = signed_post(client, token_of(their), body, their_account)
    assert response.json() == {"received": True, "duplicate": False, "parked": True}  # no such number there
    assert events(owner).count() == 1
    assert TelephonyEvent.objects.for_org(outsider.organization).count() == 1


def test_unhandled_event_types_are_acknowledged_and_ignored(owner, number, deliver):
    response = deliver(telnyx_event("call.dtmf.received", {"call_leg_id": "x", "to": PRACTICE_NUMBER, "digit": "1"}))
    assert response.status_code == 200
    receipt = events(owner).get()
    assert (receipt.state, receipt.error) == (EventState.PROCESSED, "unhandled_event_type")


@pytest.mark.django_db(transaction=True)
def test_an_event_that_cannot_be_stored_or_parked_answers_503_with_retry_after(client):
    """A failed park: the receipt table refuses the row (a constraint added for the test), so the callback is
    answered 503 with Retry-After and the provider retries it; nothing was kept."""
    owner = make_member()
    account = TelnyxAccount()
    line = post_json(
        owner.api_client(),
        "/dialer/connections",
        {"name": "Line", "apiKey": "KEY-0123456789", "publicKey": account.public_key},
    ).json()
    with database.cursor() as cursor:
        cursor.execute("ALTER TABLE dialer_telephonyevent ADD CONSTRAINT test_refuse CHECK (false) NOT VALID")
    try:
        response = signed_post(client, token_of(line), InboundCall(called="+390299999999").initiated(), account)
    finally:
        with database.cursor() as cursor:
            cursor.execute("ALTER TABLE dialer_telephonyevent DROP CONSTRAINT test_refuse")
    assert_error(response, 503, "CALLBACK_NOT_STORED")
    assert response["Retry-After"] == "30"
    assert not TelephonyEvent.objects.for_org(owner.organization).exists()


def test_the_acknowledging_path_is_two_statements(owner, line, number, client, account, django_assert_num_queries):
    """The token's lookup and the receipt (dedupe and routing in the same statement); nothing else before the 200."""
    with django_assert_num_queries(2):
        response = signed_post(client, token_of(line), InboundCall().initiated(), account)
    assert response.json() == {"received": True, "duplicate": False, "parked": False}
    with django_assert_num_queries(2):
        assert signed_post(client, token_of(line), InboundCall(called="+390299999999").initiated(), account).json()[
            "parked"
        ]
