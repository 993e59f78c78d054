"""Calls from the provider's events: matched to the practice's patients by number, the log (GET /calls, /calls/{id})
with its filters, missed calls and their follow-up task (on the assignee's Today), the patient's timeline, and
click-to-call (POST /dialer/calls) through the adapter against a local Telnyx API."""

import base64
from datetime import timedelta

import pytest

from apps.dialer.models import Call, CallStatus
from apps.patients.public import Activity
from apps.tasks.public import Task
from tests.conftest import make_member
from tests.dialer.conftest import (
    API_KEY,
    APP_ID,
    PATIENT_NUMBER,
    PRACTICE_NUMBER,
    T0,
    InboundCall,
    connect,
    order_number,
    patch_json,
    post_json,
    telnyx_event,
)
from tests.factories import PatientFactory
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def the_call(owner) -> Call:
    return Call.objects.for_org(owner.organization).get()


def test_an_answered_inbound_call_is_matched_logged_and_on_the_timeline(owner, api, number, deliver):
    patient = PatientFactory(organization=owner.organization, phone_mobile="333 123 4567")  # stored nationally
    call = InboundCall()
    deliver(call.initiated(), call.answered(), call.hangup())
    row = the_call(owner)
    assert (row.patient_id, row.direction, row.status) == (patient.id, "inbound", "completed")
    assert (row.from_number, row.to_number, str(row.number_id)) == (PATIENT_NUMBER, PRACTICE_NUMBER, number["id"])
    assert (row.started_at, row.answered_at, row.ended_at) == (
        T0,
        T0 + timedelta(seconds=5),
        T0 + timedelta(seconds=65),
    )
    assert row.duration_seconds == 60 and row.hangup_cause == "normal_clearing"
    assert row.follow_up_task_id is None

    body = api.get(f"/calls/{row.id}").json()
    assert body == {
        "id": str(row.id),
        "direction": "inbound",
        "status": "completed",
        "fromNumber": PATIENT_NUMBER,
        "toNumber": PRACTICE_NUMBER,
        "numberId": number["id"],
        "patientId": str(patient.id),
        "userId": None,
        "startedAt": "2026-11-26T09:00:00.000000Z",
        "answeredAt": "2026-11-26T09:00:05.000000Z",
        "endedAt": "2026-11-26T09:01:05.000000Z",
        "durationSeconds": 60,
        "hangupCause": "normal_clearing",
        "answeredBy": "",
        "followUpTaskId": None,
        "recording": None,
        "createdAt": body["createdAt"],
    }
    entry = Activity.objects.for_org(owner.organization).get(patient=patient, kind="call")
    assert entry.data == {"callId": str(row.id), "direction": "inbound", "status": "completed", "durationSeconds": 60}
    timeline = api.get(f"/patients/{patient.id}/timeline").json()["items"]
    assert timeline[0]["kind"] == "call"


def test_a_missed_inbound_call_gets_one_follow_up_task_on_the_assignees_today(owner, api, line, number, deliver):
    desk = make_member(role="front_desk", organization=owner.organization)
    patch_json(api, f"/dialer/connections/{line['id']}", {"missedCallAssigneeId": str(desk.user.id)})
    patient = PatientFactory(
        organization=owner.organization, first_name="Maria", last_name="Rossi", phone_mobile="+39 333 1234567"
    )
    call = InboundCall()
    deliver(call.initiated(), call.hangup(cause="originator_cancel"))
    row = the_call(owner)
    assert (row.status, row.duration_seconds, row.answered_at) == (CallStatus.MISSED, 0, None)
    task = Task.objects.for_org(owner.organization).get()
    assert row.follow_up_task_id == task.id
    assert (task.title, task.priority, task.status) == ("Call back Maria Rossi (missed call)", "high", "open")
    assert (task.assignee_id, task.patient_id) == (desk.user.id, patient.id)
    # On the assignee's Today (due now).
    today = desk.api_client().get("/today").json()
    assert [item["id"] for item in today["tasks"]["items"]] == [str(task.id)]
    # A second hang-up event for the same leg (another event id) changes nothing.
    deliver(call.hangup(at=T0 + timedelta(seconds=70)))
    assert Task.objects.for_org(owner.organization).count() == 1
    assert api.get("/calls?status=missed").json()["items"][0]["followUpTaskId"] == str(task.id)


def test_a_missed_call_from_an_unknown_number_gets_an_unassigned_task_and_no_patient(owner, number, deliver):
    call = InboundCall(caller="+447700900123")
    deliver(call.initiated(), call.hangup(cause="timeout"))
    row = the_call(owner)
    assert (row.status, row.patient_id) == (CallStatus.MISSED, None)
    task = Task.objects.for_org(owner.organization).get()
    assert (task.title, task.assignee_id, task.patient_id) == ("Call back +447700900123 (missed call)", None, None)
    assert not Activity.objects.for_org(owner.organization).filter(kind="call").exists()


