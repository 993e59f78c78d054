"""Campaigns through HTTP: drafts, launch (the audience frozen once, with skipped reasons), background release
through the sending pipeline (the release task driven directly), per-recipient status from the messages, the status
machine and its 409s, tenancy and roles."""

import json
import time
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.utils import timezone

from apps.campaigns.models import Campaign, CampaignRecipient, MessageTemplate
from apps.campaigns.tasks import release_campaign, sweep
from apps.conversations.models import ContactBlock, Message
from apps.events.models import Event
from apps.patients.models import Patient
from tests.campaigns.conftest import (
    SMS_AUTH_TOKEN,
    SMS_NUMBER,
    consenting_patient,
    grant,
    make_campaign,
    make_template,
    patch,
    post,
)
from tests.conversations.conftest import twilio_signature
from tests.factories import PatientFactory, TagFactory
from tests.helpers import assert_error


def launch(api, campaign: dict, **limits):
    response = post(api, f"/campaigns/{campaign['id']}/launch", limits)
    assert response.status_code == 200, response.content
    return response.json()


def recipients(api, campaign: dict, **query) -> list[dict]:
    response = api.get(f"/campaigns/{campaign['id']}/recipients?{urlencode({'limit': 100, **query})}")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def by_patient(rows: list[dict]) -> dict:
    return {row["patientId"]: row for row in rows}


def detail(api, campaign: dict) -> dict:
    response = api.get(f"/campaigns/{campaign['id']}")
    assert response.status_code == 200, response.content
    return response.json()


# --- drafts -----------------------------------------------------------------------------------------------------------


def test_create_read_list_update_and_delete_a_draft(api, sms):
    template = make_template(api)
    created = make_campaign(api, sms, template, audience={"filters": {"status": ["patient"], "hasPhone": True}})
    assert created["status"] == "draft" and created["channel"] == "sms"
    assert created["audience"] == {"savedViewId": None, "filters": {"status": ["patient"], "hasPhone": True}}
    assert created["totals"]["recipients"] == 0 and created["skippedReasons"] == {}

    assert api.get("/campaigns").json()["items"][0]["id"] == created["id"]
    assert api.get("/campaigns?status=sending").json()["total"] == 0

    changed = patch(api, f"/campaigns/{created['id']}", {"name": "Autumn", "audience": {"filters": {}}})
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "Autumn" and changed.json()["audience"]["filters"] == {}

    assert api.delete(f"/campaigns/{created['id']}").status_code == 204
    assert_error(api.get(f"/campaigns/{created['id']}"), 404, "NOT_FOUND")


def test_draft_validation(api, owner, sms, email, outsider, member_factory):
    template = make_template(api)
    base = {"name": "C", "connectionId": sms["id"], "templateId": template["id"], "audience": {"filters": {}}}

    def refused(data, field):
        body = assert_error(post(api, "/campaigns", {**base, **data}), 400, "VALIDATION_ERROR")
        assert field in json.dumps(body["details"]["fields"]), body

    refused({"connectionId": email["id"]}, "templateId")  # an sms template on an e-mail connection
    service = make_template(api, name="Reminder", category="service")
    refused({"templateId": service["id"]}, "templateId")
    theirs = make_template(outsider.api_client())
    refused({"templateId": theirs["id"]}, "templateId")
    refused({"audience": {}}, "audience")
    refused({"audience": {"filters": {}, "savedViewId": None}}, "audience")
    refused({"audience": {"filters": {"status": ["nobody"]}}}, "status")
    refused({"audience": {"filters": {"unknownKey": True}}}, "unknownKey")
    colleague = member_factory(role="manager", organization=owner.organization)
    private = post(colleague.api_client(), "/saved-views", {"name": "Mine", "filters": {}}).json()
    refused({"audience": {"savedViewId": private["id"]}}, "savedViewId")
    refused({"scheduledAt": "2030-01-01T10:00:00"}, "scheduledAt")
    assert api.get("/campaigns").json()["total"] == 0


@pytest.mark.parametrize(
    "custom_fields",
    [
        {"a\u0000b": 1},  # NUL in a key
        {"insurer": "Acme\u0000"},  # NUL in a value
        {"insurer": "\ud800"},  # a lone surrogate
        {"\udc00": True},
        {"insurer": ["ok", {"deep": "x\u0000"}]},  # at any depth
    ],
)
def test_filters_postgresql_cannot_store_are_400_naming_the_field(api, owner, sms, custom_fields):
    """JSON accepts NUL and unpaired surrogates in any string, a JSON column does not: 400, never a DataError 500."""
    template = make_template(api)
    audience = {"filters": {"customFields": custom_fields}}
    base = {"name": "C", "connectionId": sms["id"], "templateId": template["id"]}
    body = assert_error(post(api, "/campaigns", {**base, "audience": audience}), 400, "VALIDATION_ERROR")
    assert "customFields" in body["details"]["fields"]["audience"]["filters"], body
    assert api.get("/campaigns").json()["total"] == 0

    draft = make_campaign(api, sms, template)
    body = assert_error(patch(api, f"/campaigns/{draft['id']}", {"audience": audience}), 400, "VALIDATION_ERROR")
    assert "customFields" in body["details"]["fields"]["audience"]["filters"], body
    assert detail(api, draft)["audience"]["filters"] == {}


