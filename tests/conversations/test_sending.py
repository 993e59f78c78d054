"""Sending: POST /conversations (write to a patient on a channel) and POST /conversations/{id}/messages (reply).

Messages are stored queued in the request and sent by a Celery task through the connection's provider: the
sandbox transport by default in tests (the request a provider would have received is recorded), and the real HTTP
client against a local server speaking each provider's API (Twilio, WhatsApp Cloud, Resend, Telnyx) where the
provider behaviour is the point. Retries, final failures, blocks and consent rechecked at send time, quiet hours,
status callbacks moving the message on, tenancy and roles."""

import base64
import json
from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from django.utils import timezone
from werkzeug import Response

from apps.conversations import outbound
from apps.conversations.models import (
    ChannelConnection,
    Conversation,
    InboundDelivery,
    Message,
    MessagingSettings,
    SandboxDelivery,
)
from apps.conversations.tasks import send_messages, sweep_deliveries, sweep_outbound
from apps.events.models import Event
from apps.patients.models import MarketingConsent, Patient
from tests.conftest import make_member
from tests.conversations.conftest import AUTH_TOKEN, PRACTICE_NUMBER, TelnyxAccount, connect
from tests.conversations.test_sms_status import status_post
from tests.factories import PatientFactory
from tests.helpers import assert_error

ACCOUNT_SID = "AC" + "0" * 32
PHONE_NUMBER_ID = "106540352242922"


def post(client, path, data):
    return client.post(path, json.dumps(data), content_type="application/json")


@pytest.fixture
def patient(owner):
    # Stored as the practice typed it: a national Italian mobile number, read in the connection's country.
    return PatientFactory(organization=owner.organization, phone_mobile="333 123 4567", email="Anna@Example.com")


@pytest.fixture
def start(api, connection, patient, django_capture_on_commit_callbacks):
    """Write to the patient by SMS and run what the commit publishes (the send task, eager in tests)."""

    def send(body="La aspettiamo domani alle 10", *, client=None, execute=True, **extra):
        data = {"patientId": str(patient.id), "connectionId": connection["id"], "body": body, **extra}
        with django_capture_on_commit_callbacks(execute=execute):
            return post(client or api, "/conversations", data)

    return send


def message_of(response) -> Message:
    body = response.json()
    return Message.unscoped_objects.get(id=body["message"]["id"] if "message" in body else body["id"])


# --- the sandbox transport (make run, tests by default) -----------------------------------------------------------


