"""GET and POST /webhooks/messaging-app: the messaging platform (WhatsApp Business Cloud API). The GET handshake
echoes hub.challenge for the platform's verify token; each POST is signed X-Hub-Signature-256 over the body as
received, may carry messages and statuses of several phone number ids (each routed by metadata.phone_number_id, the
unconnected ones parked), claims a wamid receipt per message, and is processed by the Celery drain into the
patient's conversation (or an enquiry's). Statuses move our messages forward only."""

import json
import time

import pytest
from django.test import Client
from django.utils import timezone
from django_redis import get_redis_connection

from apps.conversations.models import (
    ChannelConnection,
    ContactBlock,
    Conversation,
    InboundDelivery,
    Kind,
    Message,
    MessageAttachment,
    ParkedCallback,
    ProviderReceipt,
)
from apps.events.models import Event
from apps.patients.models import Patient
from tests.conversations.conftest import MESSAGING_APP_SECRET, connect, hub_signature
from tests.factories import PatientFactory
from tests.helpers import assert_error

URL = "/webhooks/messaging-app"
PHONE_NUMBER_ID = "106540352242922"
OTHER_NUMBER_ID = "209876543210987"  # a number of the platform's account that no practice here connected
VERIFY_TOKEN = "test-verify-token"  # config.settings.test
PATIENT_WA_ID = "393331234567"  # WhatsApp's wa_id: the number without its +


# --- the Cloud API's payload, as Meta posts it -------------------------------------------------------------------


def text(n: int = 1, *, sender: str = PATIENT_WA_ID, body: str = "Buongiorno, posso spostare la visita?") -> dict:
    return {
        "from": sender,
        "id": f"wamid.HBgMMzkzMzMxMjM0NTY3FQIAEhgg{n:012d}",
        "timestamp": str(int(time.time())),
        "text": {"body": body},
        "type": "text",
    }


def image(n: int = 1, *, sender: str = PATIENT_WA_ID, media_id: str = "1234567890123456", caption: str = "") -> dict:
    part = {"mime_type": "image/jpeg", "sha256": "Ym9ndXMtc2hhMjU2", "id": media_id}
    if caption:
        part["caption"] = caption
    return {
        "from": sender,
        "id": f"wamid.IMAGE{n:012d}",
        "timestamp": str(int(time.time())),
        "type": "image",
        "image": part,
    }


def status(wamid: str, state: str, *, recipient: str = PATIENT_WA_ID, errors: list | None = None) -> dict:
    item = {
        "id": wamid,
        "status": state,
        "timestamp": str(int(time.time())),
        "recipient_id": recipient,
        "conversation": {"id": "CONVERSATION_ID", "origin": {"type": "service"}},
        "pricing": {"billable": True, "pricing_model": "CBP", "category": "service"},
    }
    if errors:
        item["errors"] = errors
    return item


def change(*, number_id: str = PHONE_NUMBER_ID, messages=(), statuses=()) -> dict:
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "390212345678", "phone_number_id": number_id},
    }
    if messages:
        value["contacts"] = [{"profile": {"name": "Maria Rossi"}, "wa_id": m.get("from", "")} for m in messages]
        value["messages"] = list(messages)
    if statuses:
        value["statuses"] = list(statuses)
    return {"value": value, "field": "messages"}


def notification(*changes: dict) -> dict:
    return {"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": list(changes)}]}


def webhook(*, messages=(), statuses=(), number_id: str = PHONE_NUMBER_ID) -> dict:
    return notification(change(number_id=number_id, messages=messages, statuses=statuses))


def post(client, payload=None, *, raw: bytes | None = None, signature: str | None = None, **options):
    raw = json.dumps(payload).encode() if raw is None else raw
    headers = {} if signature == "" else {"X-Hub-Signature-256": signature or hub_signature(raw)}
    return client.post(URL, raw, content_type=options.get("content_type", "application/json"), headers=headers)


@pytest.fixture
def connection(api):
    return connect(api, "messaging_app", PHONE_NUMBER_ID, {"accessToken": "EAAG-test"})


