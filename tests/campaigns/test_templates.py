"""Message templates through HTTP: CRUD, validation of variables on save (the field and the variable named),
rendering with escaping (preview), the messaging-app approval gate, and sending a template to one patient."""

import pytest

from apps.conversations.models import Message, SandboxDelivery
from apps.patients.models import MarketingConsent
from tests.campaigns.conftest import PHONE_NUMBER_ID, consenting_patient, grant, make_template, patch, post
from tests.factories import PatientFactory
from tests.helpers import assert_error

# --- create, read, list, update, delete ---------------------------------------------------------------------------


def test_create_read_list_update_and_delete_a_template(api):
    created = make_template(api, body="Hi {{ patient.first_name }}, {{practice.name}} misses you.")
    assert created["channel"] == "sms" and created["category"] == "marketing"
    assert created["variables"] == ["patient.first_name", "practice.name"]
    assert created["approvalStatus"] is None and created["subject"] == "" and created["html"] == ""

    assert api.get(f"/templates/{created['id']}").json() == created
    listed = api.get("/templates?channel=sms").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == created["id"]
    assert api.get("/templates?channel=email").json()["total"] == 0

    changed = patch(api, f"/templates/{created['id']}", {"name": "Autumn check-up", "category": "service"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "Autumn check-up" and changed.json()["category"] == "service"

    assert api.delete(f"/templates/{created['id']}").status_code == 204
    assert_error(api.get(f"/templates/{created['id']}"), 404, "NOT_FOUND")


def test_the_channel_cannot_be_changed(api):
    template = make_template(api)
    body = assert_error(patch(api, f"/templates/{template['id']}", {"channel": "email"}), 400, "VALIDATION_ERROR")
    assert "channel" in body["details"]["fields"]


@pytest.mark.parametrize(
    ("field", "text", "variable"),
    [
        ("body", "Hi {{patient.age}}", "patient.age"),
        ("body", "Hi {{ patient.nickname }}!", "patient.nickname"),
        ("body", "Your deposit: {{deposit.link}}", "deposit.link"),
        ("body", "Hi {{Patient Name}}", "{{Patient Name}}"),
        ("body", "Hi {{}}", "{{}}"),
        ("body", "Hi {{patient.first_name", "{{"),
        ("body", "Hi patient.first_name}}", "}}"),
    ],
)
def test_an_unknown_variable_or_bad_braces_are_refused_naming_field_and_variable(api, field, text, variable):
    response = post(api, "/templates", {"channel": "sms", "name": "Bad", field: text})
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == [field]
    assert body["details"]["variable"] == variable
    assert api.get("/templates").json()["total"] == 0


def test_email_subject_and_html_are_checked_too(api):
    response = post(
        api,
        "/templates",
        {"channel": "email", "name": "News", "subject": "Hello {{patient.surname}}", "body": "Hi"},
    )
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["subject"] and body["details"]["variable"] == "patient.surname"

    response = post(
        api,
        "/templates",
        {"channel": "email", "name": "News", "subject": "Hello", "body": "Hi", "html": "<p>{{ practice.nam }}</p>"},
    )
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["html"] and body["details"]["variable"] == "practice.nam"


def test_an_unknown_variable_is_refused_on_update_too_and_nothing_changes(api):
    template = make_template(api)
    response = patch(api, f"/templates/{template['id']}", {"body": "Hi {{patient.age}}"})
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"body": [body["details"]["fields"]["body"][0]]}
    assert "patient.age" in body["message"]
    assert api.get(f"/templates/{template['id']}").json()["body"] == template["body"]


def test_the_opt_out_link_is_for_marketing_templates_only(api):
    response = post(
        api, "/templates", {"channel": "sms", "name": "Reminder", "category": "service", "body": "{{unsubscribe.link}}"}
    )
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["variable"] == "unsubscribe.link"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"channel": "email", "body": "Hi"}, "subject"),
        ({"channel": "sms", "body": "Hi", "subject": "Hello"}, "subject"),
        ({"channel": "sms", "body": "Hi", "html": "<p>Hi</p>"}, "html"),
        ({"channel": "sms", "body": "Hi", "providerTemplateName": "spring"}, "providerTemplateName"),
        ({"channel": "messaging_app", "body": "Hi {{unsubscribe.link}}", "language": "it"}, "providerTemplateName"),
        ({"channel": "messaging_app", "body": "Hi {{unsubscribe.link}}", "providerTemplateName": "spring"}, "language"),
        ({"channel": "messaging_app", "body": "Hi", "providerTemplateName": "spring", "language": "it"}, "body"),
        ({"channel": "messaging_app", "body": "Hi", "providerTemplateName": "Spring Promo", "language": "it"}, None),
        ({"channel": "sms", "body": "x" * 1601}, "body"),
        ({"channel": "sms", "body": "   "}, "body"),
        ({"channel": "fax", "body": "Hi"}, "channel"),
        ({"channel": "sms", "body": 7}, "body"),
    ],
)
def test_channel_rules_are_checked(api, data, field):
    body = assert_error(post(api, "/templates", {"name": "T", **data}), 400, "VALIDATION_ERROR")
    if field:
        assert field in body["details"]["fields"], body
    else:
        assert "providerTemplateName" in body["details"]["fields"]