def test_writing_to_a_patient_opens_a_conversation_and_sends_through_the_sandbox(
    owner, api, connection, patient, start
):
    response = start()
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["message"]["status"] == "queued"  # stored queued in the request; the worker sends it
    assert body["message"]["direction"] == "outbound" and body["message"]["source"] == "inbox"
    assert body["message"]["sentById"] == str(owner.user.id)
    assert body["conversation"]["contactAddress"] == "+393331234567"  # E.164 in the practice number's country

    message = message_of(response)
    assert (message.status, message.sandbox, message.attempts) == ("sent", True, 1)
    assert message.provider_message_id.startswith("sandbox-")
    recorded = SandboxDelivery.unscoped_objects.get(message=message)
    assert recorded.url.endswith(f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json")
    form = recorded.request["form"]
    assert form["To"] == "+393331234567" and form["From"] == PRACTICE_NUMBER
    assert form["Body"] == "La aspettiamo domani alle 10"
    assert form["StatusCallback"].endswith(f"/webhooks/sms/{connection['routingToken']}/status")
    assert AUTH_TOKEN not in json.dumps(recorded.request)  # never the credentials

    listed = api.get(f"/conversations/{body['conversation']['id']}/messages").json()["items"]
    assert [(m["status"], m["sandbox"]) for m in listed] == [("sent", True)]
    types = list(Event.unscoped_objects.filter(organization=owner.organization).values_list("type", flat=True))
    assert "conversation.created" in types and "message.sent" in types
    sent = Event.unscoped_objects.get(type="message.sent")
    assert sent.data["patientId"] == str(patient.id) and sent.data["sandbox"] is True
    assert "La aspettiamo" not in json.dumps(sent.data)  # no message text in events


def test_a_reply_goes_to_the_conversations_address_and_lands_on_the_patients_timeline(
    owner, api, patient, start, django_capture_on_commit_callbacks
):
    conversation_id = start().json()["conversation"]["id"]
    with django_capture_on_commit_callbacks(execute=True):
        reply = post(api, f"/conversations/{conversation_id}/messages", {"body": "Grazie!"})
    assert reply.status_code == 201, reply.content
    assert message_of(reply).status == "sent"
    assert Conversation.unscoped_objects.filter(patient=patient).count() == 1
    timeline = api.get(f"/patients/{patient.id}/timeline").json()
    entries = timeline.get("items", timeline) if isinstance(timeline, dict) else timeline
    assert sum(1 for entry in entries if entry.get("kind") == "message") == 2


def test_bad_bodies_are_refused_naming_the_field(api, connection, patient):
    base = {"patientId": str(patient.id), "connectionId": connection["id"]}
    assert "body" in assert_error(post(api, "/conversations", {**base, "body": ""}), 400, "VALIDATION_ERROR")[
        "details"
    ].get("fields", {})
    too_long = post(api, "/conversations", {**base, "body": "x" * 1601})
    assert "1600" in assert_error(too_long, 400, "VALIDATION_ERROR")["message"]
    assert_error(post(api, "/conversations", {**base, "body": 42}), 400, "VALIDATION_ERROR")
    assert_error(post(api, "/conversations", {**base, "body": "ok", "extra": 1}), 400, "VALIDATION_ERROR")
    assert_error(post(api, "/conversations", {"body": "ok", "connectionId": connection["id"]}), 400, "VALIDATION_ERROR")
    assert not Message.unscoped_objects.exists()


def test_no_usable_number_is_a_clear_refusal(owner, api, connection):
    nobody = PatientFactory(organization=owner.organization, phone_mobile="12", email="x@example.com")
    refused = post(api, "/conversations", {"patientId": str(nobody.id), "connectionId": connection["id"], "body": "Hi"})
    assert assert_error(refused, 409, "NO_ADDRESS")["details"]["reason"] == "NO_ADDRESS"
    assert not Message.unscoped_objects.exists() and not Conversation.unscoped_objects.exists()


def test_another_practices_records_are_404(owner, outsider, api, connection, patient, start):
    conversation_id = start().json()["conversation"]["id"]
    stranger = outsider.api_client()
    assert_error(post(stranger, f"/conversations/{conversation_id}/messages", {"body": "x"}), 404, "NOT_FOUND")
    theirs = PatientFactory(organization=outsider.organization)
    data = {"patientId": str(theirs.id), "connectionId": connection["id"], "body": "x"}
    assert post(api, "/conversations", data).status_code == 404
    their_connection = connect(
        outsider.api_client(), "sms", "+390299999999", {"accountSid": ACCOUNT_SID, "authToken": "t"}
    )
    data = {"patientId": str(patient.id), "connectionId": their_connection["id"], "body": "x"}
    assert post(api, "/conversations", data).status_code == 404
    assert Message.unscoped_objects.filter(conversation__organization=outsider.organization).count() == 0


def test_only_those_who_work_the_inbox_send(owner, connection, patient):
    for role in ("analyst", "nurse"):
        client = make_member(role=role, organization=owner.organization).api_client()
        data = {"patientId": str(patient.id), "connectionId": connection["id"], "body": "x"}
        assert post(client, "/conversations", data).status_code == 403
    front_desk = make_member(role="front_desk", organization=owner.organization).api_client()
    data = {"patientId": str(patient.id), "connectionId": connection["id"], "body": "x"}
    assert post(front_desk, "/conversations", data).status_code == 201


def test_a_disconnected_connection_sends_nothing(api, connection, start):
    assert api.delete(f"/settings/channel-connections/{connection['id']}").status_code in (200, 204)
    assert_error(start(), 409, "CONNECTION_UNAVAILABLE")


# --- blocks and consent: checked when queued and again just before the provider call -----------------------------


def stop(client, connection, inbound_sender="+393331234567"):
    from tests.conversations.conftest import deliver

    return deliver(
        client, connection, {"MessageSid": "SM-stop", "From": inbound_sender, "To": PRACTICE_NUMBER, "Body": "STOP"}
    )


def test_a_stopped_contact_is_refused_up_front(
    client, api, connection, patient, start, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert stop(client, connection).status_code == 200
    assert_error(start(), 409, "CONTACT_BLOCKED")


def test_a_stop_between_queueing_and_sending_fails_the_message_with_the_reason(
    owner, client, api, connection, start, django_capture_on_commit_callbacks
):
    response = start(execute=False)  # queued; its send task not run yet
    message = message_of(response)
    assert message.status == "queued"
    with django_capture_on_commit_callbacks(execute=True):
        assert stop(client, connection).status_code == 200
    send_messages([str(message.id)])
    message.refresh_from_db()
    assert (message.status, message.error_code) == ("failed", "CONTACT_BLOCKED")
    assert not SandboxDelivery.unscoped_objects.exists()
    changed = Event.unscoped_objects.get(type="message.status_changed", subject_id=str(message.id))
    assert changed.data["status"] == "failed" and changed.data["errorCode"] == "CONTACT_BLOCKED"
    assert changed.data["previousStatus"] == "queued"


def grant(owner, patient, channel="sms"):
    MarketingConsent.unscoped_objects.create(
        organization=owner.organization,
        patient=patient,
        channel=channel,
        status="granted",
        source="form",
        recorded_at=timezone.now(),
    )


def queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks, *, execute=True):
    with django_capture_on_commit_callbacks(execute=execute):
        [result] = outbound.queue_messages(
            organization=owner.organization,
            connection_id=connection["id"],
            messages=[outbound.OutboundMessage(patient_id=patient.id, body="Sbiancamento -20%", reference="r1")],
            purpose="marketing",
            source="campaign",
        )
    return result


def test_marketing_needs_consent_and_no_opt_out(owner, connection, patient, django_capture_on_commit_callbacks):
    MessagingSettings.unscoped_objects.create(organization=owner.organization, quiet_hours_enabled=False)
    result = queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks)
    assert (result.reference, result.message_id, result.skipped_reason) == ("r1", None, "NO_CONSENT")
    grant(owner, patient)
    result = queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks)
    assert result.skipped_reason is None and Message.unscoped_objects.get(id=result.message_id).status == "sent"
    Patient.unscoped_objects.filter(id=patient.id).update(sms_opt_out=True)
    assert queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks).skipped_reason == "OPTED_OUT"


