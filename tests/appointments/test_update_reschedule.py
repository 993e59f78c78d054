"""PATCH /appointments/{id} (details) and POST /appointments/{id}/reschedule (times): what changes, the no double
booking rule on both, closed appointments, and the validation envelope. Every refusal leaves everything as it was."""

import uuid

import pytest
from django.utils import timezone

from apps.appointments.models import Appointment
from tests.appointments.helpers import (
    appointment_events,
    assert_refused,
    create_journey,
    create_treatment,
    iso,
    make_appointment,
    patch_json,
    post_json,
    snapshot,
    url,
    wire,
)
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory

CLOSED = ("completed", "no_show", "cancelled")


@pytest.fixture
def appointment(owner, patient, practitioner):
    return make_appointment(owner.organization, patient=patient, practitioner=practitioner, start=0, end=1)


def _row(appointment) -> Appointment:
    return Appointment.objects.for_org(appointment.organization_id).get(id=appointment.id)


# --- update ----------------------------------------------------------------------------------------------------------


def test_update_every_detail(api, owner, appointment, patient):
    org = owner.organization
    colleague = PractitionerFactory(organization=org)
    location = LocationFactory(organization=org)
    implant = create_treatment(api, name="Implant")
    journey = create_journey(api, patient, implant)

    response = patch_json(
        api,
        url(appointment),
        {
            "practitionerId": str(colleague.id),
            "locationId": str(location.id),
            "treatmentId": implant["id"],
            "journeyId": journey["id"],
            "appointmentType": "treatment",
            "notes": "Moved to the big chair",
        },
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["practitioner"] == {"id": str(colleague.id), "name": colleague.name}
    assert body["locationId"] == str(location.id)
    assert body["treatment"] == {"id": implant["id"], "name": "Implant"}
    assert body["journeyId"] == journey["id"]
    assert body["appointmentType"] == "treatment"
    assert body["notes"] == "Moved to the big chair"
    assert body["startsAt"] == wire(0) and body["endsAt"] == wire(1)  # times move only by rescheduling
    assert body["status"] == "booked"
    assert api.get(url(appointment)).json() == body
    (event,) = appointment_events(org, appointment, "appointment.updated")
    assert set(event.data["changedFields"]) == {
        "practitionerId",
        "locationId",
        "treatmentId",
        "journeyId",
        "appointmentType",
        "notes",
    }


def test_update_can_clear_the_optional_links(api, owner, patient, practitioner, location):
    implant = create_treatment(api)
    appointment = make_appointment(
        owner.organization, patient=patient, practitioner=practitioner, location=location, treatment_id=implant["id"]
    )

    response = patch_json(api, url(appointment), {"locationId": None, "treatmentId": None, "notes": None})

    assert response.status_code == 200, response.content
    assert response.json()["location"] is None and response.json()["treatment"] is None
    assert response.json()["notes"] == ""
    (event,) = appointment_events(owner.organization, appointment, "appointment.updated")
    assert set(event.data["changedFields"]) == {"locationId", "treatmentId"}


def test_an_update_that_changes_nothing_records_nothing(api, owner, appointment, practitioner):
    before = snapshot(owner.organization)

    response = patch_json(api, url(appointment), {"practitionerId": str(practitioner.id), "notes": ""})

    assert response.status_code == 200, response.content
    assert snapshot(owner.organization) == before


def test_an_arrived_appointment_can_still_be_updated(api, owner):
    appointment = make_appointment(owner.organization, status="arrived")

    response = patch_json(api, url(appointment), {"notes": "In the waiting room"})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "arrived"


def test_moving_to_a_busy_practitioner_is_409_and_changes_nothing(api, owner, appointment):
    colleague = PractitionerFactory(organization=owner.organization)
    busy = make_appointment(owner.organization, practitioner=colleague, start=0.5, end=1.5)

    body = assert_refused(
        owner.organization,
        lambda: patch_json(api, url(appointment), {"practitionerId": str(colleague.id), "notes": "x"}),
        409,
        "APPOINTMENT_CONFLICT",
    )
    assert body["details"] == {"conflictingAppointmentId": str(busy.id)}


@pytest.mark.parametrize("status", ["cancelled", "no_show"])
def test_moving_to_a_practitioner_whose_clash_freed_the_time_is_fine(api, owner, appointment, status):
    colleague = PractitionerFactory(organization=owner.organization)
    make_appointment(owner.organization, practitioner=colleague, start=0, end=1, status=status)

    response = patch_json(api, url(appointment), {"practitionerId": str(colleague.id)})

    assert response.status_code == 200, response.content
    assert _row(appointment).practitioner_id == colleague.id


@pytest.mark.parametrize("status", CLOSED)
def test_a_closed_appointment_refuses_updates(api, owner, status):
    appointment = make_appointment(owner.organization, status=status)

    body = assert_refused(
        owner.organization, lambda: patch_json(api, url(appointment), {"notes": "too late"}), 409, "APPOINTMENT_CLOSED"
    )
    assert body["details"] == {"status": status}


def test_update_with_a_journey_of_another_patient_is_400(api, owner, appointment):
    journey = create_journey(api, PatientFactory(organization=owner.organization))

    body = assert_refused(owner.organization, lambda: patch_json(api, url(appointment), {"journeyId": journey["id"]}))
    assert body["details"]["fields"] == {"journeyId": ["belongs to another patient"]}


def test_update_to_an_archived_practitioner_is_400(api, owner, appointment):
    colleague = PractitionerFactory(organization=owner.organization, archived_at=timezone.now())

    body = assert_refused(
        owner.organization, lambda: patch_json(api, url(appointment), {"practitionerId": str(colleague.id)})
    )
    assert body["details"]["fields"] == {"practitionerId": ["is archived"]}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "body"),
        ({"startsAt": iso(2)}, "startsAt"),
        ({"endsAt": iso(2)}, "endsAt"),
        ({"patientId": str(uuid.uuid4())}, "patientId"),
        ({"status": "confirmed"}, "status"),
        ({"practitionerId": None}, "practitionerId"),
        ({"practitionerId": "nope"}, "practitionerId"),
        ({"practitionerId": str(uuid.uuid4())}, "practitionerId"),
        ({"locationId": str(uuid.uuid4())}, "locationId"),
        ({"treatmentId": 5}, "treatmentId"),
        ({"journeyId": "j"}, "journeyId"),
        ({"appointmentType": "surgery"}, "appointmentType"),
        ({"notes": ["a"]}, "notes"),
        ({"notes": "n" * 5001}, "notes"),
    ],
)
def test_update_validation_is_400_naming_the_field(api, owner, appointment, payload, field):
    assert_refused(owner.organization, lambda: patch_json(api, url(appointment), payload), field=field)


