"""Booking (POST /appointments), reading (GET /appointments/{id}) and the list (GET /appointments): every field,
defaults, the journey → treatment rule, merged and archived records, and the validation envelope."""

import uuid

import pytest
from django.utils import timezone

from apps.appointments.models import Appointment
from apps.patients.models import Patient
from tests.appointments.helpers import (
    APPOINTMENTS,
    assert_refused,
    book,
    booking,
    create_journey,
    create_treatment,
    iso,
    make_appointment,
    post_json,
    url,
    wire,
)
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory
from tests.helpers import assert_error

APPOINTMENT_FIELDS = {
    "id",
    "patientId",
    "patient",
    "practitionerId",
    "practitioner",
    "locationId",
    "location",
    "treatmentId",
    "treatment",
    "journeyId",
    "appointmentType",
    "startsAt",
    "endsAt",
    "status",
    "statusChangedAt",
    "cancelReason",
    "notes",
    "createdAt",
    "updatedAt",
}
DROP = object()


# --- create ----------------------------------------------------------------------------------------------------------


def test_create_with_every_field_and_read_it_back(api, owner, patient, practitioner, location):
    implant = create_treatment(api, name="Implant", durationMinutes=90)
    journey = create_journey(api, patient, implant)

    response = book(
        api,
        patient,
        practitioner,
        0,
        1.5,
        locationId=str(location.id),
        treatmentId=implant["id"],
        journeyId=journey["id"],
        appointmentType="treatment",
        notes="Bring the X-rays",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == APPOINTMENT_FIELDS
    assert body["patientId"] == str(patient.id)
    assert body["patient"] == {"id": str(patient.id), "firstName": patient.first_name, "lastName": patient.last_name}
    assert body["practitionerId"] == str(practitioner.id)
    assert body["practitioner"] == {"id": str(practitioner.id), "name": practitioner.name}
    assert body["locationId"] == str(location.id)
    assert body["location"] == {"id": str(location.id), "name": location.name}
    assert body["treatmentId"] == implant["id"]
    assert body["treatment"] == {"id": implant["id"], "name": "Implant"}
    assert body["journeyId"] == journey["id"]
    assert body["appointmentType"] == "treatment"
    assert body["startsAt"] == wire(0)
    assert body["endsAt"] == wire(1.5)
    assert body["status"] == "booked"
    assert body["statusChangedAt"] is not None
    assert body["cancelReason"] == ""
    assert body["notes"] == "Bring the X-rays"
    assert api.get(url(body)).json() == body
    row = Appointment.objects.for_org(owner.organization).get(id=body["id"])
    assert row.created_by_id == owner.user.id


def test_create_with_only_the_required_fields_takes_the_defaults(api, patient, practitioner):
    response = book(api, patient, practitioner)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["appointmentType"] == "consultation"
    assert body["locationId"] is None and body["location"] is None
    assert body["treatmentId"] is None and body["treatment"] is None
    assert body["journeyId"] is None
    assert body["notes"] == "" and body["cancelReason"] == ""
    assert body["status"] == "booked"


def test_an_offset_is_kept_as_the_same_instant(api, patient, practitioner):
    response = book(
        api, patient, practitioner, startsAt="2031-03-04T10:00:00+01:00", endsAt="2031-03-04T11:30:00+01:00"
    )

    assert response.status_code == 201, response.content
    assert response.json()["startsAt"] == wire(0)
    assert response.json()["endsAt"] == wire(1.5)


def test_null_notes_are_stored_empty(api, patient, practitioner):
    response = book(api, patient, practitioner, notes=None)

    assert response.status_code == 201, response.content
    assert response.json()["notes"] == ""


def test_exactly_twelve_hours_is_allowed(api, patient, practitioner):
    assert book(api, patient, practitioner, 0, 12).status_code == 201


def test_a_journey_gives_its_treatment_when_treatment_id_is_absent(api, patient, practitioner):
    implant = create_treatment(api, name="Implant")
    journey = create_journey(api, patient, implant)

    response = book(api, patient, practitioner, journeyId=journey["id"])

    assert response.status_code == 201, response.content
    assert response.json()["treatmentId"] == implant["id"]
    assert response.json()["treatment"]["name"] == "Implant"


def test_an_explicit_treatment_wins_over_the_journeys(api, patient, practitioner):
    implant = create_treatment(api, name="Implant")
    whitening = create_treatment(api, name="Whitening")
    journey = create_journey(api, patient, implant)

    response = book(api, patient, practitioner, journeyId=journey["id"], treatmentId=whitening["id"])

    assert response.status_code == 201, response.content
    assert response.json()["treatmentId"] == whitening["id"]


def test_a_journey_of_another_patient_is_400(api, owner, patient, practitioner):
    journey = create_journey(api, PatientFactory(organization=owner.organization))

    body = assert_refused(owner.organization, lambda: book(api, patient, practitioner, journeyId=journey["id"]))
    assert body["details"]["fields"] == {"journeyId": ["belongs to another patient"]}


def test_a_merged_patient_is_409_patient_merged(api, owner, practitioner):
    survivor = PatientFactory(organization=owner.organization)
    duplicate = PatientFactory(organization=owner.organization)
    Patient.objects.for_org(owner.organization).filter(id=duplicate.id).update(merged_into=survivor)

    body = assert_refused(owner.organization, lambda: book(api, duplicate, practitioner), 409, "PATIENT_MERGED")
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}


