"""The patients area's hooks: erasing a patient (DELETE /patients/{id}) deletes their appointments in the same
transaction; merging (POST /patients/{id}/merge) moves the duplicate's appointments to the survivor, one
appointment.updated each."""

from apps.appointments.models import Appointment
from tests.appointments.helpers import (
    APPOINTMENTS,
    appointment_events,
    book,
    hours,
    make_appointment,
    post_json,
    set_hours,
    snapshot,
    url,
)
from tests.factories import PatientFactory
from tests.helpers import assert_error


def merge(client, survivor, duplicate):
    return post_json(client, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})


def test_erasing_a_patient_deletes_their_appointments(api, owner, patient, practitioner):
    org = owner.organization
    theirs = [book(api, patient, practitioner, n, n + 0.5).json()["id"] for n in range(2)]
    make_appointment(org, patient=patient, status="cancelled")
    someone_else = make_appointment(org, patient=PatientFactory(organization=org), start=5, end=6)
    set_hours(api, practitioner, hours(1, "09:00", "17:00"))
    events_before = len(appointment_events(org))

    response = api.delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    assert list(Appointment.objects.for_org(org).values_list("id", flat=True)) == [someone_else.id]
    for appointment_id in theirs:
        assert_error(api.get(url(appointment_id)), 404, "NOT_FOUND")
    assert len(appointment_events(org)) == events_before  # erasure records no appointment events
    assert len(api.get(f"/scheduling/practitioners/{practitioner.id}/working-hours").json()["intervals"]) == 1
    # the freed time can be booked again
    assert book(api, someone_else.patient, practitioner, 0, 0.5).status_code == 201


def test_erasing_a_patient_leaves_other_practices_alone(api, owner, outsider, patient):
    make_appointment(owner.organization, patient=patient)
    kept = make_appointment(outsider.organization, start=0, end=1)
    before = snapshot(outsider.organization)

    assert api.delete(f"/patients/{patient.id}").status_code == 200

    assert snapshot(outsider.organization) == before
    assert Appointment.objects.for_org(outsider.organization).get().id == kept.id


def test_merging_moves_the_duplicates_appointments_to_the_survivor(api, owner, practitioner):
    org = owner.organization
    survivor = PatientFactory(organization=org)
    duplicate = PatientFactory(organization=org)
    kept = make_appointment(org, patient=survivor, practitioner=practitioner, start=0, end=1)
    moved = [
        make_appointment(org, patient=duplicate, practitioner=practitioner, start=2, end=3),
        make_appointment(org, patient=duplicate, start=2, end=3, status="cancelled"),
    ]

    response = merge(api, survivor, duplicate)

    assert response.status_code == 200, response.content
    listed = api.get(APPOINTMENTS, {"patientId": str(survivor.id)}).json()
    assert sorted(item["id"] for item in listed["items"]) == sorted(str(a.id) for a in [kept, *moved])
    assert api.get(APPOINTMENTS, {"patientId": str(duplicate.id)}).json()["total"] == 0
    assert api.get(url(moved[0])).json()["patient"]["id"] == str(survivor.id)
    events = appointment_events(org, type="appointment.updated")
    assert sorted(event.subject_id for event in events) == sorted(str(a.id) for a in moved)
    for event in events:
        assert event.data == {
            "action": "patient_merged",
            "changedFields": ["patientId"],
            "patientId": str(survivor.id),
            "mergedPatientId": str(duplicate.id),
        }
    # the duplicate can no longer be booked; the survivor can
    assert_error(book(api, duplicate, practitioner, 5, 6), 409, "PATIENT_MERGED")
    assert book(api, survivor, practitioner, 5, 6).status_code == 201


def test_merging_a_patient_without_appointments_records_no_appointment_event(api, owner):
    org = owner.organization
    survivor, duplicate = PatientFactory(organization=org), PatientFactory(organization=org)
    make_appointment(org, patient=survivor)

    assert merge(api, survivor, duplicate).status_code == 200

    assert appointment_events(org) == []


def test_a_refused_merge_moves_nothing(api, owner, member_factory):
    org = owner.organization
    survivor, duplicate = PatientFactory(organization=org), PatientFactory(organization=org)
    make_appointment(org, patient=duplicate)
    before = snapshot(org)

    desk = member_factory(role="front_desk", organization=org).api_client()
    assert_error(merge(desk, survivor, duplicate), 403, "PERMISSION_DENIED")
    assert merge(api, survivor, survivor).status_code == 409

    assert snapshot(org) == before