def test_an_assignee_who_left_the_practice_leaves_the_task_unassigned(owner, api, line, number, deliver):
    desk = make_member(role="front_desk", organization=owner.organization)
    patch_json(api, f"/dialer/connections/{line['id']}", {"missedCallAssigneeId": str(desk.user.id)})
    desk.membership.delete()
    call = InboundCall()
    deliver(call.initiated(), call.hangup())
    assert Task.objects.for_org(owner.organization).get().assignee_id is None


def test_events_out_of_order_still_give_one_call(owner, number, deliver):
    """The hang-up before the initiation (the provider does not promise order), then a late answer."""
    call = InboundCall()
    deliver(call.hangup(), call.initiated(), call.answered())
    row = the_call(owner)
    assert row.status == CallStatus.COMPLETED  # the late answer turns the missed call into a completed one
    assert Call.objects.for_org(owner.organization).count() == 1


def test_an_outbound_call_never_answered_is_no_answer_and_gets_no_task(owner, number, deliver):
    call = InboundCall(caller=PRACTICE_NUMBER, called=PATIENT_NUMBER, direction="outgoing")
    deliver(call.initiated(), call.hangup(cause="timeout"))
    row = the_call(owner)
    assert (row.direction, row.status) == ("outbound", CallStatus.NO_ANSWER)
    assert not Task.objects.for_org(owner.organization).exists()


def test_machine_detection_is_recorded(owner, number, deliver):
    call = InboundCall(caller=PRACTICE_NUMBER, called=PATIENT_NUMBER, direction="outgoing")
    detected = telnyx_event("call.machine.detection.ended", {**call.base, "result": "machine"})
    deliver(call.initiated(), call.answered(), detected)
    assert the_call(owner).answered_by == "machine"


def test_the_log_lists_newest_first_with_filters_in_a_fixed_number_of_queries(
    owner, api, number, deliver, django_assert_max_num_queries
):
    patient = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    calls = [InboundCall(caller=f"+39333000000{n}") for n in range(3)] + [InboundCall()]
    for n, call in enumerate(calls):
        deliver(call.initiated(at=T0 + timedelta(minutes=n)), call.hangup(at=T0 + timedelta(minutes=n, seconds=30)))
    with django_assert_max_num_queries(8):
        page = api.get("/calls?limit=2").json()
    assert [item["fromNumber"] for item in page["items"]] == [PATIENT_NUMBER, "+393330000002"]
    assert page["nextCursor"]
    rest = api.get(f"/calls?limit=2&cursor={page['nextCursor']}").json()
    assert [item["fromNumber"] for item in rest["items"]] == ["+393330000001", "+393330000000"]
    assert rest["nextCursor"] is None
    mine = api.get(f"/calls?patientId={patient.id}").json()["items"]
    assert [item["patientId"] for item in mine] == [str(patient.id)]
    assert len(api.get("/calls?direction=inbound&status=missed").json()["items"]) == 4
    assert api.get("/calls?direction=outbound").json()["items"] == []
    assert_error(api.get("/calls?status=lost"), 400, "VALIDATION_ERROR")
    assert_error(api.get("/calls?cursor=garbage"), 400, "VALIDATION_ERROR")


def test_calls_are_invisible_to_another_practice_and_to_roles_without_the_dialer(owner, number, deliver, outsider):
    patient = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    call = InboundCall()
    deliver(call.initiated(), call.hangup())
    row = the_call(owner)
    other = outsider.api_client()
    assert other.get("/calls").json()["items"] == []
    assert_error(other.get(f"/calls/{row.id}"), 404, "NOT_FOUND")
    assert_error(other.get(f"/calls/{row.id}/recording"), 404, "NOT_FOUND")
    assert_error(other.get(f"/calls?patientId={patient.id}"), 400, "VALIDATION_ERROR")
    for role in ("analyst", "dentist"):
        client = make_member(role=role, organization=owner.organization).api_client()
        assert_error(client.get("/calls"), 403, "PERMISSION_DENIED")
        assert_error(client.get(f"/calls/{row.id}"), 403, "PERMISSION_DENIED")
    telesales = make_member(role="telesales", organization=owner.organization).api_client()
    assert telesales.get(f"/calls/{row.id}").status_code == 200


def test_the_dialer_scope_area_needs_the_dialer_scope():
    from apps.core.permissions import required_scopes

    assert required_scopes("GET", "dialer") == frozenset({"dialer"})
    assert required_scopes("POST", "dialer") == frozenset({"dialer"})
    assert "settings.read" in required_scopes("GET", "settings")


# --- click-to-call ------------------------------------------------------------------------------------------------