@pytest.mark.parametrize(
    ("channel", "limit", "extra"),
    [
        ("sms", 1600, {}),
        ("telephony_messaging", 1600, {}),
        ("email", 100_000, {"subject": "News"}),
        # WhatsApp limits a template's body text to 1,024 characters (4,096 is for free-form text messages).
        ("messaging_app", 1024, {"providerTemplateName": "spring", "language": "it", "category": "service"}),
    ],
)
def test_the_body_limits_are_the_pipelines_and_the_providers_template_limit(api, channel, limit, extra):
    data = {"channel": channel, "name": "Long", **extra}
    body = assert_error(post(api, "/templates", {**data, "body": "x" * (limit + 1)}), 400, "VALIDATION_ERROR")
    assert f"{limit} characters" in body["details"]["fields"]["body"][0], body
    assert make_template(api, **data, body="x" * limit)["body"] == "x" * limit


def test_a_template_used_by_a_live_campaign_keeps_its_category(api, owner, sms):
    """Campaigns send marketing messages: a template a draft, scheduled, sending or paused campaign uses cannot
    become a service template (its messages would then go without the opt-out link)."""
    from tests.campaigns.conftest import make_campaign

    template = make_template(api)
    campaign = make_campaign(api, sms, template)
    path = f"/templates/{template['id']}"
    body = assert_error(patch(api, path, {"category": "service"}), 409, "TEMPLATE_CATEGORY_LOCKED")
    assert body["details"] == {"campaignIds": [campaign["id"]]}
    assert api.get(path).json()["category"] == "marketing"
    # Anything else may change, and a category sent unchanged is no change.
    changed = patch(api, path, {"name": "Renamed", "category": "marketing", "body": "Hello {{patient.first_name}}"})
    assert changed.status_code == 200, changed.content

    for action in ("launch", "pause"):  # scheduled or sending, then paused: still locked
        assert post(api, f"/campaigns/{campaign['id']}/{action}").status_code == 200
        assert_error(patch(api, path, {"category": "service"}), 409, "TEMPLATE_CATEGORY_LOCKED")
    assert post(api, f"/campaigns/{campaign['id']}/cancel").status_code == 200
    unlocked = patch(api, path, {"category": "service"})  # the campaign is over
    assert unlocked.status_code == 200 and unlocked.json()["category"] == "service"


# --- messaging-app approval -----------------------------------------------------------------------------------------


def whatsapp_template(api, **fields) -> dict:
    return make_template(
        api,
        channel="messaging_app",
        body="Ciao {{patient.first_name}}, the spring offer is on. Stop: {{unsubscribe.link}}",
        providerTemplateName="spring_offer",
        language="it",
        **fields,
    )


