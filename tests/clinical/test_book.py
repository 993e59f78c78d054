"""POST /book: booking from the clinical diary through the appointments app, with a chair."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.appointments.public import Appointment
from apps.clinical.models import AppointmentVisit, Chair
from apps.events.models import Event
from tests.clinical.conftest import post_json
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory
from tests.helpers import assert_error

START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


@pytest.fixture
def chair(org, location):
    return Chair.objects.create(organization=org, location=location, name="Surgery 1")


def _body(patient, practitioner, start=START, **extra):
    return {
        "patientId": str(patient.id),
        "practitionerId": str(practitioner.id),
        "startsAt": start.isoformat(),
        "endsAt": (start + timedelta(minutes=45)).isoformat(),
        **extra,
    }


def test_book_in_a_chair(dentist, org, location, chair, practitioner, patient):
    body = _body(patient, practitioner, chairId=str(chair.id), appointmentType="treatment", notes="Crown prep")

    response = post_json(dentist.session_client(), "/book", body)

    assert response.status_code == 201, response.content
    booked = response.json()
    assert booked["chair"] == {"id": str(chair.id), "name": "Surgery 1"}
    assert booked["locationId"] == str(location.id)  # the chair's location
    assert (booked["status"], booked["appointmentType"]) == ("booked", "treatment")
    appointment = Appointment.objects.for_org(org).get(id=booked["id"])
    assert appointment.notes == "Crown prep"
    assert AppointmentVisit.objects.for_org(org).get(appointment=appointment).chair_id == chair.id
    created = Event.objects.for_org(org).filter(type="appointment.created", subject_id=str(appointment.id))
    assert created.count() == 1
    assert "Crown prep" not in str(created.get().data)


def test_book_without_a_chair(front_desk, practitioner, patient, org):
    response = post_json(front_desk.session_client(), "/book", _body(patient, practitioner))
    assert response.status_code == 201, response.content
    assert response.json()["chair"] is None
    assert not AppointmentVisit.objects.for_org(org).exists()


def test_a_clash_is_409_and_books_nothing(owner, practitioner, patient, chair, org):
    client = owner.session_client()
    first = post_json(client, "/book", _body(patient, practitioner, chairId=str(chair.id))).json()

    clash = post_json(
        client, "/book", _body(patient, practitioner, START + timedelta(minutes=15), chairId=str(chair.id))
    )

    body = assert_error(clash, 409, "APPOINTMENT_CONFLICT")
    assert body["details"]["conflictingAppointmentId"] == first["id"]
    assert Appointment.objects.for_org(org).count() == 1
    assert AppointmentVisit.objects.for_org(org).count() == 1


def test_bad_input(owner, practitioner, patient, chair, org):
    client = owner.session_client()
    missing = assert_error(post_json(client, "/book", {"patientId": str(patient.id)}), 400, "VALIDATION_ERROR")
    assert {"practitionerId", "startsAt", "endsAt"} <= set(missing["details"]["fields"])
    backwards = _body(patient, practitioner)
    backwards["endsAt"] = (START - timedelta(minutes=5)).isoformat()
    assert "endsAt" in assert_error(post_json(client, "/book", backwards), 400, "VALIDATION_ERROR")["details"]["fields"]
    naive = _body(patient, practitioner)
    naive["startsAt"] = "2026-05-04T09:00:00"
    assert_error(post_json(client, "/book", naive), 400, "VALIDATION_ERROR")
    assert_error(
        post_json(client, "/book", _body(patient, practitioner, appointmentType="party")), 400, "VALIDATION_ERROR"
    )
    assert_error(post_json(client, "/book", _body(patient, practitioner, room="3")), 400, "VALIDATION_ERROR")
    elsewhere = LocationFactory(organization=org)
    mismatch = post_json(
        client, "/book", _body(patient, practitioner, chairId=str(chair.id), locationId=str(elsewhere.id))
    )
    assert "chairId" in assert_error(mismatch, 400, "VALIDATION_ERROR")["details"]["fields"]
    chair.active = False
    chair.save()
    assert_error(
        post_json(client, "/book", _body(patient, practitioner, chairId=str(chair.id))), 400, "VALIDATION_ERROR"
    )
    assert not Appointment.objects.for_org(org).exists()


def test_another_practices_ids_are_400(owner, outsider, practitioner, patient, org):
    client = owner.session_client()
    their_patient = PatientFactory(organization=outsider.organization)
    their_practitioner = PractitionerFactory(organization=outsider.organization)
    their_chair = Chair.objects.create(
        organization=outsider.organization, location=LocationFactory(organization=outsider.organization), name="T"
    )
    for body, field in (
        (_body(their_patient, practitioner), "patientId"),
        (_body(patient, their_practitioner), "practitionerId"),
        (_body(patient, practitioner, chairId=str(their_chair.id)), "chairId"),
    ):
        assert field in assert_error(post_json(client, "/book", body), 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not Appointment.objects.unscoped().exists()


def test_roles_without_pms_diary(member_factory, org, practitioner, patient):
    telesales = member_factory(role="telesales", organization=org)
    assert_error(post_json(telesales.session_client(), "/book", _body(patient, practitioner)), 403, "PERMISSION_DENIED")