@pytest.mark.parametrize("field", ["patientId", "practitionerId", "locationId"])
def test_archived_records_are_refused(api, owner, patient, practitioner, location, field):
    record = {"patientId": patient, "practitionerId": practitioner, "locationId": location}[field]
    type(record).objects.for_org(owner.organization).filter(id=record.id).update(archived_at=timezone.now())

    body = assert_refused(owner.organization, lambda: book(api, patient, practitioner, locationId=str(location.id)))
    assert body["details"]["fields"] == {field: ["is archived"]}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"patientId": DROP}, "patientId"),
        ({"practitionerId": DROP}, "practitionerId"),
        ({"startsAt": DROP}, "startsAt"),
        ({"endsAt": DROP}, "endsAt"),
        ({"startsAt": "2031-03-04T09:00:00"}, "startsAt"),
        ({"endsAt": "2031-03-04T09:30:00"}, "endsAt"),
        ({"startsAt": "tomorrow"}, "startsAt"),
        ({"startsAt": "2031-02-30T09:00:00Z"}, "startsAt"),
        ({"startsAt": 1_900_000_000}, "startsAt"),
        ({"startsAt": None}, "startsAt"),
        ({"endsAt": iso(0)}, "endsAt"),
        ({"endsAt": iso(-1)}, "endsAt"),
        ({"endsAt": iso(12.25)}, "endsAt"),
        ({"endsAt": iso(24 * 400)}, "endsAt"),
        ({"patientId": "not-a-uuid"}, "patientId"),
        ({"patientId": 5}, "patientId"),
        ({"patientId": None}, "patientId"),
        ({"patientId": str(uuid.uuid4())}, "patientId"),
        ({"practitionerId": str(uuid.uuid4())}, "practitionerId"),
        ({"practitionerId": ["x"]}, "practitionerId"),
        ({"locationId": str(uuid.uuid4())}, "locationId"),
        ({"locationId": 12}, "locationId"),
        ({"treatmentId": str(uuid.uuid4())}, "treatmentId"),
        ({"treatmentId": "1234"}, "treatmentId"),
        ({"journeyId": str(uuid.uuid4())}, "journeyId"),
        ({"appointmentType": "surgery"}, "appointmentType"),
        ({"appointmentType": None}, "appointmentType"),
        ({"notes": 5}, "notes"),
        ({"notes": "n" * 5001}, "notes"),
        ({"status": "confirmed"}, "status"),
        ({"durationMinutes": 30}, "durationMinutes"),
        ({"id": str(uuid.uuid4())}, "id"),
    ],
)
def test_create_validation_is_400_naming_the_field(api, owner, patient, practitioner, changes, field):
    body = booking(patient, practitioner)
    for key, value in changes.items():
        if value is DROP:
            del body[key]
        else:
            body[key] = value

    details = assert_refused(owner.organization, lambda: post_json(api, APPOINTMENTS, body))["details"]
    assert field in details["fields"], details


@pytest.mark.parametrize("raw", ["", "{}", "[]", "null", "not json", '"booking"', "[{}]"])
def test_create_with_an_empty_or_non_object_body_is_400(api, owner, raw):
    assert_refused(owner.organization, lambda: api.post(APPOINTMENTS, raw, content_type="application/json"))


# --- read ------------------------------------------------------------------------------------------------------------


def test_read_one(api, owner, location):
    appointment = make_appointment(owner.organization, location=location, notes="Anxious", appointment_type="review")

    response = api.get(url(appointment))

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == APPOINTMENT_FIELDS
    assert body["id"] == str(appointment.id)
    assert body["location"] == {"id": str(location.id), "name": location.name}
    assert body["notes"] == "Anxious" and body["appointmentType"] == "review"


