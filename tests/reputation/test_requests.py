"""Review requests: sent through the conversations pipeline (marketing: consent, opt-outs and blocks respected; a
refusal is 409 with the reason and nothing is stored), the link in the message, list and read, validation."""

import re
from datetime import timedelta

from apps.conversations.models import ContactBlock, Message
from apps.reputation.models import ReviewRequest
from tests.appointments.helpers import make_appointment
from tests.campaigns.conftest import grant
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.reputation.conftest import patch_json, post_json


def ask(api, patient, location, **fields):
    body = {"patientId": str(patient.id), "locationId": str(location.id), "channel": "sms"} | fields
    return post_json(api, "/reputation/requests", body)


def nothing_stored(organization):
    assert not ReviewRequest.objects.for_org(organization).exists()
    assert not Message.objects.for_org(organization).exists()


def test_request_is_sent_with_its_link(api, owner, consenting, location, source, sms, client):
    appointment = make_appointment(owner.organization, patient=consenting, status="completed")
    response = ask(api, consenting, location, appointmentId=str(appointment.id))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "sent" and body["channel"] == "sms" and body["appointmentId"] == str(appointment.id)
    assert "token" not in " ".join(body) and "rr_" not in response.content.decode()
    message = Message.objects.for_org(owner.organization).get(id=body["messageId"])
    assert message.purpose == "marketing" and message.status == "queued"
    token = re.search(r"/r/(rr_[A-Za-z0-9_-]+)", message.body).group(1)
    row = ReviewRequest.objects.for_org(owner.organization).get(id=body["id"])
    assert token not in row.token_hash and len(row.token_hash) == 64
    assert abs((row.expires_at - row.created_at) - timedelta(days=30)) < timedelta(minutes=1)
    assert client.get(f"/r/{token}").json()["practiceName"] == owner.organization.name
    assert api.get(f"/reputation/requests/{body['id']}").json()["status"] == "opened"
    listed = api.get(f"/reputation/requests?patientId={consenting.id}&status=opened").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == body["id"]


def test_email_request(api, owner, location, source):
    from tests.campaigns.conftest import connect

    connect(api, "email", "reception", {})
    patient = PatientFactory(organization=owner.organization)
    grant(patient, "email")
    response = ask(api, patient, location, channel="email")
    assert response.status_code == 201, response.content
    message = Message.objects.for_org(owner.organization).get()
    assert message.subject.startswith("How was your visit") and "/r/rr_" in message.body


def test_without_consent_nothing_is_sent_or_stored(api, owner, location, source, sms):
    patient = PatientFactory(organization=owner.organization)
    body = assert_error(ask(api, patient, location), 409, "REVIEW_REQUEST_NOT_SENT")
    assert body["details"] == {"reason": "NO_CONSENT"}
    nothing_stored(owner.organization)
    grant(patient, "sms", status="withdrawn")
    assert assert_error(ask(api, patient, location), 409, "REVIEW_REQUEST_NOT_SENT")["details"]["reason"] in (
        "NO_CONSENT", "OPTED_OUT")  # fmt: skip
    nothing_stored(owner.organization)


def test_opted_out_and_blocked_patients_are_refused(api, owner, consenting, location, source, sms):
    ContactBlock.objects.create(organization=owner.organization, channel="sms", address="+393330000000",
                                reason="stop_keyword", blocked=True)  # fmt: skip
    blocked = PatientFactory(organization=owner.organization, phone_mobile="+39 333 0000000")
    grant(blocked, "sms")
    assert assert_error(ask(api, blocked, location), 409, "REVIEW_REQUEST_NOT_SENT")["details"] == {
        "reason": "CONTACT_BLOCKED"}  # fmt: skip
    consenting.sms_opt_out = True
    consenting.save(update_fields=["sms_opt_out"])
    assert assert_error(ask(api, consenting, location), 409, "REVIEW_REQUEST_NOT_SENT")["details"] == {
        "reason": "OPTED_OUT"}  # fmt: skip
    nothing_stored(owner.organization)


def test_no_connection_no_source_and_validation(api, owner, outsider, consenting, location, source):
    assert assert_error(ask(api, consenting, location), 409, "REVIEW_REQUEST_NOT_SENT")["details"] == {
        "reason": "CONNECTION_UNAVAILABLE"}  # fmt: skip
    patch_json(api, f"/reputation/sources/{source['id']}", {"status": "paused"})
    assert_error(ask(api, consenting, location), 409, "REPUTATION_NO_REVIEW_SOURCE")
    patch_json(api, f"/reputation/sources/{source['id']}", {"status": "active"})
    foreign = PatientFactory(organization=outsider.organization)
    other_patients_visit = make_appointment(owner.organization)
    for fields in (
        {"patientId": str(foreign.id)},
        {"channel": "whatsapp"},
        {"appointmentId": str(other_patients_visit.id)},
        {"locationId": "not-a-uuid"},
        {"extra": 1},
    ):
        assert_error(ask(api, consenting, location, **fields), 400, "VALIDATION_ERROR")
    nothing_stored(owner.organization)