@pytest.fixture
def deliver(client, connection, django_capture_on_commit_callbacks):
    """Post a signed body and run what the commit publishes (the drain, eager in tests)."""

    def send(payload=None, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return post(client, payload, **kwargs)

    return send


def nothing_stored(organization) -> bool:
    return not (
        InboundDelivery.objects.for_org(organization).exists()
        or Message.objects.for_org(organization).exists()
        or ProviderReceipt.objects.for_org(organization).exists()
        or ParkedCallback.objects.exists()
    )


# --- the subscription handshake ------------------------------------------------------------------------------------


def handshake(client, **params):
    query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444", **params}
    return client.get(URL, {name: value for name, value in query.items() if value is not None})


def test_the_handshake_echoes_the_challenge_as_plain_text(client):
    response = handshake(client)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    assert response.content == b"1158201444"


def test_a_challenge_of_256_characters_is_echoed_one_more_is_400(client):
    assert handshake(client, **{"hub.challenge": "7" * 256}).content == b"7" * 256
    body = assert_error(handshake(client, **{"hub.challenge": "7" * 257}), 400, "VALIDATION_ERROR")
    assert "hub.challenge" in body["details"]["fields"]


@pytest.mark.parametrize(
    "params",
    [
        {"hub.verify_token": "not-the-platforms-token"},
        {"hub.verify_token": VERIFY_TOKEN + "x"},
        {"hub.verify_token": VERIFY_TOKEN.upper()},
        {"hub.mode": "unsubscribe"},
    ],
)
def test_a_wrong_verify_token_or_mode_is_refused(client, params):
    response = handshake(client, **params)
    body = assert_error(response, 403, "HANDSHAKE_REFUSED")
    assert b"1158201444" not in response.content
    assert VERIFY_TOKEN not in json.dumps(body)


@pytest.mark.parametrize("name", ["hub.mode", "hub.verify_token", "hub.challenge"])
@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_parameter_is_400_naming_it(client, name, value):
    body = assert_error(handshake(client, **{name: value}), 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == [name]


# --- inbound messages ----------------------------------------------------------------------------------------------


def test_a_patient_writes_and_the_message_lands_in_their_conversation(owner, api, connection, deliver):
    patient = PatientFactory(organization=owner.organization, phone_mobile="+39 333 123 4567", first_name="Maria")
    response = deliver(webhook(messages=[text(1)]))
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    # The drain let go of its flag: the next callback is processed at once, not left for the sweep.
    assert not get_redis_connection("default").exists(f"svc:conversations:drain:{connection['id']}")

    conversations = api.get("/conversations").json()["items"]
    assert len(conversations) == 1
    conversation = conversations[0]
    assert conversation["patient"]["id"] == str(patient.id) and conversation["channel"] == "messaging_app"
    assert conversation["connectionId"] == connection["id"]
    assert conversation["contactAddress"] == "+393331234567"
    assert conversation["status"] == "open" and conversation["unread"] is True
    messages = api.get(f"/conversations/{conversation['id']}/messages").json()["items"]
    assert [(m["direction"], m["channel"], m["body"], m["status"], m["attachments"]) for m in messages] == [
        ("inbound", "messaging_app", "Buongiorno, posso spostare la visita?", "received", [])
    ]
    assert api.get(f"/conversations/{conversation['id']}").json()["id"] == conversation["id"]
    assert not InboundDelivery.objects.for_org(owner.organization).exists()  # not kept past processing
    assert api.get(f"/settings/channel-connections/{connection['id']}").json()["status"] == "active"

    events = Event.objects.for_org(owner.organization).filter(type__in=["conversation.created", "message.received"])
    assert sorted(events.values_list("type", flat=True)) == ["conversation.created", "message.received"]
    assert all("spostare" not in json.dumps(event.data) for event in events)  # bodies never in events

    second = deliver(webhook(messages=[text(2, body="Grazie")]))
    assert second.json() == {"stored": 1, "duplicates": 0, "parked": False}
    assert [m["body"] for m in api.get(f"/conversations/{conversation['id']}/messages").json()["items"]] == [
        "Grazie",
        "Buongiorno, posso spostare la visita?",
    ]
    assert len(api.get("/conversations").json()["items"]) == 1


def test_an_unknown_number_becomes_an_enquiry(owner, api, connection, deliver):
    assert deliver(webhook(messages=[text(1, sender="393470000001")])).status_code == 200
    patient = Patient.objects.for_org(owner.organization).get()
    assert patient.status == "enquiry" and patient.phone_mobile == "+393470000001"
    conversation = api.get("/conversations").json()["items"][0]
    assert conversation["patient"]["id"] == str(patient.id) and conversation["contactAddress"] == "+393470000001"


def test_one_body_with_several_messages_stores_each(owner, api, connection, deliver):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    response = deliver(webhook(messages=[text(1, body="Uno"), text(2, body="Due"), text(3, sender="393470000002")]))
    assert response.json() == {"stored": 3, "duplicates": 0, "parked": False}
    assert Message.objects.for_org(owner.organization).count() == 3
    assert Conversation.objects.for_org(owner.organization).count() == 2


def test_a_retried_body_is_acknowledged_and_stored_once(owner, api, connection, deliver):
    payload = webhook(messages=[text(7)])
    first, again = deliver(payload), deliver(payload)
    assert first.status_code == again.status_code == 200
    assert again.json() == {"stored": 0, "duplicates": 1, "parked": False}
    assert Message.objects.for_org(owner.organization).count() == 1
    assert ProviderReceipt.objects.for_org(owner.organization).count() == 1

    # The same wamid inside a new body (another timestamp, another message beside it): still stored once.
    retried = {**text(7), "timestamp": str(int(time.time()) + 5)}
    third = deliver(webhook(messages=[retried, text(8, body="Nuovo")]))
    assert third.json() == {"stored": 1, "duplicates": 1, "parked": False}
    assert Message.objects.for_org(owner.organization).count() == 2


def test_an_image_message_creates_a_message_with_its_attachment(owner, api, connection, deliver):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    response = deliver(webhook(messages=[image(1, media_id="987654321012345", caption="La radiografia")]))
    assert response.status_code == 200, response.content

    message = Message.objects.for_org(owner.organization).get()
    assert message.body == "La radiografia" and message.provider_message_id == "wamid.IMAGE000000000001"
    attachment = MessageAttachment.objects.for_org(owner.organization).get()
    assert attachment.message_id == message.id and attachment.position == 0
    assert attachment.content_type == "image/jpeg"
    assert attachment.provider_media_id == "987654321012345" and attachment.provider_url == ""

    listed = api.get(f"/conversations/{message.conversation_id}/messages").json()["items"]
    assert [(a["id"], a["contentType"]) for a in listed[0]["attachments"]] == [(str(attachment.id), "image/jpeg")]
    received = Event.objects.for_org(owner.organization).get(type="message.received")
    assert received.data["mediaCount"] == 1


def test_an_interactive_button_reply_lands_with_the_chosen_title(owner, connection, deliver):
    reply = {
        "context": {"from": "390212345678", "id": "wamid.ASKED"},
        "from": PATIENT_WA_ID,
        "id": "wamid.REPLY1",
        "timestamp": str(int(time.time())),
        "type": "interactive",
        "interactive": {"type": "button_reply", "button_reply": {"id": "confirm", "title": "Confermo"}},
    }
    quick_reply = {
        "from": PATIENT_WA_ID,
        "id": "wamid.REPLY2",
        "timestamp": str(int(time.time())),
        "type": "button",
        "button": {"payload": "CONFIRM", "text": "Sì, confermo"},
    }
    deliver(webhook(messages=[reply, quick_reply]))
    bodies = dict(Message.objects.for_org(owner.organization).values_list("provider_message_id", "body"))
    assert bodies == {"wamid.REPLY1": "Confermo", "wamid.REPLY2": "Sì, confermo"}


def test_stop_blocks_the_contact_on_the_messaging_app_and_withdraws_whatsapp_consent(owner, api, connection, deliver):
    patient = PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    deliver(webhook(messages=[text(1, body="Ciao")]))
    deliver(webhook(messages=[text(2, body="STOP")]))
    block = ContactBlock.objects.for_org(owner.organization).get()
    assert (block.channel, block.address, block.blocked) == ("messaging_app", "+393331234567", True)
    consent = api.get(f"/patients/{patient.id}/marketing-consent").json()
    assert consent["whatsappOptOut"] is True and consent["smsOptOut"] is False
    assert [(c["channel"], c["status"]) for c in consent["current"]] == [("whatsapp", "withdrawn")]


def test_without_an_app_secret_the_callback_is_503_for_a_retry(owner, client, connection, settings):
    settings.SVC_MESSAGING_APP_SECRET = ""
    response = post(client, webhook(messages=[text(1)]), signature=hub_signature(b"anything", ""))
    assert_error(response, 503, "CALLBACK_NOT_STORED")
    assert response["Retry-After"]
    assert nothing_stored(owner.organization)


# --- refusals -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sign",
    [
        pytest.param(lambda raw: "", id="missing"),
        pytest.param(lambda raw: hub_signature(raw, "another-apps-secret"), id="another-secret"),
        pytest.param(lambda raw: hub_signature(raw + b" "), id="other-bytes"),
        pytest.param(lambda raw: hub_signature(raw).removeprefix("sha256="), id="no-prefix"),
        pytest.param(lambda raw: "sha1=" + hub_signature(raw).removeprefix("sha256="), id="wrong-algorithm"),
        pytest.param(lambda raw: "sha256=", id="empty-digest"),
        pytest.param(lambda raw: "sha256=" + "0" * 64, id="zeros"),
    ],
)
def test_a_bad_or_missing_signature_is_401_and_stores_nothing(owner, client, connection, sign):
    raw = json.dumps(webhook(messages=[text(1)])).encode()
    response = post(client, raw=raw, signature=sign(raw) or "")
    body = assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
    assert MESSAGING_APP_SECRET not in json.dumps(body)
    assert nothing_stored(owner.organization)
    assert ChannelConnection.objects.for_org(owner.organization).get().status == "pending"


def test_a_body_changed_after_signing_is_401(owner, client, connection):
    raw = json.dumps(webhook(messages=[text(1)])).encode()
    tampered = raw.replace(b"posso spostare", b"voglio annullare")
    assert_error(post(client, raw=tampered, signature=hub_signature(raw)), 401, "CALLBACK_SIGNATURE_INVALID")
    assert nothing_stored(owner.organization)


def padded_to(size: int) -> bytes:
    """A signed-able body of exactly `size` bytes: a real notification with an extra top-level field."""
    base = json.dumps({**webhook(messages=[text(1)]), "padding": ""}).encode()
    return base.replace(b'"padding": ""', b'"padding": "' + b"x" * (size - len(base)) + b'"')


def test_a_body_of_exactly_1_mib_is_received_one_byte_more_is_413(owner, client, connection, deliver):
    over = padded_to(1024 * 1024 + 1)
    assert len(over) == 1024 * 1024 + 1
    assert_error(post(client, raw=over), 413, "PAYLOAD_TOO_LARGE")
    assert nothing_stored(owner.organization)

    at_cap = padded_to(1024 * 1024)
    assert len(at_cap) == 1024 * 1024
    assert deliver(raw=at_cap).status_code == 200
    assert Message.objects.for_org(owner.organization).count() == 1


def test_a_body_over_the_cap_is_413_even_unsigned(owner, client, connection):
    response = client.post(URL, b"{" + b" " * (1024 * 1024 + 10) + b"}", content_type="application/json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert nothing_stored(owner.organization)


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain", "application/xml"])
def test_a_body_that_is_not_json_is_415(owner, client, connection, content_type):
    raw = json.dumps(webhook(messages=[text(1)])).encode()
    assert_error(post(client, raw=raw, content_type=content_type), 415, "UNSUPPORTED_MEDIA_TYPE")
    assert nothing_stored(owner.organization)


def test_json_with_a_charset_is_json(owner, connection, deliver):
    response = deliver(
        raw=json.dumps(webhook(messages=[text(1)])).encode(), content_type="application/json; charset=utf-8"
    )
    assert response.status_code == 200, response.content
    assert Message.objects.for_org(owner.organization).count() == 1


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(b"{not json", "body", id="not-json"),
        pytest.param(b"\xff\xfe{}", "body", id="not-utf8"),
        pytest.param(b"[]", "body", id="a-list"),
        pytest.param(json.dumps({**webhook(), "object": "page"}).encode(), "object", id="wrong-object"),
        pytest.param(json.dumps({"entry": []}).encode(), "object", id="no-object"),
        pytest.param(
            json.dumps({"object": "whatsapp_business_account", "entry": {}}).encode(), "entry", id="entry-not-a-list"
        ),
        pytest.param(
            json.dumps(notification({"field": "messages", "value": {"metadata": {}, "messages": [text(1)]}})).encode(),
            "metadata.phone_number_id",
            id="no-phone-number-id",
        ),
        pytest.param(
            json.dumps(webhook(messages=[{k: v for k, v in text(1).items() if k != "id"}])).encode(),
            "messages.id",
            id="message-without-id",
        ),
        pytest.param(
            json.dumps(webhook(messages=[{k: v for k, v in text(1).items() if k != "from"}])).encode(),
            "messages.from",
            id="message-without-sender",
        ),
        pytest.param(
            json.dumps(webhook(messages=[text(n) for n in range(101)])).encode(), "entry", id="over-100-items"
        ),
        pytest.param(
            json.dumps(
                notification({"field": "messages", "value": {"metadata": PHONE_NUMBER_ID, "messages": [text(1)]}})
            ).encode(),
            "metadata",
            id="metadata-not-an-object",
        ),
        pytest.param(
            json.dumps(webhook(messages=[{**text(1), "text": "Buongiorno"}])).encode(),
            "text",
            id="text-not-an-object",
        ),
        pytest.param(
            json.dumps(webhook(messages=[{**image(1), "image": "1234567890123456"}])).encode(),
            "image",
            id="media-not-an-object",
        ),
        pytest.param(
            json.dumps(webhook(statuses=[status("wamid.OUT1", "failed", errors=["131026"])])).encode(),
            "statuses.errors",
            id="errors-not-objects",
        ),
    ],
)
def test_a_signed_body_that_is_not_the_platforms_is_400_naming_the_field(owner, connection, raw, field):
    client = Client(raise_request_exception=False)  # a crash must show as the 500 it is, not as the test's error
    body = assert_error(post(client, raw=raw), 400, "VALIDATION_ERROR")
    assert any(name == field or name.startswith(field + ".") for name in body["details"]["fields"]), body
    assert nothing_stored(owner.organization)


