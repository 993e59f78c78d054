"""POST /appointments/{id}/status and /cancel: every move of services.STATUS_MOVES, allowed and refused, the
events and timeline lines they record, and the no-show undo that must still respect the diary."""

import pytest

from apps.appointments.models import Appointment
from apps.appointments.services import STATUS_MOVES
from apps.patients.models import Activity
from tests.appointments.helpers import appointment_events, assert_refused, make_appointment, post_json, snapshot, url

STATUSES = ("booked", "confirmed", "arrived", "completed", "no_show", "cancelled")
SETTABLE = tuple(status for status in STATUSES if status != "cancelled")
# The documented day of an appointment (the route's description); the table in services must say the same.
ALLOWED = {
    ("booked", "confirmed"),
    ("booked", "arrived"),
    ("booked", "no_show"),
    ("confirmed", "booked"),
    ("confirmed", "arrived"),
    ("confirmed", "no_show"),
    ("arrived", "completed"),
    ("arrived", "confirmed"),
    ("no_show", "booked"),
}
MOVES = [(current, target) for current in STATUSES for target in SETTABLE if current != target]


def set_status(client, appointment, status):
    return post_json(client, url(appointment, "status"), {"status": status})


def test_the_services_table_is_the_documented_one():
    assert {(current, target) for current, targets in STATUS_MOVES.items() for target in targets} == ALLOWED
    assert set(STATUS_MOVES) == set(STATUSES)


@pytest.mark.parametrize(("current", "target"), sorted(ALLOWED))
def test_an_allowed_move(api, owner, current, target):
    appointment = make_appointment(owner.organization, status=current)

    response = set_status(api, appointment, target)

    assert response.status_code == 200, response.content
    assert response.json()["status"] == target
    assert response.json()["statusChangedAt"] is not None
    (event,) = appointment_events(owner.organization, appointment, "appointment.status_changed")
    assert event.data["status"] == target
    assert event.data["previousStatus"] == current
    assert event.data["action"] == target
    assert event.data["changedFields"] == ["status", "statusChangedAt"]
    assert event.actor_type == "user" and event.actor_id == str(owner.user.id)
    (line,) = Activity.objects.for_org(owner.organization).filter(patient_id=appointment.patient_id)
    assert line.kind == "appointment_status_changed"
    assert line.data["appointmentId"] == str(appointment.id)


@pytest.mark.parametrize(("current", "target"), [move for move in MOVES if move not in ALLOWED])
def test_a_refused_move_is_409_naming_the_allowed_ones(api, owner, current, target):
    appointment = make_appointment(owner.organization, status=current)

    body = assert_refused(
        owner.organization, lambda: set_status(api, appointment, target), 409, "APPOINTMENT_TRANSITION_NOT_ALLOWED"
    )
    assert body["details"] == {"status": current, "requested": target, "allowed": list(STATUS_MOVES[current])}


@pytest.mark.parametrize("status", SETTABLE)
def test_sending_the_current_status_changes_nothing(api, owner, status):
    appointment = make_appointment(owner.organization, status=status)
    before = snapshot(owner.organization)

    response = set_status(api, appointment, status)

    assert response.status_code == 200, response.content
    assert response.json()["status"] == status
    assert snapshot(owner.organization) == before


def test_undoing_a_no_show_whose_time_was_taken_is_409(api, owner, practitioner):
    no_show = make_appointment(owner.organization, practitioner=practitioner, start=0, end=1, status="no_show")
    taken = make_appointment(owner.organization, practitioner=practitioner, start=0.5, end=1.5)

    body = assert_refused(owner.organization, lambda: set_status(api, no_show, "booked"), 409, "APPOINTMENT_CONFLICT")
    assert body["details"] == {"conflictingAppointmentId": str(taken.id)}


def test_undoing_a_no_show_whose_time_is_free_books_it_again(api, owner, practitioner):
    no_show = make_appointment(owner.organization, practitioner=practitioner, start=0, end=1, status="no_show")
    make_appointment(owner.organization, practitioner=practitioner, start=0, end=1, status="cancelled")

    response = set_status(api, no_show, "booked")

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "booked"


@pytest.mark.parametrize(
    ("action", "payload", "field"),
    [
        ("status", {}, "status"),
        ("status", {"status": "cancelled"}, "status"),
        ("status", {"status": "finished"}, "status"),
        ("status", {"status": None}, "status"),
        ("status", {"status": 3}, "status"),
        ("status", {"status": "confirmed", "reason": "x"}, "reason"),
        ("cancel", {"reason": ""}, "reason"),
        ("cancel", {"reason": "r" * 501}, "reason"),
        ("cancel", {"reason": 5}, "reason"),
        ("cancel", {"reason": None}, "reason"),
        ("cancel", {"status": "cancelled"}, "status"),
    ],
)
def test_status_and_cancel_validation_is_400_naming_the_field(api, owner, action, payload, field):
    appointment = make_appointment(owner.organization)

    assert_refused(owner.organization, lambda: post_json(api, url(appointment, action), payload), field=field)


# --- cancel ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("current", ["booked", "confirmed", "arrived"])
def test_cancel_an_open_appointment_with_a_reason(api, owner, current):
    appointment = make_appointment(owner.organization, status=current)

    response = post_json(api, url(appointment, "cancel"), {"reason": "Patient has the flu"})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    assert response.json()["cancelReason"] == "Patient has the flu"
    (event,) = appointment_events(owner.organization, appointment, "appointment.status_changed")
    assert event.data["action"] == "cancelled"
    assert event.data["previousStatus"] == current and event.data["status"] == "cancelled"
    assert event.data["changedFields"] == ["status", "statusChangedAt", "cancelReason"]
    assert "flu" not in str(event.data)
    (line,) = Activity.objects.for_org(owner.organization).filter(patient_id=appointment.patient_id)
    assert line.kind == "appointment_cancelled"


def test_cancel_without_a_reason(api, owner):
    appointment = make_appointment(owner.organization)

    response = post_json(api, url(appointment, "cancel"))

    assert response.status_code == 200, response.content
    assert response.json()["cancelReason"] == ""
    (event,) = appointment_events(owner.organization, appointment, "appointment.status_changed")
    assert event.data["changedFields"] == ["status", "statusChangedAt"]


def test_cancelling_again_changes_nothing(api, owner):
    appointment = make_appointment(owner.organization, status="cancelled", cancel_reason="Ill")
    before = snapshot(owner.organization)

    response = post_json(api, url(appointment, "cancel"), {"reason": "Something else"})

    assert response.status_code == 200, response.content
    assert response.json()["cancelReason"] == "Ill"
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("current", ["completed", "no_show"])
def test_cancelling_a_finished_appointment_is_409(api, owner, current):
    appointment = make_appointment(owner.organization, status=current)

    body = assert_refused(
        owner.organization,
        lambda: post_json(api, url(appointment, "cancel"), {"reason": "Oops"}),
        409,
        "APPOINTMENT_TRANSITION_NOT_ALLOWED",
    )
    assert body["details"] == {"status": current, "requested": "cancelled", "allowed": []}


@pytest.mark.parametrize("action", ["status", "cancel"])
def test_an_empty_body_is_400(api, owner, action):
    appointment = make_appointment(owner.organization)

    body = assert_refused(
        owner.organization, lambda: api.post(url(appointment, action), "", content_type="application/json")
    )
    assert "body" in body["details"]["fields"]
    assert Appointment.objects.for_org(owner.organization).get().status == "booked"