@pytest.mark.parametrize("raw", ["", "[]", "null", "{", "7"])
def test_update_with_an_empty_or_non_object_body_is_400(api, owner, appointment, raw):
    assert_refused(owner.organization, lambda: api.patch(url(appointment), raw, content_type="application/json"))


# --- reschedule ------------------------------------------------------------------------------------------------------


def reschedule(client, appointment, start: float, end: float, **extra):
    return post_json(client, url(appointment, "reschedule"), {"startsAt": iso(start), "endsAt": iso(end)} | extra)


def test_reschedule_moves_the_times_and_records_the_previous_ones(api, owner, appointment):
    response = reschedule(api, appointment, 3, 4.5)

    assert response.status_code == 200, response.content
    assert response.json()["startsAt"] == wire(3) and response.json()["endsAt"] == wire(4.5)
    assert response.json()["status"] == "booked"
    (event,) = appointment_events(owner.organization, appointment, "appointment.rescheduled")
    assert event.data["previousStartsAt"] == iso(0) and event.data["previousEndsAt"] == iso(1)
    assert event.data["startsAt"] == iso(3) and event.data["endsAt"] == iso(4.5)
    assert event.data["changedFields"] == ["startsAt", "endsAt"]
    assert event.data["action"] == "rescheduled"


def test_reschedule_to_another_practitioner_and_location(api, owner, appointment):
    colleague = PractitionerFactory(organization=owner.organization)
    location = LocationFactory(organization=owner.organization)

    response = reschedule(api, appointment, 0, 1, practitionerId=str(colleague.id), locationId=str(location.id))

    assert response.status_code == 200, response.content
    assert response.json()["practitionerId"] == str(colleague.id)
    assert response.json()["locationId"] == str(location.id)
    (event,) = appointment_events(owner.organization, appointment, "appointment.rescheduled")
    assert event.data["changedFields"] == ["practitionerId", "locationId"]


def test_rescheduling_a_confirmed_appointment_puts_it_back_to_booked(api, owner):
    appointment = make_appointment(owner.organization, status="confirmed")

    response = reschedule(api, appointment, 2, 3)

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "booked"
    (event,) = appointment_events(owner.organization, appointment, "appointment.rescheduled")
    assert event.data["status"] == "booked"
    assert event.data["changedFields"] == ["startsAt", "endsAt", "status"]


