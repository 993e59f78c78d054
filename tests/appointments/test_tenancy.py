"""Tenant isolation on every route: another practice's ids in a path are 404, in a body 400 naming the field, and
lists, the calendar and availability never show or count another practice's rows. Nothing changes on a refusal,
in either practice."""

import pytest

from tests.appointments.helpers import (
    APPOINTMENTS,
    AVAILABILITY,
    CALENDAR,
    DAY,
    create_journey,
    create_treatment,
    hours,
    hours_url,
    iso,
    make_appointment,
    patch_json,
    post_json,
    set_hours,
    slot_starts,
    snapshot,
    url,
    wire,
)
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory
from tests.helpers import assert_error

WEEKDAY = 1  # START is a Tuesday


@pytest.fixture
def theirs(outsider):
    """The other practice's records, each a valid choice there."""
    org = outsider.organization
    client = outsider.api_client()
    patient = PatientFactory(organization=org)
    practitioner = PractitionerFactory(organization=org)
    treatment = create_treatment(client, name="Their implant")
    return {
        "patient": patient,
        "practitioner": practitioner,
        "location": LocationFactory(organization=org),
        "treatment": treatment,
        "journey": create_journey(client, patient, treatment),
        "appointment": make_appointment(org, patient=patient, practitioner=practitioner, start=0, end=1),
    }


@pytest.fixture
def ours(owner, patient, practitioner):
    return make_appointment(owner.organization, patient=patient, practitioner=practitioner, start=3, end=4)


def _both(owner, outsider) -> tuple[dict, dict]:
    return snapshot(owner.organization), snapshot(outsider.organization)


def _their_id(theirs, field: str) -> str:
    record = theirs[field.removesuffix("Id")]
    return record["id"] if isinstance(record, dict) else str(record.id)


PATH_ROUTES = [
    ("get", lambda t: url(t["appointment"]), None),
    ("patch", lambda t: url(t["appointment"]), {"notes": "mine now"}),
    ("post", lambda t: url(t["appointment"], "reschedule"), {"startsAt": iso(5), "endsAt": iso(6)}),
    ("post", lambda t: url(t["appointment"], "status"), {"status": "confirmed"}),
    ("post", lambda t: url(t["appointment"], "cancel"), {"reason": "Not yours"}),
    ("get", lambda t: hours_url(t["practitioner"]), None),
    ("put", lambda t: hours_url(t["practitioner"]), {"intervals": []}),
]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    PATH_ROUTES,
    ids=["read", "update", "reschedule", "status", "cancel", "hours-read", "hours-replace"],
)
def test_another_practices_id_in_the_path_is_404(api, owner, outsider, theirs, method, path, body):
    set_hours(outsider.api_client(), theirs["practitioner"], hours(WEEKDAY, "09:00", "17:00"))
    before = _both(owner, outsider)

    call = getattr(api, method)
    response = call(path(theirs)) if body is None else call(path(theirs), body, content_type="application/json")

    assert_error(response, 404, "NOT_FOUND")
    assert _both(owner, outsider) == before


@pytest.mark.parametrize("field", ["patientId", "practitionerId", "locationId", "treatmentId", "journeyId"])
def test_another_practices_id_in_a_booking_is_400(api, owner, outsider, patient, practitioner, theirs, field):
    ids = {"patientId": str(patient.id), "practitionerId": str(practitioner.id), field: _their_id(theirs, field)}
    before = _both(owner, outsider)

    response = post_json(api, APPOINTMENTS, {"startsAt": iso(5), "endsAt": iso(6), **ids})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {field: ["does not exist in this practice"]}
    assert _both(owner, outsider) == before


@pytest.mark.parametrize("field", ["practitionerId", "locationId", "treatmentId", "journeyId"])
def test_another_practices_id_in_an_update_is_400(api, owner, outsider, ours, theirs, field):
    before = _both(owner, outsider)

    response = patch_json(api, url(ours), {field: _their_id(theirs, field)})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {field: ["does not exist in this practice"]}
    assert _both(owner, outsider) == before


@pytest.mark.parametrize("field", ["practitionerId", "locationId"])
def test_another_practices_id_in_a_reschedule_is_400(api, owner, outsider, ours, theirs, field):
    before = _both(owner, outsider)

    response = post_json(
        api, url(ours, "reschedule"), {"startsAt": iso(5), "endsAt": iso(6), field: _their_id(theirs, field)}
    )

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {field: ["does not exist in this practice"]}
    assert _both(owner, outsider) == before


def test_another_practices_location_in_working_hours_is_400(api, owner, outsider, practitioner, theirs):
    before = _both(owner, outsider)

    response = set_hours(api, practitioner, hours(WEEKDAY, "09:00", "12:00", location=theirs["location"]))

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"intervals": {"0": {"locationId": ["does not exist in this practice"]}}}
    assert _both(owner, outsider) == before


def test_another_practices_treatment_in_availability_is_400(api, practitioner, theirs):
    set_hours(api, practitioner, hours(WEEKDAY, "09:00", "12:00"))

    response = api.get(AVAILABILITY, {"startDate": DAY, "endDate": DAY, "treatmentId": theirs["treatment"]["id"]})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"treatmentId": ["does not exist in this practice"]}


def test_the_list_never_shows_another_practices_rows(api, ours, theirs):
    everything = api.get(APPOINTMENTS).json()
    assert [item["id"] for item in everything["items"]] == [str(ours.id)]
    assert everything["total"] == 1
    for query in (
        {"patientId": str(theirs["patient"].id)},
        {"practitionerId": str(theirs["practitioner"].id)},
        {"status": "booked", "startsBefore": iso(2)},
    ):
        page = api.get(APPOINTMENTS, query).json()
        assert page["items"] == [] and page["total"] == 0, query


def test_the_calendar_never_shows_another_practices_rows(api, ours, theirs):
    window = {"start": iso(-1), "end": iso(24)}

    assert [item["id"] for item in api.get(CALENDAR, window).json()["items"]] == [str(ours.id)]
    filtered = api.get(CALENDAR, window | {"practitionerIds": str(theirs["practitioner"].id)})
    assert filtered.status_code == 200 and filtered.json()["items"] == []
    by_location = api.get(CALENDAR, window | {"locationIds": str(theirs["location"].id)})
    assert by_location.status_code == 200 and by_location.json()["items"] == []


def test_availability_ignores_another_practices_appointments_and_practitioners(api, owner, outsider, practitioner):
    set_hours(api, practitioner, hours(WEEKDAY, "09:00", "10:00"))
    their_practitioner = PractitionerFactory(organization=outsider.organization)
    set_hours(outsider.api_client(), their_practitioner, hours(WEEKDAY, "09:00", "10:00"))
    # A row of the other practice that names our practitioner (it cannot be made through the API) must not
    # count against our diary.
    make_appointment(outsider.organization, practitioner=practitioner, start=0, end=1)
    query = {"startDate": DAY, "endDate": DAY, "durationMinutes": 30, "stepMinutes": 30}

    assert slot_starts(api.get(AVAILABILITY, query)) == [wire(0), wire(0.5)]
    only_theirs = api.get(AVAILABILITY, query | {"practitionerIds": str(their_practitioner.id)})
    assert slot_starts(only_theirs) == []