def test_messaging_app_templates_start_pending_and_are_approved_or_rejected_by_settings_managers(
    api, owner, member_factory
):
    template = whatsapp_template(api)
    assert template["approvalStatus"] == "pending"
    assert template["variables"] == ["patient.first_name", "unsubscribe.link"]

    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    refused = post(front_desk, f"/templates/{template['id']}/approval", {"status": "approved"})
    assert_error(refused, 403, "PERMISSION_DENIED")

    rejected = post(api, f"/templates/{template['id']}/approval", {"status": "rejected", "reason": "Promotional"})
    assert rejected.status_code == 200, rejected.content
    assert rejected.json()["approvalStatus"] == "rejected" and rejected.json()["approvalReason"] == "Promotional"

    approved = post(api, f"/templates/{template['id']}/approval", {"status": "approved"})
    assert approved.json()["approvalStatus"] == "approved" and approved.json()["approvalReason"] == ""
    assert approved.json()["approvalChangedAt"] is not None

    # A new name only keeps the approval; a new text is reviewed again.
    renamed = patch(api, f"/templates/{template['id']}", {"name": "Spring offer (IT)"})
    assert renamed.json()["approvalStatus"] == "approved"
    edited = patch(api, f"/templates/{template['id']}", {"body": "Ciao {{patient.first_name}}! {{unsubscribe.link}}"})
    assert edited.json()["approvalStatus"] == "pending"


def test_only_messaging_app_templates_carry_an_approval(api):
    template = make_template(api)
    body = assert_error(
        post(api, f"/templates/{template['id']}/approval", {"status": "approved"}), 400, "VALIDATION_ERROR"
    )
    assert "status" in body["details"]["fields"]


# --- rendering: preview ---------------------------------------------------------------------------------------------


def test_email_html_escapes_values_and_text_keeps_them_plain(api, owner):
    patient = PatientFactory(organization=owner.organization, first_name='<b>Ann</b> & "Co"', last_name="O'Neil")
    template = make_template(
        api,
        channel="email",
        name="News",
        subject="News for\n{{patient.first_name}}",
        body="Dear {{patient.full_name}},\nnews from {{practice.name}}.",
        html="<html><body><p>Dear {{patient.first_name}}</p></body></html>",
    )
    response = api.get(f"/templates/{template['id']}/preview?patientId={patient.id}")
    assert response.status_code == 200, response.content
    preview = response.json()
    assert preview["subject"] == 'News for\n<b>Ann</b> & "Co"'
    assert preview["body"].startswith(f'Dear <b>Ann</b> & "Co" O\'Neil,\nnews from {owner.organization.name}.')
    assert "<p>Dear &lt;b&gt;Ann&lt;/b&gt; &amp; &quot;Co&quot;</p>" in preview["html"]
    # A marketing e-mail always carries the opt-out link: appended to the text and before </body> in the HTML.
    assert "Unsubscribe: " in preview["body"]
    assert preview["html"].index('<a href="') < preview["html"].index("</body>")
    assert preview["missingVariables"] == [] and preview["providerTemplate"] is None


def test_a_subject_value_never_breaks_the_line(api, owner):
    patient = PatientFactory(organization=owner.organization, first_name="Ann\r\nBcc: x@example.com")
    template = make_template(api, channel="email", name="N", subject="Hi {{patient.first_name}}", body="Hi")
    preview = api.get(f"/templates/{template['id']}/preview?patientId={patient.id}").json()
    assert preview["subject"] == "Hi Ann Bcc: x@example.com"


def test_sms_keeps_values_plain_and_gets_the_opt_out_link(api, owner):
    patient = PatientFactory(organization=owner.organization, first_name="<Ann> & Co")
    template = make_template(api, body="Hi {{patient.first_name}}")
    preview = api.get(f"/templates/{template['id']}/preview?patientId={patient.id}").json()
    assert preview["body"].startswith("Hi <Ann> & Co\n\nOpt out: http")
    service = make_template(api, name="Reminder", category="service", body="Hi {{patient.first_name}}")
    assert api.get(f"/templates/{service['id']}/preview?patientId={patient.id}").json()["body"] == "Hi <Ann> & Co"