# --- launch: the audience frozen once, with skipped reasons -----------------------------------------------------------


def test_launch_freezes_the_filtered_audience_with_skipped_reasons(api, owner, outsider, sms):
    org = owner.organization
    ok = consenting_patient(org, "sms", phone_mobile="+39 333 000 0001")
    national = consenting_patient(org, "sms", phone_mobile="333 000 0002")  # read in the SMS number's country
    no_phone = consenting_patient(org, "sms", phone_mobile=None, email="only@example.com")
    opted_out = consenting_patient(org, "sms", phone_mobile="+39 333 000 0003", sms_opt_out=True)
    no_consent = PatientFactory(organization=org, phone_mobile="+39 333 000 0004")
    withdrawn = consenting_patient(org, "sms", phone_mobile="+39 333 000 0005")
    grant(withdrawn, "sms", status="withdrawn")
    blocked = consenting_patient(org, "sms", phone_mobile="+39 333 000 0006")
    ContactBlock.objects.create(organization=org, channel="sms", address="+393330000006", reason="stop_keyword")
    deceased = consenting_patient(org, "sms", phone_mobile="+39 333 000 0007", status="deceased")
    consenting_patient(org, "sms", archived_at=timezone.now())  # archived: not in the audience at all
    consenting_patient(outsider.organization, "sms")  # another practice: never

    campaign = make_campaign(api, sms, make_template(api))
    launched = launch(api, campaign)

    assert launched["status"] == "sending" and launched["launchedAt"] is not None
    assert launched["totals"]["recipients"] == 8
    assert launched["totals"]["pending"] == 2 and launched["totals"]["skipped"] == 6
    assert launched["skippedReasons"] == {
        "NO_ADDRESS": 1,
        "OPTED_OUT": 1,
        "NO_CONSENT": 2,
        "CONTACT_BLOCKED": 1,
        "PATIENT_INACTIVE": 1,
    }
    rows = by_patient(recipients(api, campaign))
    assert rows[str(ok.id)]["status"] == "pending" and rows[str(ok.id)]["address"] == "+393330000001"
    assert rows[str(national.id)]["address"] == "+393330000002"
    assert rows[str(no_phone.id)]["skipReason"] == "NO_ADDRESS" and rows[str(no_phone.id)]["address"] == ""
    assert rows[str(opted_out.id)]["skipReason"] == "OPTED_OUT"
    assert rows[str(no_consent.id)]["skipReason"] == "NO_CONSENT"
    assert rows[str(withdrawn.id)]["skipReason"] == "NO_CONSENT"
    assert rows[str(blocked.id)]["skipReason"] == "CONTACT_BLOCKED"
    assert rows[str(deceased.id)]["skipReason"] == "PATIENT_INACTIVE"
    assert rows[str(ok.id)]["patientName"] == f"{ok.first_name} {ok.last_name}"
    assert [r["patientId"] for r in recipients(api, campaign, status="skipped")].count(str(ok.id)) == 0


def test_an_email_campaign_skips_suppressed_addresses(api, owner, email):
    org = owner.organization
    fine = consenting_patient(org, "email", email="Fine@Example.com")
    bounced = consenting_patient(org, "email", email="bounced@example.com")
    ContactBlock.objects.create(organization=org, channel="email", address="bounced@example.com", reason="email_bounce")
    template = make_template(api, channel="email", subject="News", body="Hi {{patient.first_name}}")
    campaign = make_campaign(api, email, template)
    launch(api, campaign)
    rows = by_patient(recipients(api, campaign))
    assert rows[str(fine.id)]["status"] == "pending" and rows[str(fine.id)]["address"] == "fine@example.com"
    assert rows[str(bounced.id)]["skipReason"] == "ADDRESS_SUPPRESSED"