def test_account_updates_and_empty_notifications_are_acknowledged_without_effect(owner, connection, deliver):
    account_update = notification(
        {"field": "account_update", "value": {"phone_number": "390212345678", "event": "VERIFIED_ACCOUNT"}}
    )
    assert deliver(account_update).json() == {"stored": 0, "duplicates": 0, "parked": False}
    assert deliver(webhook()).json() == {"stored": 0, "duplicates": 0, "parked": False}
    assert nothing_stored(owner.organization)


# --- routing by phone number id: the unconnected ones are parked -----------------------------------------------------


def test_a_body_for_a_connected_and_an_unconnected_number_stores_one_and_parks_the_other(
    owner, api, connection, deliver
):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    payload = notification(
        change(messages=[text(1, body="Per lo studio collegato")]),
        change(number_id=OTHER_NUMBER_ID, messages=[text(2, sender="393470000003", body="Per un altro numero")]),
    )
    response = deliver(payload)
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": True}

    assert [m.body for m in Message.objects.for_org(owner.organization)] == ["Per lo studio collegato"]
    parked = ParkedCallback.objects.get()
    assert parked.organization is None  # no route token named a practice: an operator reviews it
    assert parked.kind == Kind.MESSAGING_APP and parked.receiving_address == OTHER_NUMBER_ID
    assert parked.state == "parked" and parked.reason == "address_not_connected"
    assert [(item["provider_message_id"], item["recipient"]) for item in parked.items] == [
        ("wamid.HBgMMzkzMzMxMjM0NTY3FQIAEhgg000000000002", OTHER_NUMBER_ID)
    ]
    # Nobody's enquiry was opened for the unconnected number's sender, and nothing shows in the practice's queue.
    assert not Patient.objects.for_org(owner.organization).filter(phone_mobile="+393470000003").exists()
    assert api.get("/ingest-review").json()["items"] == []