def test_preview_lists_variables_without_a_value(api, owner):
    patient = PatientFactory(organization=owner.organization)
    template = make_template(api, body="See you on {{appointment.date}} at {{appointment.time}}")
    preview = api.get(f"/templates/{template['id']}/preview?patientId={patient.id}").json()
    assert preview["missingVariables"] == ["appointment.date", "appointment.time"]


def test_preview_fills_the_next_appointment_in_the_practice_time_zone(api, owner):
    from datetime import timedelta

    from django.utils import timezone

    from apps.appointments.models import Appointment
    from tests.factories import PractitionerFactory

    owner.organization.timezone = "Europe/Rome"
    owner.organization.save(update_fields=["timezone"])
    patient = PatientFactory(organization=owner.organization)
    practitioner = PractitionerFactory(organization=owner.organization, name="Dr Rossi")
    starts = (timezone.now() + timedelta(days=3)).replace(hour=8, minute=30, second=0, microsecond=0)
    for offset in (timedelta(days=9), timedelta(0)):
        Appointment.objects.create(
            organization=owner.organization,
            patient=patient,
            practitioner=practitioner,
            starts_at=starts + offset,
            ends_at=starts + offset + timedelta(minutes=30),
        )
    template = make_template(
        api, body="{{appointment.date}} {{appointment.time}} with {{appointment.practitioner}}", category="service"
    )
    preview = api.get(f"/templates/{template['id']}/preview?patientId={patient.id}").json()
    local = starts.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Rome"))
    assert preview["body"] == f"{local.day} {local:%B %Y} {local:%H:%M} with Dr Rossi"
    assert preview["missingVariables"] == []


def test_messaging_app_preview_gives_the_provider_template_parameters(api, owner):
    patient = PatientFactory(organization=owner.organization, first_name="Giulia")
    template = whatsapp_template(api)
    preview = api.get(f"/templates/{template['id']}/preview?patientId={patient.id}").json()
    assert preview["providerTemplate"]["name"] == "spring_offer"
    assert preview["providerTemplate"]["language"] == "it"
    assert preview["providerTemplate"]["parameters"][0] == "Giulia"


def test_preview_of_another_practices_patient_is_refused(api, outsider):
    theirs = PatientFactory(organization=outsider.organization)
    template = make_template(api)
    body = assert_error(api.get(f"/templates/{template['id']}/preview?patientId={theirs.id}"), 400, "VALIDATION_ERROR")
    assert "patientId" in body["details"]["fields"]


# --- sending a template to one patient --------------------------------------------------------------------------------


def test_a_marketing_template_is_sent_with_consent_and_its_opt_out_link(
    api, owner, sms, django_capture_on_commit_callbacks
):
    patient = consenting_patient(owner.organization, "sms", phone_mobile="+39 333 1234567", first_name="Ann")
    template = make_template(api)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(
            api, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]}
        )
    assert response.status_code == 201, response.content
    sent = response.json()
    assert sent["purpose"] == "marketing" and sent["status"] == "queued"
    message = Message.objects.for_org(owner.organization).get(id=sent["messageId"])
    assert str(message.conversation_id) == sent["conversationId"]
    assert message.source == "template" and message.purpose == "marketing"
    assert message.body.startswith("Hi Ann, book your check-up.\n\nOpt out: http://")
    assert "/marketing/unsubscribe/" in message.body
    assert message.status == "sent" and message.sandbox  # the send task ran (eager) through the sandbox
    assert SandboxDelivery.objects.for_org(owner.organization).filter(message=message).exists()