def test_consent_withdrawn_before_the_send_fails_a_marketing_message(
    owner, connection, patient, django_capture_on_commit_callbacks
):
    MessagingSettings.unscoped_objects.create(organization=owner.organization, quiet_hours_enabled=False)
    grant(owner, patient)
    result = queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks, execute=False)
    MarketingConsent.unscoped_objects.create(
        organization=owner.organization,
        patient=patient,
        channel="sms",
        status="withdrawn",
        source="phone",
        recorded_at=timezone.now() + timedelta(seconds=1),
    )
    send_messages([str(result.message_id)])
    message = Message.unscoped_objects.get(id=result.message_id)
    assert (message.status, message.error_code) == ("failed", "NO_CONSENT")


def test_service_messages_ignore_marketing_opt_outs(owner, api, patient, start):
    Patient.unscoped_objects.filter(id=patient.id).update(sms_opt_out=True)
    assert message_of(start()).status == "sent"


def test_quiet_hours_hold_marketing_until_they_end_and_never_a_reply(
    owner, api, connection, patient, start, django_capture_on_commit_callbacks
):
    grant(owner, patient)
    now = timezone.now().astimezone(timezone.get_fixed_timezone(0))
    hours = {
        "quietHoursEnabled": True,
        "quietHoursStart": (now - timedelta(hours=1)).strftime("%H:%M"),
        "quietHoursEnd": (now + timedelta(hours=1)).strftime("%H:%M"),
    }
    assert api.put("/settings/messaging", json.dumps(hours), content_type="application/json").status_code == 200
    result = queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks)
    held = Message.unscoped_objects.get(id=result.message_id)
    assert (held.status, held.held_reason, held.attempts) == ("queued", "QUIET_HOURS", 0)
    assert now + timedelta(minutes=58) < held.next_attempt_at <= now + timedelta(hours=1)
    assert message_of(start()).status == "sent"  # a reply a member writes is not held

    Message.unscoped_objects.filter(id=held.id).update(next_attempt_at=timezone.now())  # the end of the quiet hours
    MessagingSettings.unscoped_objects.filter(organization=owner.organization).update(quiet_hours_enabled=False)
    sweep_outbound()
    held.refresh_from_db()
    assert (held.status, held.held_reason) == ("sent", "")


