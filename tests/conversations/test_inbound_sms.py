"""POST /webhooks/sms/{token}: Twilio's signature scheme over the callback as received, the receipt claimed first
(duplicates acknowledged, stored once), the raw callback stored before the 200 and processed by the Celery task
into the patient's conversation (or an enquiry's), STOP/START keywords with the 25-patient overflow, every refusal,
tenancy, erasure and merge."""

import json

import pytest

from apps.conversations.models import (
    ChannelConnection,
    ContactBlock,
    Conversation,
    InboundDelivery,
    Message,
    ParkedCallback,
)
from apps.conversations.tasks import sweep_deliveries
from apps.events.models import Event
from apps.patients import services as patient_services
from apps.patients.models import MarketingConsent, Patient
from tests.conversations.conftest import AUTH_TOKEN, PRACTICE_NUMBER, deliver, twilio_signature
from tests.factories import PatientFactory


def sms(n: int = 1, *, sender: str = "+393331234567", text: str = "Vorrei spostare l'appuntamento", **extra) -> dict:
    return {
        "MessageSid": f"SM{n:032d}",
        "AccountSid": "AC" + "0" * 32,
        "From": sender,
        "To": PRACTICE_NUMBER,
        "Body": text,
        "NumMedia": "0",
        **extra,
    }


def test_a_patient_texts_and_the_message_lands_in_their_conversation(owner, api, connection, inbound):
    patient = PatientFactory(organization=owner.organization, phone_mobile="+39 333 123 4567", first_name="Ada")
    response = inbound(sms(1))
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/xml") and b"<Response></Response>" in response.content

    conversations = api.get("/conversations").json()["items"]
    assert len(conversations) == 1
    conversation = conversations[0]
    assert conversation["patient"]["id"] == str(patient.id) and conversation["channel"] == "sms"
    assert conversation["status"] == "open" and conversation["unread"] is True
    assert conversation["contactAddress"] == "+393331234567"
    messages = api.get(f"/conversations/{conversation['id']}/messages").json()["items"]
    assert [(m["direction"], m["body"], m["status"]) for m in messages] == [
        ("inbound", "Vorrei spostare l'appuntamento", "received")
    ]
    assert not InboundDelivery.objects.for_org(owner.organization).exists()  # raw bytes not kept past processing
    assert api.get(f"/settings/channel-connections/{connection['id']}").json()["status"] == "active"

    events = Event.objects.for_org(owner.organization).filter(type__in=["conversation.created", "message.received"])
    assert sorted(events.values_list("type", flat=True)) == ["conversation.created", "message.received"]
    assert all("appuntamento" not in json.dumps(e.data) for e in events)  # bodies never in events

    timeline = api.get(f"/patients/{patient.id}/timeline").json()["items"]
    received = [entry for entry in timeline if entry["kind"] == "message"]
    assert len(received) == 1 and received[0]["data"]["conversationId"] == conversation["id"]
    assert "appuntamento" not in json.dumps(received)  # the body stays in the inbox

    inbound(sms(2, text="Grazie"))
    assert len(api.get(f"/conversations/{conversation['id']}/messages").json()["items"]) == 2
    assert len(api.get("/conversations").json()["items"]) == 1


def test_an_unknown_number_becomes_an_enquiry(owner, api, inbound):
    assert inbound(sms(1, sender="+393470000001")).status_code == 200
    patient = Patient.objects.for_org(owner.organization).get()
    assert patient.status == "enquiry" and patient.phone_mobile == "+393470000001"
    assert api.get("/conversations").json()["items"][0]["patient"]["id"] == str(patient.id)


def test_a_retried_callback_is_acknowledged_and_stored_once(owner, api, inbound):
    first = inbound(sms(7))
    again = inbound(sms(7))
    assert first.status_code == again.status_code == 200
    assert Message.objects.for_org(owner.organization).count() == 1