def test_a_marketing_template_without_consent_is_refused_and_a_service_one_is_sent(api, owner, sms):
    patient = PatientFactory(organization=owner.organization, phone_mobile="+39 333 7654321")
    marketing = make_template(api)
    response = post(
        api, f"/templates/{marketing['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]}
    )
    assert assert_error(response, 409, "MESSAGE_NOT_SENT")["details"]["reason"] == "NO_CONSENT"

    service = make_template(api, name="Reminder", category="service", body="Hi {{patient.first_name}}")
    response = post(api, f"/templates/{service['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]})
    assert response.status_code == 201, response.content
    assert response.json()["purpose"] == "service"
    message = Message.objects.for_org(owner.organization).get(id=response.json()["messageId"])
    assert "unsubscribe" not in message.body


def test_a_missing_variable_stops_a_single_send(api, owner, sms):
    patient = consenting_patient(owner.organization, "sms")
    template = make_template(api, body="See you at {{appointment.time}}")
    response = post(api, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]})
    assert assert_error(response, 409, "TEMPLATE_VARIABLE_MISSING")["details"]["variable"] == "appointment.time"
    assert not Message.objects.for_org(owner.organization).exists()


def test_the_connection_must_be_of_the_templates_channel(api, owner, email):
    patient = consenting_patient(owner.organization, "sms")
    template = make_template(api)
    response = post(
        api, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": email["id"]}
    )
    assert "connectionId" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]


def test_only_an_approved_messaging_app_template_is_sent(api, owner, messaging, django_capture_on_commit_callbacks):
    patient = consenting_patient(owner.organization, "whatsapp", first_name="Giulia")
    template = whatsapp_template(api)
    data = {"patientId": str(patient.id), "connectionId": messaging["id"]}
    body = assert_error(post(api, f"/templates/{template['id']}/send", data), 409, "TEMPLATE_NOT_APPROVED")
    assert body["details"]["approvalStatus"] == "pending"
    post(api, f"/templates/{template['id']}/approval", {"status": "rejected"})
    assert_error(post(api, f"/templates/{template['id']}/send", data), 409, "TEMPLATE_NOT_APPROVED")
    assert not Message.objects.for_org(owner.organization).exists()

    post(api, f"/templates/{template['id']}/approval", {"status": "approved"})
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, f"/templates/{template['id']}/send", data)
    assert response.status_code == 201, response.content
    message = Message.objects.for_org(owner.organization).get(id=response.json()["messageId"])
    template_sent = message.outbound["template"]
    assert template_sent["name"] == "spring_offer" and template_sent["language"] == "it"
    assert template_sent["parameters"][0] == "Giulia"
    assert (
        template_sent["parameters"][1].startswith("http://")
        and "/marketing/unsubscribe/" in template_sent["parameters"][1]
    )


def test_a_merged_patient_is_409(api, owner, sms):
    survivor = consenting_patient(owner.organization, "sms")
    merged = PatientFactory(organization=owner.organization, merged_into=survivor)
    template = make_template(api)
    response = post(api, f"/templates/{template['id']}/send", {"patientId": str(merged.id), "connectionId": sms["id"]})
    assert_error(response, 409, "PATIENT_MERGED")


def test_sending_needs_inbox_work(api, owner, sms, member_factory):
    patient = consenting_patient(owner.organization, "sms")
    template = make_template(api)
    analyst = member_factory(role="analyst", organization=owner.organization).api_client()
    response = post(
        analyst, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]}
    )
    assert_error(response, 403, "PERMISSION_DENIED")
    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    grant(patient, "sms")
    response = post(
        front_desk, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]}
    )
    assert response.status_code == 201, response.content


# --- tenancy and roles ----------------------------------------------------------------------------------------------


