"""The automatic review request after a completed appointment: a practice setting (off by default); completing an
appointment through its status route queues the request (Celery is eager in tests; the task is also called
directly), which re-reads everything, is skipped (logged, nothing stored) when the appointment was already asked
about, the patient was asked in the last 30 days, the patient gives no consent or the location has no review
source, and sends one request however often it runs."""

import pytest

from apps.conversations.models import Message
from apps.reputation.models import ReviewRequest
from apps.reputation.tasks import auto_request
from tests.appointments.helpers import make_appointment
from tests.factories import LocationFactory, PatientFactory
from tests.helpers import assert_error
from tests.reputation.conftest import issue_request, make_source, patch_json, post_json

ON = {"autoRequestAfterAppointment": True, "autoRequestDelayMinutes": 0}


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """committed(fn, *args, **kwargs): call fn, then run the on-commit callbacks (Celery is eager in tests)."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


def switch(api, **fields):
    response = patch_json(api, "/reputation/settings", ON | fields)
    assert response.status_code == 200, response.content
    return response.json()


def arrived(owner, patient, location):
    return make_appointment(owner.organization, patient=patient, location=location, status="arrived")


def complete(api, committed, appointment):
    response = committed(post_json, api, f"/appointments/{appointment.id}/status", {"status": "completed"})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "completed"


def requests_of(organization):
    return ReviewRequest.objects.for_org(organization)


def test_settings_defaults_and_validation(api):
    body = api.get("/reputation/settings").json()
    assert body["autoRequestAfterAppointment"] is False
    assert body["autoRequestDelayMinutes"] == 120 and body["autoRequestChannel"] == "sms"
    changed = switch(api, autoRequestDelayMinutes=10080, autoRequestChannel="email")
    assert changed["autoRequestAfterAppointment"] is True
    assert changed["autoRequestDelayMinutes"] == 10080 and changed["autoRequestChannel"] == "email"
    for bad in ({"autoRequestDelayMinutes": 10081}, {"autoRequestDelayMinutes": -1},
                {"autoRequestChannel": "fax"}, {"autoRequestAfterAppointment": "maybe"}):  # fmt: skip
        assert_error(patch_json(api, "/reputation/settings", bad), 400, "VALIDATION_ERROR")
    assert api.get("/reputation/settings").json() == changed


def test_setting_off_sends_nothing(api, owner, committed, consenting, location, source, sms):
    appointment = arrived(owner, consenting, location)
    complete(api, committed, appointment)
    assert not requests_of(owner.organization).exists()
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "SETTING_OFF"
    assert not requests_of(owner.organization).exists() and not Message.objects.for_org(owner.organization).exists()


def test_completed_appointment_gets_one_request(api, owner, committed, consenting, location, source, sms):
    switch(api)
    appointment = arrived(owner, consenting, location)
    # Other moves do not ask.
    back = committed(post_json, api, f"/appointments/{appointment.id}/status", {"status": "confirmed"})
    assert back.status_code == 200, back.content
    assert not requests_of(owner.organization).exists()
    again = committed(post_json, api, f"/appointments/{appointment.id}/status", {"status": "arrived"})
    assert again.status_code == 200, again.content
    complete(api, committed, appointment)
    request = requests_of(owner.organization).get()
    assert request.appointment_id == appointment.id and request.patient_id == consenting.id
    assert request.location_id == location.id and request.channel == "sms" and request.created_by_id is None
    message = Message.objects.for_org(owner.organization).get(id=request.message_id)
    assert message.purpose == "marketing" and "/r/rr_" in message.body
    listed = api.get(f"/reputation/requests?patientId={consenting.id}").json()
    assert listed["total"] == 1 and listed["items"][0]["appointmentId"] == str(appointment.id)
    # The task running twice (a redelivery) sends nothing more.
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "ALREADY_REQUESTED"
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "ALREADY_REQUESTED"
    assert requests_of(owner.organization).count() == 1
    assert Message.objects.for_org(owner.organization).count() == 1


def test_task_rereads_the_setting_and_the_appointment(api, owner, consenting, location, source, sms):
    switch(api)
    org = str(owner.organization.id)
    appointment = arrived(owner, consenting, location)
    assert auto_request(org, str(appointment.id)) == "NOT_COMPLETED"
    appointment.status = "completed"
    appointment.save(update_fields=["status"])
    switch(api, autoRequestAfterAppointment=False)
    assert auto_request(org, str(appointment.id)) == "SETTING_OFF"
    assert not requests_of(owner.organization).exists()
    switch(api)
    assert auto_request(org, str(appointment.id)) == "sent"
    assert auto_request(org, str(appointment.id)) == "ALREADY_REQUESTED"
    assert requests_of(owner.organization).get().appointment_id == appointment.id


def test_patient_without_consent_gets_no_request(api, owner, committed, location, source, sms):
    switch(api)
    patient = PatientFactory(organization=owner.organization)
    appointment = arrived(owner, patient, location)
    complete(api, committed, appointment)
    assert not requests_of(owner.organization).exists() and not Message.objects.for_org(owner.organization).exists()
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "NO_CONSENT"
    assert not requests_of(owner.organization).exists()


def test_archived_patient_is_not_asked(api, owner, committed, consenting, location, source, sms):
    switch(api)
    appointment = arrived(owner, consenting, location)
    complete(api, committed, appointment)
    requests_of(owner.organization).delete()
    Message.objects.for_org(owner.organization).delete()
    assert post_json(api, f"/patients/{consenting.id}/archive", {"reason": "moved away"}).status_code == 200
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "PATIENT_INACTIVE"
    assert not requests_of(owner.organization).exists()


def test_recent_request_is_skipped(api, owner, committed, consenting, location, source, sms):
    switch(api)
    earlier, _ = issue_request(owner, consenting, location)
    appointment = arrived(owner, consenting, location)
    complete(api, committed, appointment)
    assert list(requests_of(owner.organization)) == [earlier]
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "RECENTLY_REQUESTED"
    # A request older than 30 days does not hold the next one back.
    requests_of(owner.organization).update(created_at=earlier.created_at.replace(year=earlier.created_at.year - 1))
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "sent"
    assert requests_of(owner.organization).filter(appointment_id=appointment.id).count() == 1


def test_appointment_already_asked_about_is_skipped(api, owner, committed, consenting, location, source, sms):
    switch(api)
    appointment = make_appointment(owner.organization, patient=consenting, location=location, status="completed")
    body = {"patientId": str(consenting.id), "locationId": str(location.id), "channel": "sms",
            "appointmentId": str(appointment.id)}  # fmt: skip
    assert post_json(api, "/reputation/requests", body).status_code == 201
    requests_of(owner.organization).update(created_at=appointment.created_at.replace(year=2000))
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "ALREADY_REQUESTED"
    assert requests_of(owner.organization).count() == 1


def test_location_without_review_source_or_no_location_is_skipped(api, owner, committed, consenting, location, sms):
    switch(api)
    bare = arrived(owner, consenting, location)  # the location has no source
    complete(api, committed, bare)
    nowhere = arrived(owner, consenting, None)
    nowhere.starts_at, nowhere.ends_at = bare.starts_at.replace(hour=14), bare.ends_at.replace(hour=15)
    nowhere.save(update_fields=["starts_at", "ends_at"])
    complete(api, committed, nowhere)
    assert not requests_of(owner.organization).exists()
    org = str(owner.organization.id)
    assert auto_request(org, str(bare.id)) == "NO_REVIEW_SOURCE"
    assert auto_request(org, str(nowhere.id)) == "NO_LOCATION"
    # A source at another location does not count.
    make_source(api, LocationFactory(organization=owner.organization))
    assert auto_request(org, str(bare.id)) == "NO_REVIEW_SOURCE"
    assert not requests_of(owner.organization).exists()


def test_email_channel(api, owner, committed, location, source):
    from tests.campaigns.conftest import connect, grant

    connect(api, "email", "reception", {})
    patient = PatientFactory(organization=owner.organization)
    grant(patient, "email")
    switch(api, autoRequestChannel="email")
    complete(api, committed, arrived(owner, patient, location))
    request = requests_of(owner.organization).get()
    assert request.channel == "email"
    assert Message.objects.for_org(owner.organization).get(id=request.message_id).subject.startswith("How was")


def test_another_practices_settings_do_not_apply(api, owner, outsider, committed, consenting, location, source, sms):
    switch(api)  # on in the owner's practice only
    other = outsider.api_client()
    other_location = LocationFactory(organization=outsider.organization)
    make_source(other, other_location)
    from tests.campaigns.conftest import connect, grant

    connect(other, "sms", "+390212345679", {"accountSid": "AC" + "1" * 32, "authToken": "other-sms-token"})
    patient = PatientFactory(organization=outsider.organization, first_name="Ada")
    grant(patient, "sms")
    appointment = make_appointment(outsider.organization, patient=patient, location=other_location, status="arrived")
    complete(other, committed, appointment)
    assert not ReviewRequest.objects.unscoped().exists()
    assert auto_request(str(outsider.organization.id), str(appointment.id)) == "SETTING_OFF"
    # The owner's practice cannot reach the other practice's appointment either.
    assert auto_request(str(owner.organization.id), str(appointment.id)) == "APPOINTMENT_GONE"
    assert not ReviewRequest.objects.unscoped().exists()