def test_a_body_only_for_an_unconnected_number_is_parked_and_acknowledged(owner, connection, deliver):
    response = deliver(webhook(number_id=OTHER_NUMBER_ID, messages=[text(1)], statuses=[status("wamid.X", "read")]))
    assert response.status_code == 200
    assert response.json() == {"stored": 0, "duplicates": 0, "parked": True}
    parked = ParkedCallback.objects.get()
    assert parked.organization is None and parked.receiving_address == OTHER_NUMBER_ID
    assert sorted(item["type"] for item in parked.items) == ["message", "status"]
    assert not InboundDelivery.objects.for_org(owner.organization).exists()


def test_items_for_two_unconnected_numbers_are_parked_each_under_its_own_number(owner, connection, deliver):
    """Each parked row is reviewed and replayed as a whole into one connection: items for two different numbers
    must not share a row (nor be labelled with only the first number's id)."""
    third = "301234567890123"
    payload = notification(
        change(number_id=OTHER_NUMBER_ID, messages=[text(1, body="Al secondo numero")]),
        change(number_id=third, messages=[text(2, body="Al terzo numero")]),
    )
    assert deliver(payload).json() == {"stored": 0, "duplicates": 0, "parked": True}
    parked = {row.receiving_address: row for row in ParkedCallback.objects.all()}
    assert sorted(parked) == sorted([OTHER_NUMBER_ID, third])
    for address, row in parked.items():
        assert row.organization is None
        assert {item["recipient"] for item in row.items} == {address}