def test_read_an_unknown_id_is_404_and_a_malformed_one_400(api):
    assert_error(api.get(url(uuid.uuid4())), 404, "NOT_FOUND")
    body = assert_error(api.get(url("not-a-uuid")), 400, "VALIDATION_ERROR")
    assert "id" in body["details"]["fields"]


# --- list ------------------------------------------------------------------------------------------------------------


@pytest.fixture
def diary(owner, patient, practitioner, location):
    org = owner.organization
    other_patient = PatientFactory(organization=org)
    other_practitioner = PractitionerFactory(organization=org)
    other_location = LocationFactory(organization=org)
    rows = {
        "late": make_appointment(org, patient=patient, practitioner=practitioner, start=5, end=6),
        "early": make_appointment(
            org, patient=other_patient, practitioner=practitioner, start=0, end=1, location=location
        ),
        "cancelled": make_appointment(
            org, patient=patient, practitioner=practitioner, start=0, end=1, status="cancelled"
        ),
        "other": make_appointment(
            org, patient=other_patient, practitioner=other_practitioner, start=2, end=3, location=other_location
        ),
        "next_day": make_appointment(
            org, patient=patient, practitioner=other_practitioner, start=24, end=25, status="confirmed"
        ),
    }
    return rows


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_list_is_ordered_by_start_then_id_and_includes_cancelled(api, diary):
    response = api.get(APPOINTMENTS)

    first_two = sorted([str(diary["early"].id), str(diary["cancelled"].id)])
    assert _ids(response) == [*first_two, str(diary["other"].id), str(diary["late"].id), str(diary["next_day"].id)]
    assert response.json()["total"] == 5
    assert response.json()["limit"] == 25 and response.json()["offset"] == 0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (lambda d, p, pr, loc: {"patientId": str(p.id)}, ["cancelled", "late", "next_day"]),
        (lambda d, p, pr, loc: {"practitionerId": str(pr.id)}, ["early", "cancelled", "late"]),
        (lambda d, p, pr, loc: {"locationId": str(loc.id)}, ["early"]),
        (lambda d, p, pr, loc: {"status": "confirmed"}, ["next_day"]),
        (lambda d, p, pr, loc: {"status": "cancelled"}, ["cancelled"]),
        (lambda d, p, pr, loc: {"startsAfter": iso(2)}, ["other", "late", "next_day"]),
        (lambda d, p, pr, loc: {"startsBefore": iso(2)}, ["early", "cancelled"]),
        (lambda d, p, pr, loc: {"startsAfter": iso(1), "startsBefore": iso(24)}, ["other", "late"]),
        (lambda d, p, pr, loc: {"patientId": str(uuid.uuid4())}, []),
    ],
)
def test_list_filters(api, diary, patient, practitioner, location, query, expected):
    response = api.get(APPOINTMENTS, query(diary, patient, practitioner, location))

    assert sorted(_ids(response)) == sorted(str(diary[name].id) for name in expected)
    assert response.json()["total"] == len(expected)


def test_list_pages_with_limit_and_offset(api, diary):
    everything = _ids(api.get(APPOINTMENTS))

    page = api.get(APPOINTMENTS, {"limit": 2, "offset": 2})

    assert _ids(page) == everything[2:4]
    assert page.json()["total"] == 5 and page.json()["limit"] == 2 and page.json()["offset"] == 2
    assert _ids(api.get(APPOINTMENTS, {"offset": 10})) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"patientId": "nope"}, "patientId"),
        ({"practitionerId": "123"}, "practitionerId"),
        ({"locationId": "x"}, "locationId"),
        ({"status": "gone"}, "status"),
        ({"startsAfter": "2031-03-04T09:00:00"}, "startsAfter"),
        ({"startsBefore": "soon"}, "startsBefore"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"offset": -1}, "offset"),
        ({"sort": "startsAt"}, "sort"),
    ],
)
def test_list_query_validation_is_400_naming_the_parameter(api, query, field):
    body = assert_error(api.get(APPOINTMENTS, query), 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body


def test_the_list_reads_what_a_booking_wrote(api, owner, patient, practitioner):
    created = book(api, patient, practitioner, 1, 2).json()

    (item,) = api.get(APPOINTMENTS).json()["items"]

    assert item == created
    assert item["startsAt"] == wire(1)
