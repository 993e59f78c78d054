"""POST /webhooks/sms/{token}/status (Twilio status callbacks) and the SMS route's parking of a number the practice
has not connected; the inbound message reaching /today/ws live."""

import json
from urllib.parse import urlencode

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.utils import timezone

from apps.conversations.models import InboundDelivery, Message, ParkedCallback
from apps.events.models import Event
from config.asgi import application
from tests.conversations.conftest import AUTH_TOKEN, PRACTICE_NUMBER, twilio_signature

PATIENT = "+393331234567"
FORM = "application/x-www-form-urlencoded"


def status_post(client, connection, params: dict, *, signature=None):
    path = f"/webhooks/sms/{connection['routingToken']}/status"
    signature = signature or twilio_signature(AUTH_TOKEN, "http://testserver" + path, params)

    return client.post(
        path,
        urlencode(params),
        content_type="application/x-www-form-urlencoded",
        headers={"X-Twilio-Signature": signature},
    )


@pytest.fixture
def outbound(owner, api, inbound):
    """An SMS we sent (sending arrives with part 2: the row is made directly) in a conversation a text opened."""
    inbound({"MessageSid": "SM-in-1", "From": PATIENT, "To": PRACTICE_NUMBER, "Body": "Ciao"})
    [conversation] = api.get("/conversations").json()["items"]
    return Message.objects.for_org(owner.organization).create(
        organization=owner.organization,
        conversation_id=conversation["id"],
        direction="outbound",
        channel="sms",
        status="queued",
        body="Il suo appuntamento è confermato",
        provider_message_id="SM-out-1",
        occurred_at=timezone.now(),
    )


@pytest.fixture
def report(client, connection, django_capture_on_commit_callbacks):
    def send(status: str, sid: str = "SM-out-1", **extra):
        params = {"MessageSid": sid, "MessageStatus": status, "From": PRACTICE_NUMBER, "To": PATIENT, **extra}
        with django_capture_on_commit_callbacks(execute=True):
            return status_post(client, connection, params)

    return send


def test_statuses_move_the_message_forward_only_each_change_one_event(owner, outbound, report):
    for status in ("sent", "delivered", "sent", "queued", "failed"):  # the last three arrive late: ignored
        response = report(status)
        assert response.status_code == 200 and response["Content-Type"] == "text/xml"
    outbound.refresh_from_db()
    assert outbound.status == "delivered" and outbound.status_changed_at is not None
    changes = (
        Event.objects.for_org(owner.organization).filter(type="message.status_changed").order_by("created_at", "id")
    )
    assert [(e.data["previousStatus"], e.data["status"]) for e in changes] == [
        ("queued", "sent"),
        ("sent", "delivered"),
    ]
    assert all("confermato" not in json.dumps(e.data) for e in changes)


def test_a_failure_before_delivery_is_recorded_with_the_providers_code(owner, outbound, report):
    report("undelivered", ErrorCode="30003")
    outbound.refresh_from_db()
    assert outbound.status == "undelivered" and outbound.error_code == "30003"
    assert report("delivered").status_code == 200  # a failure is final
    outbound.refresh_from_db()
    assert outbound.status == "undelivered"


def test_statuses_of_messages_we_did_not_send_change_nothing(owner, outbound, report):
    assert report("delivered", sid="SM-someone-else").status_code == 200
    assert report("delivered", sid="SM-in-1").status_code == 200  # an inbound message has no delivery status
    assert not Event.objects.for_org(owner.organization).filter(type="message.status_changed").exists()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"MessageStatus": "delivered", "From": PRACTICE_NUMBER}, "MessageSid"),
        ({"MessageSid": "SM1", "From": PRACTICE_NUMBER}, "MessageStatus"),
        ({"MessageSid": "SM1", "MessageStatus": "teleported", "From": PRACTICE_NUMBER}, "MessageStatus"),
    ],
)
def test_malformed_status_callbacks_name_the_field(client, connection, params, field):
    response = status_post(client, connection, params)
    assert response.status_code == 400 and field in response.json()["details"]["fields"]