def test_quiet_hours_settings(owner, api):
    got = api.get("/settings/messaging").json()
    assert got == {"quietHoursEnabled": True, "quietHoursStart": "21:00", "quietHoursEnd": "08:00", "timezone": "UTC"}
    changed = api.put("/settings/messaging", json.dumps({"quietHoursStart": "20:30"}), content_type="application/json")
    assert changed.json()["quietHoursStart"] == "20:30" and changed.json()["quietHoursEnd"] == "08:00"
    for bad in ({"quietHoursStart": "25:00"}, {"quietHoursStart": 8}, {"quietHoursEnd": "20:30"}, {"nope": 1}):
        response = api.put("/settings/messaging", json.dumps(bad), content_type="application/json")
        assert_error(response, 400, "VALIDATION_ERROR")
    front_desk = make_member(role="front_desk", organization=owner.organization).api_client()
    assert front_desk.put("/settings/messaging", "{}", content_type="application/json").status_code == 403
    assert (
        MessagingSettings.unscoped_objects.get(organization=owner.organization).quiet_hours_start.strftime("%H:%M")
        == "20:30"
    )


# --- the real HTTP client against local servers speaking each provider's API -------------------------------------


@pytest.fixture
def providers(settings, httpserver):
    settings.SVC_OUTBOUND_TRANSPORT = "provider"
    settings.SVC_SMS_API_URL = httpserver.url_for("/twilio")
    settings.SVC_EMAIL_PROVIDER_API_URL = httpserver.url_for("/resend")
    settings.SVC_EMAIL_PROVIDER_API_KEY = "re_test_key"
    settings.SVC_TELEPHONY_API_URL = httpserver.url_for("/telnyx")
    return httpserver


def twilio_messages(httpserver, answers: list):
    """Twilio's Messages resource: checks basic auth and the form, answers from `answers` in turn."""
    seen = []

    def handle(request):
        expected = "Basic " + base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
        assert request.headers.get("Authorization") == expected
        seen.append({k: v[0] for k, v in parse_qs(request.get_data(as_text=True)).items()})
        status, body = answers[min(len(seen), len(answers)) - 1]
        return Response(json.dumps(body), status=status, content_type="application/json")

    httpserver.expect_request(
        f"/twilio/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json", method="POST"
    ).respond_with_handler(handle)
    return seen


def test_twilio_send_then_status_callbacks_move_it_to_delivered(
    owner, client, connection, providers, start, django_capture_on_commit_callbacks
):
    seen = twilio_messages(providers, [(201, {"sid": "SM" + "a" * 32, "status": "queued"})])
    message = message_of(start())
    assert (message.status, message.provider_message_id, message.sandbox) == ("sent", "SM" + "a" * 32, False)
    assert seen[0]["To"] == "+393331234567" and seen[0]["From"] == PRACTICE_NUMBER
    assert seen[0]["StatusCallback"].endswith(f"/webhooks/sms/{connection['routingToken']}/status")
    params = {
        "MessageSid": "SM" + "a" * 32,
        "MessageStatus": "delivered",
        "From": PRACTICE_NUMBER,
        "To": "+393331234567",
    }
    with django_capture_on_commit_callbacks(execute=True):
        assert status_post(client, connection, params).status_code == 200
    message.refresh_from_db()
    assert message.status == "delivered"
    assert list(
        Event.unscoped_objects.filter(subject_id=str(message.id)).order_by("created_at").values_list("type", flat=True)
    ) == [
        "message.sent",
        "message.status_changed",
    ]


def test_provider_outages_are_retried_with_backoff_then_sent(owner, connection, providers, start):
    seen = twilio_messages(
        providers,
        [(503, {"code": 20503, "message": "Service unavailable"}), (429, {"code": 20429}), (201, {"sid": "SMok"})],
    )
    message = message_of(start())
    assert (message.status, message.held_reason, message.error_code, message.attempts) == (
        "queued",
        "RETRYING",
        "20503",
        1,
    )
    assert message.next_attempt_at > timezone.now() + timedelta(seconds=25)  # 30 s backoff
    assert sweep_outbound() == 0  # not due yet
    for expected_attempts in (2, 3):
        Message.unscoped_objects.filter(id=message.id).update(next_attempt_at=timezone.now())  # the backoff has passed
        sweep_outbound()
        message.refresh_from_db()
        assert message.attempts == expected_attempts
    assert (message.status, message.provider_message_id, message.held_reason, message.error_code) == (
        "sent",
        "SMok",
        "",
        "",
    )
    assert len(seen) == 3