def test_a_saved_view_audience_is_frozen_at_launch(api, owner, sms):
    org = owner.organization
    vip = TagFactory(organization=org, name="VIP")
    tagged = consenting_patient(org, "sms", tags=[vip])
    consenting_patient(org, "sms")  # not tagged
    view = post(api, "/saved-views", {"name": "VIPs", "filters": {"tagIds": {"any": [str(vip.id)]}}}).json()
    campaign = make_campaign(api, sms, make_template(api), audience={"savedViewId": view["id"]})
    assert campaign["audience"] == {"savedViewId": view["id"], "filters": None}

    launch(api, campaign)
    assert [r["patientId"] for r in recipients(api, campaign)] == [str(tagged.id)]

    # After launch: a newly tagged patient, a new patient, and the view's filters changed: none of it counts.
    later = consenting_patient(org, "sms", tags=[vip])
    consenting_patient(org, "sms")
    patch(api, f"/saved-views/{view['id']}", {"filters": {}})
    Patient.objects.for_org(org).filter(id=tagged.id).update(sms_opt_out=True)
    rows = recipients(api, campaign)
    assert [r["patientId"] for r in rows] == [str(tagged.id)] and rows[0]["status"] == "pending"
    assert str(later.id) not in {r["patientId"] for r in rows}
    assert detail(api, campaign)["totals"]["recipients"] == 1


def test_filters_audience_is_frozen_at_launch(api, owner, sms):
    org = owner.organization
    first = consenting_patient(org, "sms", status="patient")
    consenting_patient(org, "sms", status="lead")
    campaign = make_campaign(api, sms, make_template(api), audience={"filters": {"status": ["patient"]}})
    launch(api, campaign)
    consenting_patient(org, "sms", status="patient")
    assert [r["patientId"] for r in recipients(api, campaign)] == [str(first.id)]


def test_launch_refusals(api, owner, sms, member_factory):
    template = make_template(api)
    colleague = member_factory(role="manager", organization=owner.organization)
    view = post(colleague.api_client(), "/saved-views", {"name": "Shared", "filters": {}, "shared": True}).json()
    campaign = make_campaign(api, sms, template, audience={"savedViewId": view["id"]})

    # The template cannot go while a draft uses it.
    assert_error(api.delete(f"/templates/{template['id']}"), 409, "TEMPLATE_IN_USE")
    # The view is no longer shared with the launcher.
    patch(colleague.api_client(), f"/saved-views/{view['id']}", {"shared": False})
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/launch", {}), 409, "CAMPAIGN_NOT_READY")
    assert body["details"]["field"] == "audience"
    # The view is deleted.
    colleague.api_client().delete(f"/saved-views/{view['id']}")
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/launch", {}), 409, "CAMPAIGN_NOT_READY")
    assert body["details"]["field"] == "audience"
    # The connection is disconnected.
    patch(api, f"/campaigns/{campaign['id']}", {"audience": {"filters": {}}})
    assert api.delete(f"/settings/channel-connections/{sms['id']}").status_code in (200, 204)
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/launch", {}), 409, "CAMPAIGN_NOT_READY")
    assert body["details"]["field"] == "connectionId"
    assert detail(api, campaign)["status"] == "draft"
    assert not CampaignRecipient.objects.for_org(owner.organization).exists()


def test_launch_refuses_a_template_that_is_no_longer_marketing(api, owner, sms):
    """The category is checked again at launch, whatever it was when the draft was saved (a change that raced the
    draft's save, or a template changed before the category was locked)."""
    consenting_patient(owner.organization, "sms")
    template = make_template(api)
    campaign = make_campaign(api, sms, template)
    MessageTemplate.objects.for_org(owner.organization).filter(id=template["id"]).update(category="service")
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/launch", {}), 409, "CAMPAIGN_NOT_READY")
    assert body["details"]["field"] == "templateId" and "marketing" in body["details"]["problem"]
    assert detail(api, campaign)["status"] == "draft"
    assert not CampaignRecipient.objects.for_org(owner.organization).exists()


def test_a_campaign_always_sends_marketing_messages_with_the_opt_out_link(api, owner, sms):
    """A campaign launched with a service template (before launch checked the category) still renders marketing
    messages: the release queues them as marketing, so they carry the opt-out link."""
    patient = consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    stored = Campaign.objects.for_org(owner.organization).get(id=campaign["id"])
    stored.content = {**stored.content, "category": "service"}
    stored.save(update_fields=["content"])
    assert release_campaign(campaign["id"]) == 1
    message = Message.objects.for_org(owner.organization).get(conversation__patient=patient)
    assert message.purpose == "marketing" and "/marketing/unsubscribe/" in message.body


def test_a_messaging_app_campaign_needs_an_approved_template(api, owner, messaging):
    template = make_template(
        api,
        channel="messaging_app",
        body="Ciao {{patient.first_name}} {{unsubscribe.link}}",
        providerTemplateName="spring",
        language="it",
    )
    campaign = make_campaign(api, messaging, template)
    assert_error(post(api, f"/campaigns/{campaign['id']}/launch", {}), 409, "TEMPLATE_NOT_APPROVED")
    post(api, f"/templates/{template['id']}/approval", {"status": "approved"})
    consenting_patient(owner.organization, "whatsapp")
    assert launch(api, campaign)["totals"]["pending"] == 1