def test_a_disconnected_number_no_longer_receives(owner, api, connection, deliver):
    api.delete(f"/settings/channel-connections/{connection['id']}")
    assert deliver(webhook(messages=[text(1)])).json() == {"stored": 0, "duplicates": 0, "parked": True}
    assert not Message.objects.for_org(owner.organization).exists()
    assert ParkedCallback.objects.get().receiving_address == PHONE_NUMBER_ID


# --- statuses of the messages we sent ---------------------------------------------------------------------------------


def outbound(organization, conversation_id, wamid: str = "wamid.OUT1", state: str = "sent") -> Message:
    return Message.objects.for_org(organization).create(
        organization=organization,
        conversation_id=conversation_id,
        direction="outbound",
        channel="messaging_app",
        status=state,
        body="Le confermiamo l'appuntamento di domani",
        provider_message_id=wamid,
        occurred_at=timezone.now(),
    )


def test_statuses_move_our_message_forward_only_and_emit_one_event(owner, connection, deliver):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    deliver(webhook(messages=[text(1)]))
    conversation = Conversation.objects.for_org(owner.organization).get()
    message = outbound(owner.organization, conversation.id)

    response = deliver(webhook(statuses=[status("wamid.OUT1", "delivered")]))
    assert response.status_code == 200
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    message.refresh_from_db()
    assert message.status == "delivered" and message.status_changed_at is not None

    deliver(webhook(statuses=[status("wamid.OUT1", "sent")]))  # late: delivered stays
    deliver(webhook(statuses=[status("wamid.OUT1", "failed", errors=[{"code": 131047, "title": "Re-engagement"}])]))
    message.refresh_from_db()
    assert message.status == "delivered" and message.error_code == ""

    changes = Event.objects.for_org(owner.organization).filter(
        type="message.status_changed", subject_id=str(message.id)
    )
    assert changes.count() == 1
    data = changes.get().data
    assert data["status"] == "delivered" and data["previousStatus"] == "sent"
    assert data["conversationId"] == str(conversation.id) and data["channel"] == "messaging_app"
    assert "body" not in data and "appuntamento" not in json.dumps(data)

    deliver(webhook(statuses=[status("wamid.OUT1", "read")]))
    message.refresh_from_db()
    assert message.status == "read"
    assert changes.count() == 2
    assert not InboundDelivery.objects.for_org(owner.organization).exists()