def test_a_wrong_signature_is_refused(client, connection, outbound):
    params = {"MessageSid": "SM-out-1", "MessageStatus": "delivered", "From": PRACTICE_NUMBER}
    response = status_post(client, connection, params, signature="bm9wZQ==")
    assert response.status_code == 401 and response.json()["code"] == "CALLBACK_SIGNATURE_INVALID"
    outbound.refresh_from_db()
    assert outbound.status == "queued"


def test_a_text_to_another_number_of_the_account_is_parked_for_the_practice(owner, api, inbound):
    response = inbound({"MessageSid": "SM-elsewhere", "From": PATIENT, "To": "+390200000001", "Body": "Salve"})
    assert response.status_code == 200
    assert api.get("/conversations").json()["items"] == []
    parked = ParkedCallback.objects.get()
    assert parked.organization_id == owner.organization.id and parked.receiving_address == "+390200000001"
    assert api.get("/ingest-review").json()["items"][0]["items"][0]["body"] == "Salve"


def test_an_inbound_message_reaches_the_live_updates_socket(owner, inbound, monkeypatch):
    """The practice's /today/ws receives message.received (ids only) once the processing commits."""
    import channels.db

    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)  # keep the test's transaction
    cookie = owner.session_client().cookies[settings.SESSION_COOKIE_NAME].value
    headers = [
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]

    async def scenario():
        from channels.db import database_sync_to_async

        socket = WebsocketCommunicator(application, "/today/ws", headers=headers)
        connected, _ = await socket.connect()
        assert connected
        await database_sync_to_async(inbound)(
            {"MessageSid": "SM-live", "From": PATIENT, "To": PRACTICE_NUMBER, "Body": "Dato personale"}
        )
        frames = []
        while True:
            frame = await socket.receive_json_from(timeout=10)
            frames.append(frame)
            if frame["type"] == "message.received":
                break
        await socket.disconnect()
        return frames

    frames = async_to_sync(scenario)()
    received = frames[-1]
    assert received["data"]["channel"] == "sms" and received["data"]["direction"] == "inbound"
    assert {"conversation.created", "message.received"} <= {frame["type"] for frame in frames}
    assert all("Dato personale" not in json.dumps(frame) for frame in frames)


@pytest.mark.parametrize("status", ["receiving", "received", "partially_delivered"])
def test_statuses_about_receiving_are_acknowledged_and_ignored(owner, outbound, report, status):
    assert report(status).status_code == 200
    outbound.refresh_from_db()
    assert outbound.status == "queued"
    assert not InboundDelivery.objects.for_org(owner.organization).exists()


def test_analysts_live_socket_does_not_carry_conversation_events(owner, member_factory, inbound, monkeypatch):
    """The same inbound message that reaches the owner's /today/ws is not sent to an analyst (counts only)."""
    import channels.db

    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)
    analyst = member_factory(role="analyst", organization=owner.organization)
    cookie = analyst.session_client().cookies[settings.SESSION_COOKIE_NAME].value
    headers = [
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]

    async def scenario():
        from channels.db import database_sync_to_async

        socket = WebsocketCommunicator(application, "/today/ws", headers=headers)
        connected, _ = await socket.connect()
        assert connected  # analysts may connect (they read other events)
        await database_sync_to_async(inbound)(
            {"MessageSid": "SM-analyst", "From": PATIENT, "To": PRACTICE_NUMBER, "Body": "Ciao"}
        )
        types = []
        while not await socket.receive_nothing(timeout=1):
            types.append((await socket.receive_json_from())["type"])
        await socket.disconnect()
        return types

    types = async_to_sync(scenario)()
    assert "patient.created" in types  # the enquiry: analysts read patients
    assert not [t for t in types if t.startswith(("conversation.", "message."))]