def test_five_failed_attempts_fail_the_message(owner, connection, providers, start):
    twilio_messages(providers, [(500, {"code": 20500})])
    message = message_of(start())
    for _ in range(4):
        Message.unscoped_objects.filter(id=message.id).update(next_attempt_at=timezone.now())
        sweep_outbound()
    message.refresh_from_db()
    assert (message.status, message.error_code, message.attempts) == ("failed", "20500", 5)
    assert (
        Event.unscoped_objects.get(type="message.status_changed", subject_id=str(message.id)).data["errorCode"]
        == "20500"
    )


def test_a_refused_request_fails_at_once_with_the_providers_code(owner, connection, providers, start):
    twilio_messages(providers, [(400, {"code": 21211, "message": "The 'To' number is not a valid phone number."})])
    message = message_of(start())
    assert (message.status, message.error_code, message.attempts) == ("failed", "21211", 1)


def test_refused_credentials_fail_and_mark_the_connection_unhealthy(owner, connection, providers, start):
    twilio_messages(providers, [(401, {"code": 20003, "message": "Authenticate"})])
    message = message_of(start())
    assert (message.status, message.error_code) == ("failed", "20003")
    assert ChannelConnection.unscoped_objects.get(id=connection["id"]).health == "unhealthy"
    assert Event.unscoped_objects.filter(type="channel_connection.health_changed").count() == 1


def test_an_unreachable_provider_is_retried(settings, owner, connection, start):
    settings.SVC_OUTBOUND_TRANSPORT = "provider"
    settings.SVC_SMS_API_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    message = message_of(start())
    assert (message.status, message.error_code, message.held_reason) == ("queued", "PROVIDER_UNREACHABLE", "RETRYING")


def test_whatsapp_cloud_text_inside_the_care_window_and_refusal_outside(
    owner, api, providers, django_capture_on_commit_callbacks
):
    wa = connect(api, "messaging_app", PHONE_NUMBER_ID, {"accessToken": "EAAG-token"})
    patient = PatientFactory(organization=owner.organization, phone_mobile="+39 333 765 4321")
    conversation = Conversation.unscoped_objects.create(
        organization=owner.organization,
        patient=patient,
        connection_id=wa["id"],
        channel="messaging_app",
        contact_address="+393337654321",
        last_message_at=timezone.now(),
        last_inbound_at=timezone.now() - timedelta(hours=2),
    )
    received = []

    def graph_messages(request):
        assert request.headers["Authorization"] == "Bearer EAAG-token"
        received.append(request.get_json())
        answer = {
            "messaging_product": "whatsapp",
            "contacts": [{"input": "393337654321", "wa_id": "393337654321"}],
            "messages": [{"id": "wamid.OUT1"}],
        }
        return Response(json.dumps(answer), content_type="application/json")

    providers.expect_request(f"/v21.0/{PHONE_NUMBER_ID}/messages", method="POST").respond_with_handler(graph_messages)
    with django_capture_on_commit_callbacks(execute=True):
        reply = post(api, f"/conversations/{conversation.id}/messages", {"body": "A domani!"})
    assert reply.status_code == 201, reply.content
    assert message_of(reply).provider_message_id == "wamid.OUT1"
    assert received == [
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": "393337654321",
            "type": "text",
            "text": {"preview_url": False, "body": "A domani!"},
        }
    ]

    Conversation.unscoped_objects.filter(id=conversation.id).update(
        last_inbound_at=timezone.now() - timedelta(hours=25)
    )
    assert_error(
        post(api, f"/conversations/{conversation.id}/messages", {"body": "Ci sei?"}), 409, "OUTSIDE_CARE_WINDOW"
    )