def test_a_failure_before_delivery_records_the_error_code(owner, connection, deliver):
    deliver(webhook(messages=[text(1)]))
    conversation = Conversation.objects.for_org(owner.organization).get()
    message = outbound(owner.organization, conversation.id, "wamid.OUT2")
    deliver(webhook(statuses=[status("wamid.OUT2", "failed", errors=[{"code": 131026, "title": "Undeliverable"}])]))
    message.refresh_from_db()
    assert message.status == "failed" and message.error_code == "131026"
    deliver(webhook(statuses=[status("wamid.OUT2", "delivered")]))  # a failure is final
    message.refresh_from_db()
    assert message.status == "failed"


def test_a_status_of_a_message_we_did_not_send_changes_nothing(owner, connection, deliver):
    deliver(webhook(messages=[text(1)]))
    conversation = Conversation.objects.for_org(owner.organization).get()
    ours = outbound(owner.organization, conversation.id, "wamid.OUT3")
    response = deliver(webhook(statuses=[status("wamid.SENT-FROM-ELSEWHERE", "delivered")]))
    assert response.status_code == 200
    ours.refresh_from_db()
    assert ours.status == "sent"
    assert not Event.objects.for_org(owner.organization).filter(type="message.status_changed").exists()
    # The inbound message itself is never moved by a status naming its wamid.
    deliver(webhook(statuses=[status(text(1)["id"], "read")]))
    assert Message.objects.for_org(owner.organization).get(direction="inbound").status == "received"