@pytest.mark.parametrize(
    ("mutate", "status", "code"),
    [
        (lambda p, h: (p, {"signature": "bm9wZQ=="}), 401, "CALLBACK_SIGNATURE_INVALID"),
        (lambda p, h: (p, {"signature": ""}), 401, "CALLBACK_SIGNATURE_INVALID"),
        (lambda p, h: ({**p, "Body": "changed after signing"}, {"signature": h}), 401, "CALLBACK_SIGNATURE_INVALID"),
        (lambda p, h: (p, {"token": "not-a-connection"}), 404, "NOT_FOUND"),
        (
            lambda p, h: ({k: v for k, v in p.items() if k != "MessageSid"}, {}),
            400,
            "VALIDATION_ERROR",
        ),
        (lambda p, h: ({**p, "NumMedia": "many"}, {}), 400, "VALIDATION_ERROR"),
    ],
)
def test_refusals_store_nothing(owner, client, connection, mutate, status, code):
    params = sms(1)
    signed = twilio_signature(AUTH_TOKEN, f"http://testserver/webhooks/sms/{connection['routingToken']}", params)
    params, options = mutate(params, signed)
    response = deliver(client, connection, params, **options)
    assert response.status_code == status, response.content
    assert response.json()["code"] == code
    assert not InboundDelivery.objects.for_org(owner.organization).exists()
    assert not Message.objects.for_org(owner.organization).exists()


def test_oversized_and_non_form_bodies_are_refused_before_parsing(owner, client, connection):
    path = f"/webhooks/sms/{connection['routingToken']}"
    big = client.post(path, "Body=" + "x" * (64 * 1024), content_type="application/x-www-form-urlencoded")
    assert big.status_code == 413
    as_json = client.post(path, json.dumps(sms(1)), content_type="application/json")
    assert as_json.status_code == 415
    assert not InboundDelivery.objects.for_org(owner.organization).exists()


def test_credentials_that_cannot_be_decrypted_answer_503_for_a_retry(owner, client, connection):
    ChannelConnection.objects.for_org(owner.organization).update(credentials_encrypted="gAAAAA-not-a-token")
    response = deliver(client, connection, sms(1))
    assert response.status_code == 503 and response.json()["code"] == "CALLBACK_NOT_STORED"
    assert response["Retry-After"]
    assert not InboundDelivery.objects.for_org(owner.organization).exists()
    # The connection's health says so, once (one event), and a working callback later makes it healthy again.
    unhealthy = ChannelConnection.objects.for_org(owner.organization).get()
    assert (unhealthy.health, unhealthy.health_reason) == ("unhealthy", "credentials cannot be decrypted")
    deliver(client, connection, sms(2))
    changes = Event.objects.for_org(owner.organization).filter(type="channel_connection.health_changed")
    assert [e.data["health"] for e in changes] == ["unhealthy"]


def test_verified_callbacks_make_a_connection_healthy_with_one_event(owner, api, connection, inbound):
    inbound(sms(1))
    inbound(sms(2))
    assert api.get(f"/settings/channel-connections/{connection['id']}").json()["health"] == "healthy"
    [change] = Event.objects.for_org(owner.organization).filter(type="channel_connection.health_changed")
    assert (change.data["previousHealth"], change.data["health"]) == ("unknown", "healthy")
    assert "+39" not in str(change.data)


def test_a_disconnected_or_rotated_token_no_longer_routes(api, client, connection):
    rotated = api.post(f"/settings/channel-connections/{connection['id']}/rotate-token").json()
    assert deliver(client, connection, sms(1)).status_code == 404  # the old URL
    api.delete(f"/settings/channel-connections/{connection['id']}")
    assert deliver(client, rotated, sms(2)).status_code == 404


def test_a_lost_publication_is_processed_by_the_sweep(owner, client, connection):
    assert deliver(client, connection, sms(1)).status_code == 200  # on_commit callbacks not run: nothing published
    InboundDelivery.unscoped_objects.update(created_at="2020-01-01T00:00:00Z")
    assert sweep_deliveries() == 1
    assert Message.objects.for_org(owner.organization).count() == 1