def test_launch_body_is_validated(api, sms):
    campaign = make_campaign(api, sms, make_template(api))
    for body in ({"hourlyLimit": 0}, {"dailyLimit": -1}, {"hourlyLimit": "ten"}, {"pace": 1}):
        assert_error(post(api, f"/campaigns/{campaign['id']}/launch", body), 400, "VALIDATION_ERROR")
    assert detail(api, campaign)["status"] == "draft"


# --- release: through the sending pipeline ----------------------------------------------------------------------------


def test_release_sends_through_the_pipeline_and_statuses_follow_the_messages(
    client, api, owner, sms, django_capture_on_commit_callbacks
):
    org = owner.organization
    patients = [consenting_patient(org, "sms", first_name=f"P{n}") for n in range(3)]
    skipped = PatientFactory(organization=org)  # no consent
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)

    with django_capture_on_commit_callbacks(execute=True):
        assert release_campaign(campaign["id"]) == 3

    after = detail(api, campaign)
    assert after["status"] == "completed" and after["completedAt"] is not None
    assert after["totals"] | {} == {**after["totals"], "recipients": 4, "sent": 3, "skipped": 1, "pending": 0}
    rows = by_patient(recipients(api, campaign))
    messages = {
        m.conversation.patient_id: m
        for m in Message.objects.for_org(org).filter(source="campaign").select_related("conversation")
    }
    for patient in patients:
        row, message = rows[str(patient.id)], messages[patient.id]
        assert row["status"] == "sent" and row["messageId"] == str(message.id) and row["releasedAt"] is not None
        assert message.purpose == "marketing" and message.body.startswith(f"Hi {patient.first_name}, book your")
        assert "/marketing/unsubscribe/" in message.body
    assert rows[str(skipped.id)]["status"] == "skipped"

    # Provider callbacks move the messages on; the recipients follow without campaign code.
    path = f"/webhooks/sms/{sms['routingToken']}/status"
    for patient, status in zip(patients[:2], ("delivered", "failed"), strict=True):
        message = messages[patient.id]
        params = {
            "MessageSid": message.provider_message_id,
            "MessageStatus": status,
            "From": SMS_NUMBER,
            "To": message.outbound["to"],
        }
        if status == "failed":
            params["ErrorCode"] = "30006"
        signature = twilio_signature(SMS_AUTH_TOKEN, "http://testserver" + path, params)
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(
                path, urlencode(params), content_type="application/x-www-form-urlencoded",
                headers={"X-Twilio-Signature": signature},
            )  # fmt: skip
        assert answer.status_code == 200, answer.content
    rows = by_patient(recipients(api, campaign))
    assert rows[str(patients[0].id)]["status"] == "delivered"
    assert rows[str(patients[1].id)]["status"] == "failed" and rows[str(patients[1].id)]["errorCode"] == "30006"
    totals = detail(api, campaign)["totals"]
    assert (totals["delivered"], totals["failed"], totals["sent"], totals["skipped"]) == (1, 1, 1, 1)
    assert [r["patientId"] for r in recipients(api, campaign, status="delivered")] == [str(patients[0].id)]


def test_a_block_after_launch_is_caught_at_release(api, owner, sms):
    org = owner.organization
    patient = consenting_patient(org, "sms", phone_mobile="+39 333 111 2222")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    ContactBlock.objects.create(organization=org, channel="sms", address="+393331112222", reason="stop_keyword")
    release_campaign(campaign["id"])
    row = by_patient(recipients(api, campaign))[str(patient.id)]
    assert row["status"] == "skipped" and row["skipReason"] == "CONTACT_BLOCKED"
    assert detail(api, campaign)["status"] == "completed"


def test_a_missing_variable_skips_that_recipient_only(api, owner, sms):
    from apps.appointments.models import Appointment
    from tests.factories import PractitionerFactory

    org = owner.organization
    with_appointment = consenting_patient(org, "sms")
    without = consenting_patient(org, "sms")
    start = timezone.now() + timedelta(days=2)
    Appointment.objects.create(
        organization=org,
        patient=with_appointment,
        practitioner=PractitionerFactory(organization=org),
        starts_at=start,
        ends_at=start + timedelta(minutes=30),
    )
    campaign = make_campaign(api, sms, make_template(api, body="See you at {{appointment.time}}"))
    launch(api, campaign)
    release_campaign(campaign["id"])
    rows = by_patient(recipients(api, campaign))
    assert rows[str(with_appointment.id)]["status"] == "queued"
    assert rows[str(without.id)]["status"] == "skipped" and rows[str(without.id)]["skipReason"] == "VARIABLE_MISSING"