def test_another_practices_template_is_404_on_every_route(api, owner, outsider, sms):
    theirs = make_template(outsider.api_client())
    patient = consenting_patient(owner.organization, "sms")
    before = outsider.api_client().get(f"/templates/{theirs['id']}").json()
    path = f"/templates/{theirs['id']}"
    assert_error(api.get(path), 404, "NOT_FOUND")
    assert_error(patch(api, path, {"name": "Mine now"}), 404, "NOT_FOUND")
    assert_error(api.delete(path), 404, "NOT_FOUND")
    assert_error(post(api, f"{path}/approval", {"status": "approved"}), 404, "NOT_FOUND")
    assert_error(api.get(f"{path}/preview?patientId={patient.id}"), 404, "NOT_FOUND")
    send = {"patientId": str(patient.id), "connectionId": sms["id"]}
    assert_error(post(api, f"{path}/send", send), 404, "NOT_FOUND")
    assert theirs["id"] not in [t["id"] for t in api.get("/templates").json()["items"]]
    assert outsider.api_client().get(path).json() == before
    assert not Message.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_roles_without_campaign_write_read_templates_only(api, owner, member_factory, role):
    template = make_template(api)
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert client.get("/templates").status_code == 200
    assert client.get(f"/templates/{template['id']}").status_code == 200
    assert_error(post(client, "/templates", {"channel": "sms", "name": "X", "body": "Hi"}), 403, "PERMISSION_DENIED")
    assert_error(patch(client, f"/templates/{template['id']}", {"name": "X"}), 403, "PERMISSION_DENIED")
    assert_error(client.delete(f"/templates/{template['id']}"), 403, "PERMISSION_DENIED")


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_see_no_templates(api, owner, member_factory, role):
    make_template(api)
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert_error(client.get("/templates"), 403, "PERMISSION_DENIED")


def test_a_withdrawn_consent_is_not_consent(api, owner, sms):
    patient = consenting_patient(owner.organization, "sms")
    grant(patient, "sms", status=MarketingConsent.State.WITHDRAWN)
    template = make_template(api)
    response = post(api, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]})
    assert assert_error(response, 409, "MESSAGE_NOT_SENT")["details"]["reason"] == "NO_CONSENT"


def test_the_platforms_review_decisions_reach_the_practices_templates(api, owner, outsider, messaging, client):
    """Signed callbacks of the messaging platform: a message tells which business account the number is in; a
    template review decision for that account then sets the approval of the practice's template of that name and
    language (and of no other practice's)."""
    import json as _json

    from tests.conversations.conftest import hub_signature

    mine = make_template(
        api,
        channel="messaging_app",
        body="Ciao {{patient.first_name}}",
        category="service",
        providerTemplateName="spring",
        language="it",
    )
    theirs = make_template(
        outsider.api_client(),
        channel="messaging_app",
        body="Ciao {{patient.first_name}}",
        category="service",
        providerTemplateName="spring",
        language="it",
    )

    def signed(payload):
        raw = _json.dumps(payload).encode()
        return client.post(
            "/webhooks/messaging-app",
            raw,
            content_type="application/json",
            headers={"X-Hub-Signature-256": hub_signature(raw)},
        )

    account = "102290129340398"
    message = {
        "from": "393331234567",
        "id": "wamid.T1",
        "timestamp": "1700000000",
        "type": "text",
        "text": {"body": "Ciao"},
    }
    value = {"messaging_product": "whatsapp", "metadata": {"phone_number_id": PHONE_NUMBER_ID}, "messages": [message]}
    entry = {"id": account, "changes": [{"field": "messages", "value": value}]}
    assert signed({"object": "whatsapp_business_account", "entry": [entry]}).status_code == 200

    def decision(event, reason="NONE"):
        update = {
            "event": event,
            "message_template_name": "spring",
            "message_template_language": "it",
            "reason": reason,
        }
        change = {"field": "message_template_status_update", "value": update}
        return signed({"object": "whatsapp_business_account", "entry": [{"id": account, "changes": [change]}]})

    assert decision("APPROVED").status_code == 200
    assert api.get(f"/templates/{mine['id']}").json()["approvalStatus"] == "approved"
    assert outsider.api_client().get(f"/templates/{theirs['id']}").json()["approvalStatus"] == "pending"
    assert decision("REJECTED", "INCORRECT_CATEGORY").status_code == 200
    got = api.get(f"/templates/{mine['id']}").json()
    assert (got["approvalStatus"], got["approvalReason"]) == ("rejected", "INCORRECT_CATEGORY")