def test_stop_blocks_the_contact_and_withdraws_consent_then_start_restores(owner, api, inbound):
    family = [PatientFactory(organization=owner.organization, phone_mobile="+39 333 123 4567") for _ in range(3)]
    inbound(sms(1, text="Hello"))  # first callback activates the connection
    inbound(sms(2, text=" stop "))
    block = ContactBlock.objects.for_org(owner.organization).get()
    assert block.blocked and not block.needs_review
    for patient in family:
        patient.refresh_from_db()
        assert patient.sms_opt_out
    withdrawn = MarketingConsent.objects.for_org(owner.organization).filter(status="withdrawn", channel="sms")
    assert withdrawn.count() == 3

    inbound(sms(3, text="Sì"))  # an ordinary reply changes nothing
    assert ContactBlock.objects.for_org(owner.organization).get().blocked
    inbound(sms(4, text="START"))
    assert not ContactBlock.objects.for_org(owner.organization).get().blocked
    for patient in family:
        patient.refresh_from_db()
        assert not patient.sms_opt_out


def test_a_contact_standing_for_more_than_25_patients_stays_blocked_for_review(owner, inbound):
    for _ in range(26):
        PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1, text="ARRESTA"))
    block = ContactBlock.objects.for_org(owner.organization).get()
    assert block.blocked and block.needs_review
    assert not MarketingConsent.objects.for_org(owner.organization).exists()  # nobody's consent touched
    inbound(sms(2, text="START"))
    assert ContactBlock.objects.for_org(owner.organization).get().blocked  # an overflow block is not lifted


def test_start_on_an_inactive_connection_renews_nothing(owner, api, connection, inbound):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1, text="STOP"))
    ChannelConnection.objects.for_org(owner.organization).update(status="failing")
    inbound(sms(2, text="START"))
    assert ContactBlock.objects.for_org(owner.organization).get().blocked


def test_another_practice_never_sees_the_conversation(owner, api, outsider, inbound):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1))
    conversation = api.get("/conversations").json()["items"][0]
    theirs = outsider.api_client()
    assert theirs.get("/conversations").json()["items"] == []
    for path in ("", "/messages"):
        assert theirs.get(f"/conversations/{conversation['id']}{path}").status_code == 404
    for action in ("close", "reopen", "read", "unread"):
        assert theirs.post(f"/conversations/{conversation['id']}/{action}").status_code == 404
    assert theirs.get("/conversations/unread-counts").json() == {"total": 0, "byChannel": {}}


def test_erasing_the_patient_deletes_the_conversation_and_messages(owner, api, inbound):
    patient = PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1))
    patient_services.patient_erase(organization=owner.organization, patient=patient)
    assert not Conversation.objects.for_org(owner.organization).exists()
    assert not Message.objects.for_org(owner.organization).exists()


def test_erasure_takes_what_the_patient_sent_that_is_still_waiting_or_parked(owner, api, client, connection, inbound):
    patient = PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1))
    assert deliver(client, connection, sms(2)).status_code == 200  # stored, not processed yet (no commit hooks)
    inbound(sms(3, To="+390200000001"))  # to a number not connected: parked
    inbound(sms(4, sender="+393330000000", To="+390200000001"))  # someone else's, parked beside it
    assert InboundDelivery.objects.for_org(owner.organization).count() == 1
    assert ParkedCallback.objects.filter(organization=owner.organization).count() == 2
    patient_services.patient_erase(organization=owner.organization, patient=patient)
    assert not InboundDelivery.objects.for_org(owner.organization).exists()
    parked = ParkedCallback.objects.filter(organization=owner.organization)
    assert [item["sender"] for row in parked for item in row.items] == ["+393330000000"]


