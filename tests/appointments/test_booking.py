"""Booking, no double booking, reschedule, status moves and cancel through HTTP."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from apps.appointments.models import Appointment
from apps.events.models import Event
from apps.patients.models import Activity
from tests.factories import LocationFactory, PractitionerFactory

START = datetime(2031, 3, 4, 9, 0, tzinfo=UTC)


def at(hours: float) -> str:
    return (START + timedelta(hours=hours)).isoformat()


def book(api, patient, practitioner, start=0, end=0.5, **extra):
    body = {
        "patientId": str(patient.id),
        "practitionerId": str(practitioner.id),
        "startsAt": at(start),
        "endsAt": at(end),
    }
    return api.post("/appointments", body | extra, content_type="application/json")


def test_booking_answers_the_appointment_and_records_event_and_timeline(api, owner, patient, practitioner):
    location = LocationFactory(organization=owner.organization)
    response = book(
        api, patient, practitioner, locationId=str(location.id), notes="Nervous patient", appointmentType="hygiene"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "booked"
    assert body["patient"]["id"] == str(patient.id)
    assert body["practitioner"] == {"id": str(practitioner.id), "name": practitioner.name}
    assert body["location"]["id"] == str(location.id)
    assert body["appointmentType"] == "hygiene"
    assert body["startsAt"] == "2031-03-04T09:00:00.000000Z"
    event = Event.objects.for_org(owner.organization).get(type="appointment.created")
    assert event.subject_id == body["id"]
    assert "Nervous" not in str(event.data)
    assert Activity.objects.for_org(owner.organization).filter(patient=patient, kind="appointment_booked").exists()


def test_an_overlapping_booking_of_the_same_practitioner_is_409_naming_the_clash(api, owner, patient, practitioner):
    first = book(api, patient, practitioner, 0, 1).json()

    response = book(api, patient, practitioner, 0.5, 1.5)

    assert response.status_code == 409
    assert response.json()["code"] == "APPOINTMENT_CONFLICT"
    assert response.json()["details"] == {"conflictingAppointmentId": first["id"]}
    assert Appointment.objects.for_org(owner.organization).count() == 1
    # back to back is fine; another practitioner is fine; a cancelled appointment frees its time
    assert book(api, patient, practitioner, 1, 2).status_code == 201
    other = PractitionerFactory(organization=owner.organization)
    assert book(api, patient, other, 0, 1).status_code == 201
    assert api.post(f"/appointments/{first['id']}/cancel", {}, content_type="application/json").status_code == 200
    assert book(api, patient, practitioner, 0, 1).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_concurrent_bookings_of_one_slot_commit_once(owner, patient, practitioner):
    barrier = threading.Barrier(2)
    statuses = []

    def attempt():
        try:
            barrier.wait()
            statuses.append(book(owner.api_client(), patient, practitioner, 0, 1).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [201, 409]
    assert Appointment.objects.for_org(owner.organization).count() == 1


def test_reschedule_status_and_cancel(api, owner, patient, practitioner):
    appointment = book(api, patient, practitioner).json()
    url = f"/appointments/{appointment['id']}"

    confirmed = api.post(f"{url}/status", {"status": "confirmed"}, content_type="application/json")
    assert confirmed.json()["status"] == "confirmed"
    moved = api.post(f"{url}/reschedule", {"startsAt": at(2), "endsAt": at(3)}, content_type="application/json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["status"] == "booked"  # the new time is not confirmed yet
    assert moved.json()["startsAt"] == "2031-03-04T11:00:00.000000Z"
    event = Event.objects.for_org(owner.organization).get(type="appointment.rescheduled")
    assert event.data["previousStartsAt"] == "2031-03-04T09:00:00+00:00"
    assert set(event.data["changedFields"]) >= {"startsAt", "endsAt", "status"}

    refused = api.post(f"{url}/status", {"status": "completed"}, content_type="application/json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "APPOINTMENT_TRANSITION_NOT_ALLOWED"

    assert api.post(f"{url}/cancel", {"reason": "Ill"}, content_type="application/json").json()["status"] == "cancelled"
    again = api.post(f"{url}/cancel", {}, content_type="application/json")
    assert again.status_code == 200
    assert Event.objects.for_org(owner.organization).filter(type="appointment.status_changed").count() == 2
    closed = api.post(f"{url}/reschedule", {"startsAt": at(4), "endsAt": at(5)}, content_type="application/json")
    assert closed.status_code == 409
    assert closed.json()["code"] == "APPOINTMENT_CLOSED"


def test_calendar_and_availability(api, owner, patient, practitioner):
    assert (
        api.put(
            f"/scheduling/practitioners/{practitioner.id}/working-hours",
            {"intervals": [{"weekday": START.weekday(), "startTime": "09:00", "endTime": "11:00"}]},
            content_type="application/json",
        ).status_code
        == 200
    )
    book(api, patient, practitioner, 0, 1)

    calendar = api.get("/calendar", {"start": at(-1), "end": at(24)})
    assert calendar.status_code == 200, calendar.content
    assert len(calendar.json()["items"]) == 1

    slots = api.get(
        "/scheduling/availability",
        {"startDate": START.date().isoformat(), "endDate": START.date().isoformat(), "durationMinutes": 30},
    )
    assert slots.status_code == 200, slots.content
    assert [slot["startsAt"] for slot in slots.json()["items"]] == [
        "2031-03-04T10:00:00.000000Z",
        "2031-03-04T10:15:00.000000Z",
        "2031-03-04T10:30:00.000000Z",
    ]