def test_a_status_for_another_practices_number_never_touches_our_message(owner, outsider, connection, deliver):
    theirs = connect(outsider.api_client(), "messaging_app", OTHER_NUMBER_ID, {"accessToken": "EAAG-other"})
    deliver(webhook(messages=[text(1)]))
    conversation = Conversation.objects.for_org(owner.organization).get()
    ours = outbound(owner.organization, conversation.id, "wamid.SHARED")
    deliver(webhook(number_id=theirs["address"], statuses=[status("wamid.SHARED", "delivered")]))
    ours.refresh_from_db()
    assert ours.status == "sent"


# --- tenancy --------------------------------------------------------------------------------------------------------


def test_another_practice_never_sees_the_conversation(owner, api, outsider, connection, deliver):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    deliver(webhook(messages=[text(1)]))
    conversation = api.get("/conversations").json()["items"][0]
    theirs = outsider.api_client()
    assert theirs.get("/conversations").json()["items"] == []
    for path in ("", "/messages"):
        assert_error(theirs.get(f"/conversations/{conversation['id']}{path}"), 404, "NOT_FOUND")
    assert theirs.get("/conversations/unread-counts").json() == {"total": 0, "byChannel": {}}
    assert not Patient.objects.for_org(outsider.organization).exists()


def test_each_number_routes_to_its_own_practice(owner, api, outsider, connection, deliver):
    connect(outsider.api_client(), "messaging_app", OTHER_NUMBER_ID, {"accessToken": "EAAG-other"})
    payload = notification(
        change(messages=[text(1, body="Allo studio A")]),
        change(number_id=OTHER_NUMBER_ID, messages=[text(2, body="Allo studio B")]),
    )
    assert deliver(payload).json() == {"stored": 2, "duplicates": 0, "parked": False}
    assert [m.body for m in Message.objects.for_org(owner.organization)] == ["Allo studio A"]
    assert [m.body for m in Message.objects.for_org(outsider.organization)] == ["Allo studio B"]
    assert not ParkedCallback.objects.exists()
    theirs = outsider.api_client().get("/conversations").json()["items"]
    assert len(theirs) == 1 and theirs[0]["id"] != api.get("/conversations").json()["items"][0]["id"]


def test_a_status_that_is_not_about_delivery_is_skipped_and_the_rest_of_the_body_kept(owner, connection, deliver):
    """Statuses such as deleted or warning (or one the platform adds later) say nothing about our messages."""
    body = webhook(messages=[text(1)], statuses=[status("wamid.OUT1", "deleted"), status("wamid.OUT2", "exploded")])
    response = deliver(raw=json.dumps(body).encode())
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    assert Message.objects.for_org(owner.organization).count() == 1


# --- the business account and its template review decisions -------------------------------------------------------


def template_update(event: str, *, account_id="102290129340398", name="appointment_reminder", reason="NONE") -> dict:
    value = {
        "event": event,
        "message_template_id": 594425479261596,
        "message_template_name": name,
        "message_template_language": "it",
        "reason": reason,
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": account_id,
                "time": 1700000000,
                "changes": [{"value": value, "field": "message_template_status_update"}],
            }
        ],
    }


def test_the_business_account_is_learnt_from_signed_callbacks_and_routes_template_decisions(
    owner, outsider, connection, deliver, client
):
    from apps.conversations import services

    decisions = []

    def listener(**decision):
        decisions.append(decision)

    services.on_template_status(listener)
    try:
        # Before any callback says which account the number is in, a decision reaches no practice.
        assert post(client, template_update("APPROVED")).status_code == 200
        assert decisions == []
        assert deliver(webhook(messages=[text(1)])).status_code == 200
        assert ChannelConnection.objects.for_org(owner.organization).get().business_account_id == "102290129340398"

        assert post(client, template_update("REJECTED", reason="INVALID_FORMAT")).status_code == 200
        assert post(client, template_update("FLAGGED")).status_code == 200  # a quality warning: nothing changes
        assert post(client, template_update("APPROVED", account_id="999")).status_code == 200  # not an account here
        assert decisions == [
            {
                "organization_id": owner.organization.id,
                "name": "appointment_reminder",
                "language": "it",
                "status": "rejected",
                "reason": "INVALID_FORMAT",
            }
        ]
        unsigned = post(client, template_update("APPROVED"), signature="sha256=" + "0" * 64)
        assert unsigned.status_code == 401 and len(decisions) == 1
    finally:
        services._template_status_listeners.remove(listener)