def test_merging_moves_the_duplicates_messages_into_the_survivors_conversation(owner, inbound):
    survivor = PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1))
    duplicate = PatientFactory(organization=owner.organization, phone_mobile="+393339999999")
    inbound(sms(2, sender="+393339999999"))
    patient_services.patient_merge(
        organization=owner.organization, user=owner.user, survivor=survivor, duplicate=duplicate
    )
    conversation = Conversation.objects.for_org(owner.organization).get()
    assert conversation.patient_id == survivor.id
    assert Message.objects.for_org(owner.organization).filter(conversation=conversation).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_workers_on_one_new_number_open_one_enquiry(member_factory, monkeypatch):
    """Two deliveries from the same unknown number processed at the same moment by two workers: one enquiry, one
    conversation, both messages (the advisory lock per contact), and neither delivery skipped."""
    from django.test import Client

    from apps.conversations import inbound as inbound_processing
    from config.celery import app
    from tests.conversations.conftest import connect_sms
    from tests.helpers import run_in_threads

    owner = member_factory()
    connection = connect_sms(owner.api_client())
    monkeypatch.setitem(app.conf, "task_always_eager", False)  # published to the broker, left for the two workers
    for n in (1, 2):
        assert deliver(Client(), connection, sms(n, sender="+393470000009")).status_code == 200
    waiting = iter(InboundDelivery.objects.for_org(owner.organization).values_list("id", flat=True))
    assert run_in_threads(lambda: inbound_processing.inbound_process(next(waiting)), count=2) == []
    assert Patient.objects.for_org(owner.organization).filter(phone_mobile="+393470000009").count() == 1
    assert Conversation.objects.for_org(owner.organization).count() == 1
    assert Message.objects.for_org(owner.organization).count() == 2


def test_start_when_more_than_25_patients_now_share_the_number_keeps_the_block_for_review(owner, inbound):
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(1, text="STOP"))
    for _ in range(25):
        PatientFactory(organization=owner.organization, phone_mobile="+393331234567")
    inbound(sms(2, text="START"))
    block = ContactBlock.objects.for_org(owner.organization).get()
    assert block.blocked and block.needs_review
    granted = MarketingConsent.objects.for_org(owner.organization).filter(status="granted")
    assert not granted.exists()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"Body": "ciao\x00"}, "Body"),
        ({"Body": "x" * 10_001}, "Body"),
        ({"MediaUrl0": "https://api.twilio.com/\x00", "NumMedia": "1"}, "MediaUrl0"),
    ],
)
def test_text_postgresql_cannot_store_is_refused_naming_the_field(owner, client, connection, params, field):
    response = deliver(client, connection, {**sms(1), **params})
    assert response.status_code == 400, response.content
    assert field in response.json()["details"]["fields"]
    assert not Message.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize("token", ["abc%00def", "a" * 65, "spaces%20in", "%E2%9C%93"])
def test_a_token_we_never_issue_is_404_before_any_lookup(client, connection, token):
    response = client.post(f"/webhooks/sms/{token}", "a=b", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"


def test_a_sender_matches_the_patient_however_the_number_was_stored_and_never_a_shorter_lookalike(owner, api, inbound):
    """+39 333 1234567 is the patient stored as "333 1234567" or "0039 333 1234567", not the one stored as
    "331234567" (only the real country code is dropped, not a guess at leading digits)."""
    national = PatientFactory(organization=owner.organization, phone_mobile="333 123 4567")
    with_00 = PatientFactory(organization=owner.organization, phone_other="0039 333 1234567")
    lookalike = PatientFactory(organization=owner.organization, phone_mobile="331234567")
    inbound(sms(1, text="STOP"))
    withdrawn = set(
        MarketingConsent.objects.for_org(owner.organization)
        .filter(status="withdrawn")
        .values_list("patient_id", flat=True)
    )
    assert withdrawn == {national.id, with_00.id}
    assert lookalike.id not in withdrawn