def test_click_to_call_places_the_call_through_the_provider_and_logs_it(owner, api, line, telnyx, deliver):
    assert patch_json(api, f"/dialer/connections/{line['id']}", {"recordCalls": True}).json()["recordCalls"] is True
    number = order_number(api)
    patient = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    response = post_json(api, "/dialer/calls", {"patientId": str(patient.id)})
    assert response.status_code == 201, response.content
    body = response.json()
    row = Call.objects.for_org(owner.organization).get(id=body["id"])
    sent = telnyx.calls("POST", "/v2/calls")
    assert len(sent) == 1 and sent[0]["authorization"] == f"Bearer {API_KEY}"
    assert sent[0]["body"] == {
        "connection_id": APP_ID,
        "to": PATIENT_NUMBER,
        "from": PRACTICE_NUMBER,
        "client_state": base64.b64encode(f"call:{row.id}".encode()).decode(),
        "record": "record-from-answer",
    }
    assert (body["direction"], body["status"], body["userId"], body["patientId"]) == (
        "outbound",
        "initiated",
        str(owner.user.id),
        str(patient.id),
    )
    assert (body["fromNumber"], body["toNumber"], body["numberId"]) == (PRACTICE_NUMBER, PATIENT_NUMBER, number["id"])
    assert row.provider_call_leg_id and row.provider_call_control_id.startswith("v3:")

    # The provider's events for it find the same call (by its client_state or leg id).
    events = InboundCall(caller=PRACTICE_NUMBER, called=PATIENT_NUMBER, direction="outgoing")
    events.leg = row.provider_call_leg_id
    events.base.update(call_leg_id=row.provider_call_leg_id, client_state=sent[0]["body"]["client_state"])
    deliver(events.initiated(), events.answered(), events.hangup())
    row.refresh_from_db()
    assert (row.status, row.duration_seconds) == (CallStatus.COMPLETED, 60)
    assert Call.objects.for_org(owner.organization).count() == 1


def test_click_to_call_to_a_number_matches_the_patient(owner, api, number):
    patient = PatientFactory(organization=owner.organization, phone_other="0039 333 1234567")
    body = post_json(api, "/dialer/calls", {"to": PATIENT_NUMBER}).json()
    assert body["patientId"] == str(patient.id)
    assert body["status"] == "initiated"  # the sandbox transport: logged, nothing called


def test_click_to_call_refusals(owner, api, account, telnyx, outsider):
    # No connection, no number.
    assert_error(post_json(api, "/dialer/calls", {"to": PATIENT_NUMBER}), 409, "DIALER_NO_NUMBER")
    line = connect(api, account, callControlAppId="")
    number = order_number(api)
    assert_error(post_json(api, "/dialer/calls", {"to": PATIENT_NUMBER}), 409, "DIALER_NOT_CONFIGURED")
    patch_json(api, f"/dialer/connections/{line['id']}", {"callControlAppId": APP_ID})
    # Bad bodies: no target, a patient without a usable number, another practice's ids.
    assert_error(post_json(api, "/dialer/calls", {}), 400, "VALIDATION_ERROR")
    nameless = PatientFactory(organization=owner.organization, phone_mobile=None, email="a@example.com")
    assert_error(post_json(api, "/dialer/calls", {"patientId": str(nameless.id)}), 400, "VALIDATION_ERROR")
    theirs = PatientFactory(organization=outsider.organization, phone_mobile=PATIENT_NUMBER)
    assert_error(post_json(api, "/dialer/calls", {"patientId": str(theirs.id)}), 400, "VALIDATION_ERROR")
    assert_error(
        post_json(outsider.api_client(), "/dialer/calls", {"to": PATIENT_NUMBER, "fromNumberId": number["id"]}),
        400,
        "VALIDATION_ERROR",
    )
    assert_error(post_json(api, "/dialer/calls", {"to": "12345"}), 400, "VALIDATION_ERROR")
    assert not Call.objects.for_org(owner.organization).exists()
    assert not telnyx.calls("POST", "/v2/calls")

    # The provider refuses: the call is failed in the log, 409 with its code.
    telnyx.fail[("POST", "/v2/calls")] = (422, {"errors": [{"code": "90018", "title": "Invalid destination"}]})
    error = assert_error(post_json(api, "/dialer/calls", {"to": PATIENT_NUMBER}), 409, "DIALER_PROVIDER_REFUSED")
    assert error["details"] == {"providerCode": "90018"}
    failed = Call.objects.for_org(owner.organization).get()
    assert (failed.status, failed.hangup_cause) == (CallStatus.FAILED, "90018")
    # The provider is down: 503 with Retry-After.
    telnyx.fail[("POST", "/v2/calls")] = (503, {"errors": [{"code": "unavailable"}]})
    response = post_json(api, "/dialer/calls", {"to": PATIENT_NUMBER})
    assert_error(response, 503, "DIALER_PROVIDER_UNAVAILABLE")
    assert response["Retry-After"] == "30"
    assert Call.objects.for_org(owner.organization).filter(status=CallStatus.FAILED).count() == 2


def test_click_to_call_needs_the_dialer_role(owner, number):
    for role, status in (("telesales", 201), ("front_desk", 201), ("analyst", 403), ("hygienist", 403)):
        client = make_member(role=role, organization=owner.organization).api_client()
        assert post_json(client, "/dialer/calls", {"to": PATIENT_NUMBER}).status_code == status, role
    assert Call.objects.for_org(owner.organization).count() == 2