def test_whatsapp_template_messages_are_sent_as_templates(owner, api, providers, django_capture_on_commit_callbacks):
    wa = connect(api, "messaging_app", PHONE_NUMBER_ID, {"accessToken": "EAAG-token"})
    patient = PatientFactory(organization=owner.organization, phone_mobile="+39 333 765 4321")
    received = []

    def graph_messages(request):
        received.append(request.get_json())
        return Response(json.dumps({"messages": [{"id": "wamid.T1"}]}), content_type="application/json")

    providers.expect_request(f"/v21.0/{PHONE_NUMBER_ID}/messages", method="POST").respond_with_handler(graph_messages)
    template = {"name": "appointment_reminder", "language": "it", "parameters": ["Anna", "10:00"]}
    with django_capture_on_commit_callbacks(execute=True):
        [result] = outbound.queue_messages(
            organization=owner.organization,
            connection_id=wa["id"],
            purpose="service",
            source="template",
            messages=[
                outbound.OutboundMessage(patient_id=patient.id, body="Anna, a domani alle 10:00", template=template)
            ],
        )
    assert Message.unscoped_objects.get(id=result.message_id).status == "sent"
    assert received[0]["type"] == "template"
    assert received[0]["template"] == {
        "name": "appointment_reminder",
        "language": {"code": "it"},
        "components": [
            {"type": "body", "parameters": [{"type": "text", "text": "Anna"}, {"type": "text", "text": "10:00"}]}
        ],
    }