def test_rescheduling_to_the_same_times_changes_nothing(api, owner):
    appointment = make_appointment(owner.organization, status="confirmed", start=0, end=1)
    before = snapshot(owner.organization)

    response = post_json(
        api, url(appointment, "reschedule"), {"startsAt": "2031-03-04T10:00:00+01:00", "endsAt": iso(1)}
    )

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "confirmed"
    assert snapshot(owner.organization) == before


def test_a_reschedule_overlapping_its_own_old_time_is_fine(api, appointment):
    response = reschedule(api, appointment, 0.25, 1.25)

    assert response.status_code == 200, response.content


def test_reschedule_into_a_clash_is_409_and_changes_nothing(api, owner, appointment, practitioner):
    busy = make_appointment(owner.organization, practitioner=practitioner, start=2, end=3)

    body = assert_refused(
        owner.organization, lambda: reschedule(api, appointment, 2.5, 3.5), 409, "APPOINTMENT_CONFLICT"
    )
    assert body["details"] == {"conflictingAppointmentId": str(busy.id)}


def test_reschedule_onto_a_busy_practitioner_at_the_same_time_is_409(api, owner, appointment):
    colleague = PractitionerFactory(organization=owner.organization)
    busy = make_appointment(owner.organization, practitioner=colleague, start=0, end=1)

    body = assert_refused(
        owner.organization,
        lambda: reschedule(api, appointment, 0, 1, practitionerId=str(colleague.id)),
        409,
        "APPOINTMENT_CONFLICT",
    )
    assert body["details"] == {"conflictingAppointmentId": str(busy.id)}


def test_reschedule_next_to_another_appointment_is_fine(api, owner, appointment, practitioner):
    make_appointment(owner.organization, practitioner=practitioner, start=2, end=3)
    make_appointment(owner.organization, practitioner=practitioner, start=4, end=5)

    assert reschedule(api, appointment, 3, 4).status_code == 200


@pytest.mark.parametrize("status", [*CLOSED, "arrived"])
def test_reschedule_of_a_closed_or_arrived_appointment_is_409(api, owner, status):
    appointment = make_appointment(owner.organization, status=status)

    body = assert_refused(owner.organization, lambda: reschedule(api, appointment, 5, 6), 409, "APPOINTMENT_CLOSED")
    assert body["details"] == {"status": status}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "startsAt"),
        ({"startsAt": iso(2)}, "endsAt"),
        ({"endsAt": iso(2)}, "startsAt"),
        ({"startsAt": "2031-03-04T11:00:00", "endsAt": iso(3)}, "startsAt"),
        ({"startsAt": iso(2), "endsAt": "2031-03-04T12:00:00"}, "endsAt"),
        ({"startsAt": iso(2), "endsAt": iso(2)}, "endsAt"),
        ({"startsAt": iso(2), "endsAt": iso(1)}, "endsAt"),
        ({"startsAt": iso(2), "endsAt": iso(14.5)}, "endsAt"),
        ({"startsAt": True, "endsAt": iso(3)}, "startsAt"),
        ({"startsAt": iso(2), "endsAt": iso(3), "notes": "x"}, "notes"),
        ({"startsAt": iso(2), "endsAt": iso(3), "status": "booked"}, "status"),
        ({"startsAt": iso(2), "endsAt": iso(3), "practitionerId": None}, "practitionerId"),
        ({"startsAt": iso(2), "endsAt": iso(3), "practitionerId": str(uuid.uuid4())}, "practitionerId"),
        ({"startsAt": iso(2), "endsAt": iso(3), "locationId": "here"}, "locationId"),
    ],
)
def test_reschedule_validation_is_400_naming_the_field(api, owner, appointment, payload, field):
    assert_refused(owner.organization, lambda: post_json(api, url(appointment, "reschedule"), payload), field=field)


def test_reschedule_to_an_archived_practitioner_is_400(api, owner, appointment):
    colleague = PractitionerFactory(organization=owner.organization, archived_at=timezone.now())

    body = assert_refused(
        owner.organization, lambda: reschedule(api, appointment, 2, 3, practitionerId=str(colleague.id))
    )
    assert body["details"]["fields"] == {"practitionerId": ["is archived"]}


def test_reschedule_with_an_empty_body_is_400(api, owner, appointment):
    body = assert_refused(
        owner.organization, lambda: api.post(url(appointment, "reschedule"), "", content_type="application/json")
    )
    assert "body" in body["details"]["fields"]