def test_a_disconnected_connection_pauses_the_campaign_and_keeps_recipients_pending(api, owner, sms):
    consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    api.delete(f"/settings/channel-connections/{sms['id']}")
    assert release_campaign(campaign["id"]) == 0
    after = detail(api, campaign)
    assert after["status"] == "paused" and after["pauseReason"] == "CONNECTION_UNAVAILABLE"
    assert after["totals"]["pending"] == 1 and after["totals"]["skipped"] == 0


# --- pacing: hourly and daily caps across release runs ----------------------------------------------------------------


def at(day: int, hour: int, minute: int = 0) -> str:
    return f"2031-03-{day:02d}T{hour:02d}:{minute:02d}:00+00:00"


def test_hourly_and_daily_caps_are_respected_across_release_runs(api, owner, sms):
    for _ in range(8):
        consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launched = launch(api, campaign, hourlyLimit=3, dailyLimit=5)
    assert (launched["hourlyLimit"], launched["dailyLimit"]) == (3, 5)

    def released() -> int:
        return 8 - detail(api, campaign)["totals"]["pending"]

    assert release_campaign(campaign["id"], now=at(10, 10, 15)) == 3
    assert released() == 3
    assert release_campaign(campaign["id"], now=at(10, 10, 50)) == 0  # the hour is full
    assert detail(api, campaign)["nextReleaseAt"] == "2031-03-10T11:00:00.000000Z"
    assert release_campaign(campaign["id"], now=at(10, 11, 5)) == 2  # the day's 5 reached
    assert release_campaign(campaign["id"], now=at(10, 12, 5)) == 0
    assert detail(api, campaign)["nextReleaseAt"] == "2031-03-11T00:00:00.000000Z"
    assert released() == 5 and detail(api, campaign)["status"] == "sending"
    assert release_campaign(campaign["id"], now=at(11, 0, 30)) == 3
    after = detail(api, campaign)
    assert released() == 8 and after["status"] == "completed" and after["nextReleaseAt"] is None
    by_hour = sorted(CampaignRecipient.objects.for_org(owner.organization).values_list("released_at", flat=True))
    assert [t.isoformat() for t in by_hour].count("2031-03-10T10:15:00+00:00") == 3


def test_pacing_counts_in_the_practice_time_zone(api, owner, sms):
    owner.organization.timezone = "Europe/Rome"  # UTC+1 in March 2031 (before the 30th)
    owner.organization.save(update_fields=["timezone"])
    for _ in range(3):
        consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign, dailyLimit=2)
    assert release_campaign(campaign["id"], now=at(10, 22, 30)) == 2  # 23:30 in Rome
    assert release_campaign(campaign["id"], now=at(10, 22, 50)) == 0
    assert detail(api, campaign)["nextReleaseAt"] == "2031-03-10T23:00:00.000000Z"  # Rome's midnight
    assert release_campaign(campaign["id"], now=at(10, 23, 5)) == 1


def test_nothing_is_released_during_quiet_hours(api, owner, sms):
    """The practice's quiet hours (its messaging settings, in its time zone) stop the release: the night's allowance
    is not spent on messages the pipeline would hold and send all together at the end of the quiet hours."""
    quiet = {"quietHoursEnabled": True, "quietHoursStart": "21:00", "quietHoursEnd": "08:00"}
    assert api.put("/settings/messaging", json.dumps(quiet), content_type="application/json").status_code == 200
    owner.organization.timezone = "Europe/Rome"  # UTC+1 in March 2031
    owner.organization.save(update_fields=["timezone"])
    for _ in range(3):
        consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign, hourlyLimit=2)

    assert release_campaign(campaign["id"], now=at(10, 21, 30)) == 0  # 22:30 in Rome
    during = detail(api, campaign)
    assert during["status"] == "sending" and during["totals"]["pending"] == 3
    assert during["nextReleaseAt"] == "2031-03-11T07:00:00.000000Z"  # 08:00 in Rome
    assert not Message.objects.for_org(owner.organization).exists()
    from apps.campaigns import release

    assert release.sweep(now=timezone.datetime.fromisoformat(at(11, 6, 30))) == []  # waits for nextReleaseAt
    assert release_campaign(campaign["id"], now=at(11, 6, 59)) == 0  # 07:59: still quiet
    # At 08:00 the hour's whole allowance is there (none was spent overnight), and the messages are not held.
    assert release_campaign(campaign["id"], now=at(11, 7, 0)) == 2
    assert set(Message.objects.for_org(owner.organization).values_list("held_reason", flat=True)) == {""}
    assert release_campaign(campaign["id"], now=at(11, 8, 0)) == 1
    assert detail(api, campaign)["status"] == "completed"


