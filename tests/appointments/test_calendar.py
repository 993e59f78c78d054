"""GET /calendar: appointments overlapping [start, end), by practitioner and location, cancelled ones on request;
the range rules; and query counts of the calendar and the list that do not grow with the rows."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.appointments.helpers import (
    APPOINTMENTS,
    CALENDAR,
    START,
    create_treatment,
    iso,
    make_appointment,
    set_timezone,
    wire,
)
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory
from tests.helpers import assert_error

WINDOW = {"start": iso(0), "end": iso(8)}


def calendar_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_the_calendar_shows_what_overlaps_the_range_soonest_first(api, owner, practitioner):
    org = owner.organization
    inside = make_appointment(org, practitioner=practitioner, start=3, end=4)
    across_start = make_appointment(org, practitioner=practitioner, start=-0.5, end=0.5)
    across_end = make_appointment(org, practitioner=practitioner, start=7.5, end=8.5)
    make_appointment(org, start=-1, end=0)  # ends as the range starts
    make_appointment(org, start=8, end=9)  # starts as the range ends
    no_show = make_appointment(org, start=5, end=6, status="no_show")
    completed = make_appointment(org, start=1, end=2, status="completed")

    response = api.get(CALENDAR, WINDOW)

    assert calendar_ids(response) == [str(r.id) for r in (across_start, completed, inside, no_show, across_end)]
    body = response.json()
    assert body["start"] == wire(0) and body["end"] == wire(8)
    assert body["timezone"] == "UTC"
    assert body["items"][2] == api.get(f"{APPOINTMENTS}/{inside.id}").json()


def test_cancelled_appointments_only_with_include_cancelled(api, owner):
    booked = make_appointment(owner.organization, start=1, end=2)
    cancelled = make_appointment(owner.organization, start=1, end=2, status="cancelled")

    assert calendar_ids(api.get(CALENDAR, WINDOW)) == [str(booked.id)]
    assert calendar_ids(api.get(CALENDAR, WINDOW | {"includeCancelled": "false"})) == [str(booked.id)]
    both = calendar_ids(api.get(CALENDAR, WINDOW | {"includeCancelled": "true"}))
    assert sorted(both) == sorted([str(booked.id), str(cancelled.id)])


def test_filter_by_practitioners_and_locations(api, owner):
    org = owner.organization
    first, second, third = (PractitionerFactory(organization=org) for _ in range(3))
    north, south = LocationFactory(organization=org), LocationFactory(organization=org)
    a = make_appointment(org, practitioner=first, start=1, end=2, location=north)
    b = make_appointment(org, practitioner=second, start=2, end=3, location=south)
    make_appointment(org, practitioner=third, start=3, end=4)

    two = api.get(CALENDAR, WINDOW | {"practitionerIds": f"{first.id}, {second.id}"})
    assert calendar_ids(two) == [str(a.id), str(b.id)]
    assert calendar_ids(api.get(CALENDAR, WINDOW | {"locationIds": str(south.id)})) == [str(b.id)]
    both = api.get(CALENDAR, WINDOW | {"practitionerIds": str(first.id), "locationIds": f"{north.id},{south.id}"})
    assert calendar_ids(both) == [str(a.id)]
    assert calendar_ids(api.get(CALENDAR, WINDOW | {"practitionerIds": str(uuid.uuid4())})) == []


def test_the_calendar_reports_the_practice_timezone_and_takes_any_offset(api, owner):
    appointment = make_appointment(owner.organization, start=0, end=1)
    set_timezone(api, "Europe/Rome")

    response = api.get(CALENDAR, {"start": "2031-03-04T00:00:00+01:00", "end": "2031-03-05T00:00:00+01:00"})

    assert calendar_ids(response) == [str(appointment.id)]
    assert response.json()["timezone"] == "Europe/Rome"
    assert response.json()["start"] == "2031-03-03T23:00:00.000000Z"


@pytest.mark.parametrize(
    "span",
    [timedelta(days=42), timedelta(days=42, hours=1), timedelta(minutes=1)],
    ids=["six-weeks", "six-local-weeks-across-the-autumn-change", "one-minute"],
)
def test_ranges_up_to_six_weeks_are_accepted(api, span):
    response = api.get(CALENDAR, {"start": START.isoformat(), "end": (START + span).isoformat()})

    assert response.status_code == 200, response.content


def test_a_six_week_month_grid_across_the_autumn_clock_change(api, owner):
    set_timezone(api, "Europe/Rome")

    response = api.get(CALENDAR, {"start": "2031-09-29T00:00:00+02:00", "end": "2031-11-10T00:00:00+01:00"})

    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"end": iso(1)}, "start"),
        ({"start": iso(0)}, "end"),
        ({}, "start"),
        ({"start": "2031-03-04T09:00:00", "end": iso(1)}, "start"),
        ({"start": iso(0), "end": "2031-03-04T10:00:00"}, "end"),
        ({"start": "today", "end": iso(1)}, "start"),
        ({"start": iso(0), "end": iso(0)}, "end"),
        ({"start": iso(1), "end": iso(0)}, "end"),
        ({"start": iso(0), "end": iso(24 * 43)}, "end"),
        ({"start": iso(0), "end": iso(24 * 42 + 2)}, "end"),
        ({"start": iso(0), "end": iso(1), "practitionerIds": "abc"}, "practitionerIds"),
        ({"start": iso(0), "end": iso(1), "practitionerIds": f"{uuid.uuid4()},abc"}, "practitionerIds"),
        ({"start": iso(0), "end": iso(1), "practitionerIds": ""}, "practitionerIds"),
        ({"start": iso(0), "end": iso(1), "practitionerIds": ",".join(str(uuid.uuid4()) for _ in range(51))}, None),
        ({"start": iso(0), "end": iso(1), "locationIds": "x,y"}, "locationIds"),
        ({"start": iso(0), "end": iso(1), "includeCancelled": "maybe"}, "includeCancelled"),
        ({"start": iso(0), "end": iso(1), "status": "booked"}, "status"),
    ],
)
def test_calendar_validation_is_400_naming_the_parameter(api, query, field):
    body = assert_error(api.get(CALENDAR, query), 400, "VALIDATION_ERROR")
    assert (field or "practitionerIds") in body["details"]["fields"], body


# --- query counts ----------------------------------------------------------------------------------------------------


def _fill(owner, count: int) -> None:
    """`count` more appointments, each with its own patient, practitioner, location and treatment."""
    org = owner.organization
    for n in range(count):
        treatment = create_treatment(owner.api_client(), name=f"Treatment {uuid.uuid4()}")
        make_appointment(
            org,
            patient=PatientFactory(organization=org),
            practitioner=PractitionerFactory(organization=org),
            location=LocationFactory(organization=org),
            treatment_id=treatment["id"],
            start=n,
            end=n + 0.5,
        )


def _queries(client, path, query) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, query)
    assert response.status_code == 200, response.content
    return len(captured)


@pytest.mark.parametrize(
    ("path", "query"),
    [(APPOINTMENTS, {"limit": 100}), (CALENDAR, {"start": iso(-1), "end": iso(24 * 7)})],
    ids=["list", "calendar"],
)
def test_reads_of_thirty_rows_take_a_fixed_number_of_queries(api, owner, django_assert_max_num_queries, path, query):
    _fill(owner, 1)
    api.get(path, query)  # the first call may warm per-credential caches
    one = _queries(api, path, query)
    _fill(owner, 29)

    with django_assert_max_num_queries(10):
        response = api.get(path, query)

    assert len(response.json()["items"]) == 30
    assert _queries(api, path, query) == one