def test_resend_email_with_idempotency_key_and_one_click_unsubscribe(
    owner, api, patient, providers, django_capture_on_commit_callbacks
):
    mail = connect(api, "email", "reception")
    received = []

    def emails(request):
        assert request.headers["Authorization"] == "Bearer re_test_key"
        received.append((request.headers["Idempotency-Key"], request.get_json()))
        return Response(json.dumps({"id": "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}), content_type="application/json")

    providers.expect_request("/resend/emails", method="POST").respond_with_handler(emails)
    data = {"patientId": str(patient.id), "connectionId": mail["id"], "body": "Gentile Anna, …"}
    assert_error(post(api, "/conversations", data), 400, "VALIDATION_ERROR")  # e-mail needs a subject
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, "/conversations", {**data, "subject": "Il suo preventivo"})
    message = message_of(response)
    assert message.status == "sent" and message.provider_message_id == "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"
    key, sent = received[0]
    assert key == str(message.id)  # a retried call never sends twice
    assert sent["to"] == ["anna@example.com"] and sent["subject"] == "Il suo preventivo"
    assert sent["reply_to"] == mail["address"] and mail["address"] in sent["from"]
    assert "List-Unsubscribe" not in sent["headers"]  # a service message

    grant(owner, patient, "email")
    MessagingSettings.unscoped_objects.create(organization=owner.organization, quiet_hours_enabled=False)
    with django_capture_on_commit_callbacks(execute=True):
        outbound.queue_messages(
            organization=owner.organization,
            connection_id=mail["id"],
            purpose="marketing",
            source="campaign",
            messages=[
                outbound.OutboundMessage(
                    patient_id=patient.id,
                    body="Offerta",
                    subject="Offerta",
                    html="<p>Offerta</p>",
                    unsubscribe_url="https://crm.example/marketing/unsubscribe/tok",
                )
            ],
        )
    _, marketing = received[1]
    assert marketing["html"] == "<p>Offerta</p>"
    assert marketing["headers"]["List-Unsubscribe"] == "<https://crm.example/marketing/unsubscribe/tok>"
    assert marketing["headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


def test_telnyx_send_needs_the_api_key(owner, api, patient, providers, django_capture_on_commit_callbacks):
    account = TelnyxAccount()
    receive_only = connect(api, "telephony_messaging", "+390287654321", {"publicKey": account.public_key})
    data = {"patientId": str(patient.id), "connectionId": receive_only["id"], "body": "Ciao"}
    with django_capture_on_commit_callbacks(execute=True):
        message = message_of(post(api, "/conversations", data))
    message.refresh_from_db()
    assert (message.status, message.error_code) == ("failed", "API_KEY_MISSING")

    texting = connect(
        api, "telephony_messaging", "+390287650000", {"publicKey": account.public_key, "apiKey": "KEY0123"}
    )
    received = []

    def messages(request):
        assert request.headers["Authorization"] == "Bearer KEY0123"
        received.append(request.get_json())
        return Response(
            json.dumps({"data": {"id": "40385f64-5717-4562-b3fc-2c963f66afa6", "record_type": "message"}}),
            content_type="application/json",
        )

    providers.expect_request("/telnyx/v2/messages", method="POST").respond_with_handler(messages)
    with django_capture_on_commit_callbacks(execute=True):
        message = message_of(post(api, "/conversations", {**data, "connectionId": texting["id"]}))
    message.refresh_from_db()
    assert message.status == "sent" and message.provider_message_id == "40385f64-5717-4562-b3fc-2c963f66afa6"
    assert received[0]["from"] == "+390287650000" and received[0]["to"] == "+393331234567"
    assert received[0]["webhook_url"].endswith(f"/webhooks/telephony-messaging/{texting['routingToken']}")


def test_a_message_is_sent_once_however_often_its_task_runs(owner, connection, providers, start):
    seen = twilio_messages(providers, [(201, {"sid": "SMonce"})])
    message = message_of(start())
    send_messages([str(message.id)])
    sweep_outbound()
    assert len(seen) == 1 and Message.unscoped_objects.get(id=message.id).attempts == 1


def test_a_status_reported_while_the_send_is_in_flight_is_applied_once_the_send_is_recorded(
    owner, client, connection, start, django_capture_on_commit_callbacks
):
    message = message_of(start(execute=False))
    [leased], lease = outbound._lease([message.id])  # a worker has taken it and is calling the provider
    params = {"MessageSid": "SMearly", "MessageStatus": "delivered", "From": PRACTICE_NUMBER, "To": "+393331234567"}
    with django_capture_on_commit_callbacks(execute=True):
        assert status_post(client, connection, params).status_code == 200  # acknowledged, kept for later
    assert InboundDelivery.unscoped_objects.filter(state="received").count() == 1
    outbound._record([outbound.Outcome(leased, provider_message_id="SMearly", request=None)], lease)
    InboundDelivery.unscoped_objects.update(created_at=timezone.now() - timedelta(minutes=2))
    sweep_deliveries()
    message.refresh_from_db()
    assert message.status == "delivered"
    assert not InboundDelivery.unscoped_objects.exists()


def test_a_sample_to_a_members_own_number_goes_through_the_provider_and_stores_no_message(
    owner, api, connection, providers, django_capture_on_commit_callbacks
):
    seen = twilio_messages(providers, [(503, {"code": 20503}), (201, {"sid": "SMsample"})])
    sample = outbound.OutboundMessage(patient_id=None, body="[Test] Sbiancamento -20%")
    with django_capture_on_commit_callbacks(execute=True):
        outbound.send_test_message(
            organization=owner.organization, connection_id=connection["id"], to_address="+393470000001", message=sample
        )
    # The provider's 503 was retried by the task (eager here), then accepted.
    assert [request["To"] for request in seen] == ["+393470000001", "+393470000001"]
    assert seen[-1]["Body"] == "[Test] Sbiancamento -20%"
    assert not Message.unscoped_objects.exists() and not Conversation.unscoped_objects.exists()

    assert api.delete(f"/settings/channel-connections/{connection['id']}").status_code in (200, 204)
    with pytest.raises(Exception) as refused:
        outbound.send_test_message(
            organization=owner.organization, connection_id=connection["id"], to_address="+393470000001", message=sample
        )
    assert refused.value.code == "CONNECTION_UNAVAILABLE"


# --- the pipeline's own safety ------------------------------------------------------------------------------------


def test_an_unexpected_error_fails_that_message_alone(
    owner, api, connection, patient, start, django_capture_on_commit_callbacks
):
    broken = connect(api, "sms", "+390200000001", {"accountSid": ACCOUNT_SID, "authToken": "t"})
    ChannelConnection.unscoped_objects.filter(id=broken["id"]).update(credentials_encrypted="not-a-ciphertext")
    other = PatientFactory(organization=owner.organization, phone_mobile="+39 333 000 0002")
    with django_capture_on_commit_callbacks(execute=False):
        bad = post(api, "/conversations", {"patientId": str(other.id), "connectionId": broken["id"], "body": "x"})
        good = start(execute=False)
    send_messages([bad.json()["message"]["id"], good.json()["message"]["id"]])  # one batch
    assert (message_of(bad).status, message_of(bad).error_code) == ("failed", "SEND_ERROR")
    assert message_of(good).status == "sent"


def test_a_worker_that_outlived_its_lease_never_overwrites_a_later_send(owner, connection, start):
    message = message_of(start(execute=False))
    [first], first_lease = outbound._lease([message.id])
    Message.unscoped_objects.filter(id=message.id).update(next_attempt_at=timezone.now())  # the lease lapsed
    [second], second_lease = outbound._lease([message.id])
    outbound._record([outbound.Outcome(second, provider_message_id="SMsecond", request=None)], second_lease)
    outbound._record([outbound.Outcome(first, provider_message_id="SMfirst", request=None)], first_lease)
    message.refresh_from_db()
    assert (message.status, message.provider_message_id) == ("sent", "SMsecond")
    assert Event.unscoped_objects.filter(type="message.sent", subject_id=str(message.id)).count() == 1


def test_a_slow_provider_batch_hands_the_rest_on_without_counting_an_attempt(
    owner, api, connection, providers, monkeypatch, django_capture_on_commit_callbacks
):
    seen = twilio_messages(providers, [(201, {"sid": "SMslow"})])
    monkeypatch.setattr(outbound, "SEND_BATCH_SECONDS", 0)  # every call takes "too long"
    patients = [PatientFactory(organization=owner.organization, phone_mobile=f"+39 333 100 000{i}") for i in range(3)]
    ids = []
    with django_capture_on_commit_callbacks(execute=False):
        for each in patients:
            data = {"patientId": str(each.id), "connectionId": connection["id"], "body": "Promemoria"}
            ids.append(post(api, "/conversations", data).json()["message"]["id"])
    send_messages(ids)  # one message per batch, the rest handed on (eager here: at once)
    assert len(seen) == 3
    assert list(Message.unscoped_objects.filter(id__in=ids).values_list("status", "attempts").distinct()) == [
        ("sent", 1)
    ]


def test_deceased_patients_get_nothing_and_archived_ones_no_marketing(
    owner, api, connection, patient, start, django_capture_on_commit_callbacks
):
    MessagingSettings.unscoped_objects.create(organization=owner.organization, quiet_hours_enabled=False)
    grant(owner, patient)
    queued = message_of(start(execute=False))
    Patient.unscoped_objects.filter(id=patient.id).update(status="deceased")
    send_messages([str(queued.id)])
    queued.refresh_from_db()
    assert (queued.status, queued.error_code) == ("failed", "PATIENT_INACTIVE")
    assert_error(start(), 409, "PATIENT_INACTIVE")

    Patient.unscoped_objects.filter(id=patient.id).update(status="patient", archived_at=timezone.now())
    assert queue_marketing(owner, connection, patient, django_capture_on_commit_callbacks).skipped_reason == (
        "PATIENT_INACTIVE"
    )
    assert message_of(start()).status == "sent"  # a service message to an archived patient still goes


def test_the_sweep_leaves_a_fresh_message_to_its_own_task(owner, connection, start):
    message = message_of(start(execute=False))
    assert sweep_outbound() == 0
    Message.unscoped_objects.filter(id=message.id).update(created_at=timezone.now() - timedelta(minutes=2))
    assert sweep_outbound() == 1
    message.refresh_from_db()
    assert message.status == "sent"


def test_withdrawing_queued_messages_fails_them_but_never_one_being_sent(owner, connection, patient, start):
    waiting = message_of(start(execute=False))
    other = PatientFactory(organization=owner.organization, phone_mobile="+39 333 000 0003")
    in_flight = message_of(
        post(
            owner.api_client(),
            "/conversations",
            {"patientId": str(other.id), "connectionId": connection["id"], "body": "y"},
        )
    )
    Message.unscoped_objects.filter(id=in_flight.id).update(
        status="queued", attempts=1, next_attempt_at=timezone.now() + timedelta(minutes=5)
    )
    assert (
        outbound.withdraw_queued(
            organization=owner.organization, message_ids=[waiting.id, in_flight.id], reason="CAMPAIGN_CANCELLED"
        )
        == 1
    )
    waiting.refresh_from_db()
    assert (waiting.status, waiting.error_code) == ("failed", "CAMPAIGN_CANCELLED")
    assert Message.unscoped_objects.get(id=in_flight.id).status == "queued"
    assert (
        Event.unscoped_objects.get(type="message.status_changed", subject_id=str(waiting.id)).data["errorCode"]
        == "CAMPAIGN_CANCELLED"
    )