def test_skipped_recipients_do_not_use_up_the_pacing(api, owner, sms):
    fine = consenting_patient(owner.organization, "sms")
    numbers = ["+39 333 999 0001", "+39 333 999 0002", "+39 333 999 0003"]
    for number in numbers:
        consenting_patient(owner.organization, "sms", phone_mobile=number)
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign, hourlyLimit=1)
    for number in numbers:  # blocked after launch: skipped at release
        address = "+" + "".join(ch for ch in number if ch.isdigit())
        ContactBlock.objects.create(organization=owner.organization, channel="sms", address=address, reason="x")

    # Whatever order the recipients come in, the hour's one message goes to the patient it can reach.
    assert release_campaign(campaign["id"], now=at(10, 9)) == 1
    assert by_patient(recipients(api, campaign))[str(fine.id)]["status"] == "queued"
    assert release_campaign(campaign["id"], now=at(10, 10)) == 0
    after = detail(api, campaign)
    assert after["totals"]["skipped"] == 3 and after["status"] == "completed"


# --- the status machine -----------------------------------------------------------------------------------------------


def test_pause_resume_and_cancel(api, owner, sms):
    for _ in range(3):
        consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign, hourlyLimit=1)
    assert release_campaign(campaign["id"], now=at(10, 9)) == 1

    paused = post(api, f"/campaigns/{campaign['id']}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused" and paused.json()["pausedAt"]
    assert release_campaign(campaign["id"], now=at(10, 11)) == 0  # nothing while paused

    resumed = post(api, f"/campaigns/{campaign['id']}/resume")
    assert resumed.json()["status"] == "sending" and resumed.json()["pausedAt"] is None
    assert release_campaign(campaign["id"], now=at(10, 11)) == 1

    cancelled = post(api, f"/campaigns/{campaign['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["cancelledAt"]
    totals = cancelled.json()["totals"]
    # The two released messages were still queued (no worker ran): withdrawn with the one still pending.
    assert (totals["queued"], totals["cancelled"], totals["pending"], totals["recipients"]) == (0, 3, 0, 3)
    assert release_campaign(campaign["id"], now=at(10, 13)) == 0


def test_cancel_withdraws_the_messages_still_queued(api, owner, sms, django_capture_on_commit_callbacks):
    org = owner.organization
    for _ in range(4):
        consenting_patient(org, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign, hourlyLimit=1)
    with django_capture_on_commit_callbacks(execute=True):  # released and sent by the (eager) worker
        assert release_campaign(campaign["id"], now=at(10, 9)) == 1
    assert release_campaign(campaign["id"], now=at(10, 10)) == 1  # released, waiting for its first send
    assert release_campaign(campaign["id"], now=at(10, 11)) == 1  # released, then held for the quiet hours
    waiting = Message.objects.for_org(org).filter(source="campaign", status="queued")
    held = waiting.order_by("created_at", "id").last()
    Message.objects.for_org(org).filter(id=held.id).update(
        held_reason="QUIET_HOURS", next_attempt_at=timezone.now() + timedelta(hours=8)
    )
    assert waiting.count() == 2
    before = detail(api, campaign)["totals"]
    assert (before["sent"], before["queued"], before["pending"]) == (1, 2, 1)

    with django_capture_on_commit_callbacks(execute=True):
        cancelled = post(api, f"/campaigns/{campaign['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.content
    totals = cancelled.json()["totals"]
    assert (totals["sent"], totals["queued"], totals["cancelled"], totals["pending"]) == (1, 0, 3, 0)
    assert totals["recipients"] == 4 == sum(v for k, v in totals.items() if k != "recipients")
    assert not waiting.exists()
    withdrawn = Message.objects.for_org(org).filter(source="campaign", status="failed")
    assert sorted(withdrawn.values_list("error_code", flat=True)) == ["CAMPAIGN_CANCELLED"] * 2
    rows = recipients(api, campaign, status="cancelled")
    assert len(rows) == 3
    assert sorted(str(r["messageId"]) for r in rows if r["messageId"]) == sorted(str(m.id) for m in withdrawn)
    assert {r["errorCode"] for r in rows if r["messageId"]} == {"CAMPAIGN_CANCELLED"}
    # Each withdrawn message said so (message.status_changed, queued → failed).
    changed = Event.objects.for_org(org).filter(
        type="message.status_changed", subject_id__in=[str(m.id) for m in withdrawn]
    )
    assert (
        sorted((e.data["previousStatus"], e.data["status"], e.data["errorCode"]) for e in changed)
        == [("queued", "failed", "CAMPAIGN_CANCELLED")] * 2
    )


def _waiting_for_a_lock() -> bool:
    """Whether another session of this test database waits for a lock (the batch's thread, here)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
            "AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_a_batch_that_starts_during_a_pause_waits_for_it_and_releases_nothing(api, owner, sms):
    """A run reserved its batch, then a pause came: the batch reads the campaign's status under a share lock, so it
    waits for the pause to commit and then releases nothing (it used to read the status without a lock, see
    `sending`, and queue the whole batch after the pause had answered)."""
    import threading

    from django.db import connection, transaction

    from apps.campaigns import release

    for _ in range(3):
        consenting_patient(owner.organization, "sms")
    # Launched for later and started by hand as the sweep starts it, so that no release runs on its own (the commit
    # of a launch for now would run one at once: Celery is eager in tests).
    later = (timezone.now() + timedelta(days=1)).isoformat()
    campaign = make_campaign(api, sms, make_template(api), scheduledAt=later)
    launch(api, campaign, hourlyLimit=3)
    Campaign.objects.for_org(owner.organization).filter(id=campaign["id"]).update(status="sending")
    now = timezone.now()
    reservation = release._reserve(campaign["id"], now)
    assert reservation.count == 3

    outcome = {}

    def batch():
        try:
            outcome["result"] = release._release_batch(campaign["id"], reservation.count, now)
        finally:
            connection.close()

    worker = threading.Thread(target=batch)
    with transaction.atomic():  # the pause's transaction stays open until the batch has started
        paused = post(api, f"/campaigns/{campaign['id']}/pause")
        assert paused.status_code == 200, paused.content
        worker.start()
        deadline = time.monotonic() + 30
        while worker.is_alive() and not _waiting_for_a_lock() and time.monotonic() < deadline:
            time.sleep(0.01)
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert outcome["result"] == release.BatchResult(0, 0, 0)
    after = detail(api, campaign)
    assert after["status"] == "paused" and after["totals"]["pending"] == 3 and after["totals"]["queued"] == 0
    assert not Message.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize(
    ("status", "action", "allowed"),
    [
        ("draft", "pause", ["scheduled", "sending"]),
        ("draft", "resume", ["paused"]),
        ("draft", "cancel", ["scheduled", "sending", "paused"]),
        ("sending", "launch", ["draft"]),
        ("sending", "resume", ["paused"]),
        ("paused", "pause", ["scheduled", "sending"]),
        ("completed", "cancel", ["scheduled", "sending", "paused"]),
        ("completed", "pause", ["scheduled", "sending"]),
        ("cancelled", "resume", ["paused"]),
        ("cancelled", "launch", ["draft"]),
    ],
)
def test_illegal_moves_are_409_and_change_nothing(api, owner, sms, status, action, allowed):
    campaign = make_campaign(api, sms, make_template(api))
    Campaign.objects.for_org(owner.organization).filter(id=campaign["id"]).update(status=status)
    before = detail(api, campaign)
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/{action}"), 409, "CAMPAIGN_TRANSITION_NOT_ALLOWED")
    assert body["details"] == {"action": body["details"]["action"], "status": status, "allowedFrom": allowed}
    assert detail(api, campaign) == before


def test_a_launched_campaign_is_not_edited_or_deleted(api, owner, sms):
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    assert_error(patch(api, f"/campaigns/{campaign['id']}", {"name": "X"}), 409, "CAMPAIGN_NOT_EDITABLE")
    assert_error(api.delete(f"/campaigns/{campaign['id']}"), 409, "CAMPAIGN_NOT_EDITABLE")


def test_a_scheduled_campaign_waits_for_its_time(api, owner, sms):
    consenting_patient(owner.organization, "sms")
    when = timezone.now() + timedelta(hours=2)
    campaign = make_campaign(api, sms, make_template(api), scheduledAt=when.isoformat())
    launched = launch(api, campaign)
    assert launched["status"] == "scheduled" and launched["totals"]["pending"] == 1  # frozen at launch
    assert release_campaign(campaign["id"]) == 0
    sweep()  # not yet
    assert detail(api, campaign)["status"] == "scheduled"
    Campaign.objects.for_org(owner.organization).filter(id=campaign["id"]).update(
        scheduled_at=timezone.now() - timedelta(seconds=1)
    )
    sweep()  # the beat task: its time has come; it asks for the release (run at once: Celery is eager in tests)
    after = detail(api, campaign)
    assert after["status"] == "completed" and after["totals"]["queued"] == 1


def test_the_sweep_restarts_a_campaign_whose_window_opened(api, owner, sms):
    consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    from apps.campaigns import release

    assert release.sweep() == []  # just launched: its runs are alive
    Campaign.objects.for_org(owner.organization).filter(id=campaign["id"]).update(
        release_heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    assert release.sweep() == [Campaign.objects.for_org(owner.organization).get(id=campaign["id"]).id]


# --- tenancy and roles ------------------------------------------------------------------------------------------------


def test_another_practices_campaign_is_404_on_every_route(api, owner, outsider):
    their_api = outsider.api_client()
    from tests.campaigns.conftest import connect

    their_sms = connect(their_api, "sms", "+390287654321", {"accountSid": "AC" + "1" * 32, "authToken": "t"})
    consenting_patient(outsider.organization, "sms")
    theirs = make_campaign(their_api, their_sms, make_template(their_api))
    path = f"/campaigns/{theirs['id']}"
    assert_error(api.get(path), 404, "NOT_FOUND")
    assert_error(patch(api, path, {"name": "Mine"}), 404, "NOT_FOUND")
    assert_error(api.delete(path), 404, "NOT_FOUND")
    for action in ("launch", "pause", "resume", "cancel", "test-send"):
        assert_error(post(api, f"{path}/{action}"), 404, "NOT_FOUND")
    assert_error(api.get(f"{path}/recipients"), 404, "NOT_FOUND")
    assert theirs["id"] not in [c["id"] for c in api.get("/campaigns").json()["items"]]
    assert detail(their_api, theirs)["status"] == "draft"
    assert not CampaignRecipient.objects.for_org(outsider.organization).exists()


def test_another_practices_connection_template_or_view_cannot_be_used(api, owner, outsider, sms):
    their_api = outsider.api_client()
    from tests.campaigns.conftest import connect

    their_sms = connect(their_api, "sms", "+390287654321", {"accountSid": "AC" + "1" * 32, "authToken": "t"})
    their_view = post(their_api, "/saved-views", {"name": "Theirs", "filters": {}, "shared": True}).json()
    template = make_template(api)
    for data, field in (
        ({"connectionId": their_sms["id"]}, "connectionId"),
        ({"audience": {"savedViewId": their_view["id"]}}, "savedViewId"),
    ):
        body = {"name": "C", "connectionId": sms["id"], "templateId": template["id"], "audience": {"filters": {}}}
        response = post(api, "/campaigns", {**body, **data})
        assert field in json.dumps(assert_error(response, 400, "VALIDATION_ERROR")["details"]), response.content


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_read_only_roles(api, owner, sms, member_factory, role):
    consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert client.get("/campaigns").status_code == 200
    assert client.get(f"/campaigns/{campaign['id']}").status_code == 200
    assert client.get(f"/campaigns/{campaign['id']}/recipients").status_code == 200
    data = {"name": "C", "connectionId": sms["id"], "templateId": campaign["templateId"], "audience": {"filters": {}}}
    assert_error(post(client, "/campaigns", data), 403, "PERMISSION_DENIED")
    assert_error(patch(client, f"/campaigns/{campaign['id']}", {"name": "X"}), 403, "PERMISSION_DENIED")
    assert_error(client.delete(f"/campaigns/{campaign['id']}"), 403, "PERMISSION_DENIED")
    for action in ("launch", "pause", "resume", "cancel", "test-send"):
        assert_error(post(client, f"/campaigns/{campaign['id']}/{action}"), 403, "PERMISSION_DENIED")
    assert detail(api, campaign)["status"] == "draft"


@pytest.mark.parametrize("role", ["dentist", "nurse"])
def test_clinical_roles_see_no_campaigns(api, owner, sms, member_factory, role):
    campaign = make_campaign(api, sms, make_template(api))
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert_error(client.get("/campaigns"), 403, "PERMISSION_DENIED")
    assert_error(client.get(f"/campaigns/{campaign['id']}/recipients"), 403, "PERMISSION_DENIED")


def test_a_manager_runs_campaigns(api, owner, sms, member_factory):
    consenting_patient(owner.organization, "sms")
    manager = member_factory(role="manager", organization=owner.organization).api_client()
    campaign = make_campaign(manager, sms, make_template(manager))
    assert launch(manager, campaign)["status"] == "sending"


# --- patient erasure and merge ----------------------------------------------------------------------------------------


def test_erasing_a_patient_removes_their_recipient_row(api, owner, sms):
    patient = consenting_patient(owner.organization, "sms")
    consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    assert api.delete(f"/patients/{patient.id}").status_code == 200
    assert str(patient.id) not in by_patient(recipients(api, campaign))
    assert detail(api, campaign)["totals"]["recipients"] == 1


def test_a_merged_away_patient_is_not_sent_to(api, owner, sms):
    survivor = consenting_patient(owner.organization, "sms")
    duplicate = consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    launch(api, campaign)
    merged = post(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})
    assert merged.status_code == 200, merged.content
    rows = by_patient(recipients(api, campaign))
    assert rows[str(duplicate.id)]["skipReason"] == "PATIENT_MERGED"
    assert rows[str(survivor.id)]["status"] == "pending"
