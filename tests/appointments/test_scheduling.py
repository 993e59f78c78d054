"""Scheduling: a practitioner's working week (GET/PUT /scheduling/practitioners/{id}/working-hours), the practice
timezone (GET/PATCH /settings/scheduling) and the free slots (GET /scheduling/availability) they produce — in local
time across daylight-saving changes, never in the past, never over an appointment that holds time."""

import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from apps.accounts.models import Organization
from apps.patients.models import Practitioner
from tests.appointments.helpers import (
    AVAILABILITY,
    DAY,
    SETTINGS,
    START,
    assert_refused,
    create_treatment,
    hours,
    hours_url,
    make_appointment,
    patch_json,
    put_json,
    set_hours,
    set_timezone,
    slot_starts,
    snapshot,
    wire,
)
from tests.factories import LocationFactory, PractitionerFactory
from tests.helpers import assert_error

TUESDAY = START.weekday()
SATURDAY, SUNDAY = 5, 6
SPRING_FORWARD = date(2031, 3, 30)  # a Sunday: Europe's clocks go from 02:00 to 03:00
FALL_BACK = date(2031, 10, 26)  # a Sunday: Europe's clocks go from 03:00 back to 02:00


def utc(*args) -> str:
    return wire(datetime(*args, tzinfo=UTC))


def availability(client, first=DAY, last=None, **query):
    query = {"startDate": str(first), "endDate": str(last or first)} | query
    if "treatmentId" not in query:
        query.setdefault("durationMinutes", 30)
    return client.get(AVAILABILITY, query)


# --- working hours ---------------------------------------------------------------------------------------------------


def test_a_practitioner_without_hours_has_an_empty_week(api, practitioner):
    response = api.get(hours_url(practitioner))

    assert response.status_code == 200, response.content
    assert response.json() == {"practitionerId": str(practitioner.id), "timezone": "UTC", "intervals": []}


def test_put_replaces_the_week_and_answers_it_in_order(api, owner, practitioner, location):
    set_hours(api, practitioner, hours(0, "08:00", "12:00"))

    response = set_hours(
        api,
        practitioner,
        hours(TUESDAY, "14:00", "18:00"),
        hours(TUESDAY, "09:00", "12:00", location=location),
        hours(0, "09:30", "13:00"),
    )

    assert response.status_code == 200, response.content
    expected = {
        "practitionerId": str(practitioner.id),
        "timezone": "UTC",
        "intervals": [
            {"weekday": 0, "startTime": "09:30", "endTime": "13:00", "locationId": None},
            {"weekday": TUESDAY, "startTime": "09:00", "endTime": "12:00", "locationId": str(location.id)},
            {"weekday": TUESDAY, "startTime": "14:00", "endTime": "18:00", "locationId": None},
        ],
    }
    assert response.json() == expected
    assert api.get(hours_url(practitioner)).json() == expected


def test_an_empty_list_clears_the_week(api, practitioner):
    set_hours(api, practitioner, hours(0, "08:00", "12:00"))

    assert set_hours(api, practitioner).json()["intervals"] == []
    assert api.get(hours_url(practitioner)).json()["intervals"] == []


def test_touching_intervals_and_the_same_times_on_other_days_are_fine(api, practitioner):
    response = set_hours(
        api,
        practitioner,
        hours(TUESDAY, "09:00", "12:00"),
        hours(TUESDAY, "12:00", "15:00"),
        hours(SATURDAY, "09:00", "12:00"),
    )

    assert response.status_code == 200, response.content
    assert len(response.json()["intervals"]) == 3


def test_the_week_of_each_practitioner_is_its_own(api, owner, practitioner):
    colleague = PractitionerFactory(organization=owner.organization)
    set_hours(api, colleague, hours(SUNDAY, "10:00", "11:00"))

    set_hours(api, practitioner, hours(TUESDAY, "09:00", "12:00"))

    assert [i["weekday"] for i in api.get(hours_url(colleague)).json()["intervals"]] == [SUNDAY]


@pytest.mark.parametrize(
    ("intervals", "field"),
    [
        ([hours(7, "09:00", "12:00")], "intervals"),
        ([hours(-1, "09:00", "12:00")], "intervals"),
        ([{"weekday": "monday", "startTime": "09:00", "endTime": "12:00"}], "intervals"),
        ([{"weekday": 1, "startTime": "25:00", "endTime": "26:00"}], "intervals"),
        ([{"weekday": 1, "startTime": "09:00"}], "intervals"),
        ([{"weekday": 1, "startTime": "09:00", "endTime": "12:00", "breakMinutes": 30}], "intervals"),
        ([hours(1, "12:00", "12:00")], "intervals[0].endTime"),
        ([hours(1, "09:00", "12:00"), hours(1, "13:00", "12:30")], "intervals[1].endTime"),
        ([hours(1, "09:00", "12:00"), hours(1, "11:59", "15:00")], "intervals"),
        ([hours(1, "09:00", "18:00"), hours(1, "10:00", "11:00")], "intervals"),
        ([hours(1, "09:00", "12:00", location=uuid.uuid4())], "intervals"),
        ([hours(1, "09:00", "10:00")] * 51, "intervals"),
        ("every weekday", "intervals"),
        (None, "intervals"),
    ],
)
def test_working_hours_validation_is_400_naming_the_field(api, owner, practitioner, intervals, field):
    set_hours(api, practitioner, hours(0, "08:00", "12:00"))

    assert_refused(
        owner.organization, lambda: put_json(api, hours_url(practitioner), {"intervals": intervals}), field=field
    )


def test_weekday_seven_names_the_interval_and_its_field(api, practitioner):
    response = set_hours(api, practitioner, hours(1, "09:00", "12:00"), hours(7, "09:00", "12:00"))

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert set(body["details"]["fields"]["intervals"]["1"]) == {"weekday"}


@pytest.mark.parametrize(
    ("raw", "field"), [("", "body"), ("{}", "intervals"), ('{"intervals": [], "days": []}', "days"), ("[]", "body")]
)
def test_working_hours_with_an_empty_or_wrong_body_is_400(api, owner, practitioner, raw, field):
    assert_refused(
        owner.organization, lambda: api.put(hours_url(practitioner), raw, content_type="application/json"), field=field
    )


def test_an_archived_location_cannot_be_given_to_working_hours(api, owner, practitioner):
    location = LocationFactory(organization=owner.organization, archived_at=timezone.now())

    response = set_hours(api, practitioner, hours(1, "09:00", "12:00", location=location))

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"intervals": {"0": {"locationId": ["is archived"]}}}


def test_an_unknown_practitioner_is_404(api, owner):
    before = snapshot(owner.organization)

    assert_error(api.get(hours_url(uuid.uuid4())), 404, "NOT_FOUND")
    assert_error(set_hours(api, uuid.uuid4(), hours(1, "09:00", "12:00")), 404, "NOT_FOUND")
    body = assert_error(api.get(hours_url("nope")), 400, "VALIDATION_ERROR")
    assert "id" in body["details"]["fields"]
    assert snapshot(owner.organization) == before


# --- the practice timezone -------------------------------------------------------------------------------------------


def test_read_and_set_the_practice_timezone(api, owner, practitioner):
    assert api.get(SETTINGS).json() == {"timezone": "UTC"}

    response = patch_json(api, SETTINGS, {"timezone": "Europe/Rome"})

    assert response.status_code == 200, response.content
    assert response.json() == {"timezone": "Europe/Rome"}
    assert api.get(SETTINGS).json() == {"timezone": "Europe/Rome"}
    assert Organization.objects.get(pk=owner.organization.pk).timezone == "Europe/Rome"
    assert api.get(hours_url(practitioner)).json()["timezone"] == "Europe/Rome"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"timezone": "Europe"}, "timezone"),
        ({"timezone": "europe/rome"}, "timezone"),
        ({"timezone": "../../etc/passwd"}, "timezone"),
        ({"timezone": "/etc/localtime"}, "timezone"),
        ({"timezone": "zone.tab"}, "timezone"),
        ({"timezone": "Europe/Rome\u0000"}, "timezone"),
        ({"timezone": ""}, "timezone"),
        ({"timezone": "A" * 65}, "timezone"),
        ({"timezone": 1}, "timezone"),
        ({"timezone": None}, "timezone"),
        ({}, "timezone"),
        ({"timezone": "UTC", "weekStartsOn": 1}, "weekStartsOn"),
    ],
)
def test_an_invalid_timezone_is_400(api, owner, payload, field):
    assert_refused(owner.organization, lambda: patch_json(api, SETTINGS, payload), field=field)


def test_settings_with_an_empty_body_is_400(api, owner):
    before = snapshot(owner.organization)

    response = api.patch(SETTINGS, "", content_type="application/json")

    assert "body" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert snapshot(owner.organization) == before


# --- availability ----------------------------------------------------------------------------------------------------


def test_slots_are_working_hours_in_the_practice_timezone(api, practitioner, location):
    set_timezone(api, "Europe/Rome")
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "10:00", location=location))

    response = availability(api, stepMinutes=30)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["timezone"] == "Europe/Rome" and body["durationMinutes"] == 30
    assert body["items"] == [
        {
            "practitionerId": str(practitioner.id),
            "locationId": str(location.id),
            "startsAt": utc(2031, 3, 4, 8, 0),
            "endsAt": utc(2031, 3, 4, 8, 30),
        },
        {
            "practitionerId": str(practitioner.id),
            "locationId": str(location.id),
            "startsAt": utc(2031, 3, 4, 8, 30),
            "endsAt": utc(2031, 3, 4, 9, 0),
        },
    ]


def test_local_working_hours_follow_the_spring_clock_change(api, practitioner):
    set_timezone(api, "Europe/Rome")
    set_hours(api, practitioner, hours(SATURDAY, "09:00", "10:00"), hours(SUNDAY, "09:00", "10:00"))

    response = availability(api, SPRING_FORWARD - timedelta(days=1), SPRING_FORWARD, durationMinutes=60)

    assert slot_starts(response) == [utc(2031, 3, 29, 8, 0), utc(2031, 3, 30, 7, 0)]


def test_local_working_hours_follow_the_autumn_clock_change(api, practitioner):
    set_timezone(api, "Europe/Rome")
    set_hours(api, practitioner, hours(SATURDAY, "09:00", "10:00"), hours(SUNDAY, "09:00", "10:00"))

    response = availability(api, FALL_BACK - timedelta(days=1), FALL_BACK, durationMinutes=60)

    assert slot_starts(response) == [utc(2031, 10, 25, 7, 0), utc(2031, 10, 26, 8, 0)]


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        # 01:00-04:00 local lasts two real hours when 02:00 is skipped…
        (SPRING_FORWARD, [(2031, 3, 30, 0, 0), (2031, 3, 30, 1, 0)]),
        # …and four when 02:00-03:00 happens twice.
        (FALL_BACK, [(2031, 10, 25, 23, 0), (2031, 10, 26, 0, 0), (2031, 10, 26, 1, 0), (2031, 10, 26, 2, 0)]),
    ],
    ids=["spring", "autumn"],
)
def test_hours_spanning_the_clock_change_give_real_hour_long_slots(api, practitioner, day, expected):
    set_timezone(api, "Europe/Rome")
    set_hours(api, practitioner, hours(SUNDAY, "01:00", "04:00"))

    response = availability(api, day, durationMinutes=60, stepMinutes=60)

    assert slot_starts(response) == [utc(*instant) for instant in expected]
    for slot in response.json()["items"]:
        starts = datetime.fromisoformat(slot["startsAt"])
        assert datetime.fromisoformat(slot["endsAt"]) - starts == timedelta(hours=1)


def test_past_slots_are_left_out(api, practitioner, clock):
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "11:00"))
    clock.move_to(START + timedelta(minutes=20), tick=False)

    assert slot_starts(availability(api, stepMinutes=30, durationMinutes=60)) == [wire(0.5), wire(1)]

    clock.move_to(START + timedelta(minutes=30), tick=False)  # a slot starting right now is still offered
    assert slot_starts(availability(api, stepMinutes=30, durationMinutes=60)) == [wire(0.5), wire(1)]

    clock.move_to(START + timedelta(days=1), tick=False)
    assert slot_starts(availability(api, stepMinutes=30, durationMinutes=60)) == []


def test_appointments_holding_time_take_slots_away(api, owner, practitioner):
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "12:00"))
    make_appointment(owner.organization, practitioner=practitioner, start=0.5, end=1)
    make_appointment(owner.organization, practitioner=practitioner, start=2, end=2.5, status="completed")
    make_appointment(owner.organization, practitioner=practitioner, start=1, end=2, status="cancelled")
    make_appointment(owner.organization, practitioner=practitioner, start=2.5, end=3, status="no_show")
    make_appointment(owner.organization, start=0, end=3)  # another practitioner's

    response = availability(api, stepMinutes=30)

    assert slot_starts(response) == [wire(0), wire(1), wire(1.5), wire(2.5)]


def test_an_archived_practitioner_offers_no_slots(api, owner, practitioner):
    colleague = PractitionerFactory(organization=owner.organization)
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "10:00"))
    set_hours(api, colleague, hours(TUESDAY, "09:00", "10:00"))
    Practitioner.objects.for_org(owner.organization).filter(id=practitioner.id).update(archived_at=timezone.now())

    everyone = availability(api, durationMinutes=60)
    assert [slot["practitionerId"] for slot in everyone.json()["items"]] == [str(colleague.id)]
    assert slot_starts(availability(api, durationMinutes=60, practitionerIds=str(practitioner.id))) == []


def test_a_treatment_gives_the_slot_length(api, practitioner):
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "12:00"))
    implant = create_treatment(api, name="Implant", durationMinutes=90)

    response = availability(api, treatmentId=implant["id"], stepMinutes=30)

    assert slot_starts(response) == [wire(0), wire(0.5), wire(1), wire(1.5)]
    assert response.json()["durationMinutes"] == 90
    assert response.json()["items"][0]["endsAt"] == wire(1.5)


def test_filter_by_practitioners_and_location_and_the_order_of_slots(api, owner, location):
    org = owner.organization
    first, second, third = sorted((PractitionerFactory(organization=org) for _ in range(3)), key=lambda p: str(p.id))
    set_hours(api, first, hours(TUESDAY, "09:30", "10:00"))
    set_hours(api, second, hours(TUESDAY, "09:00", "10:00", location=location))
    set_hours(api, third, hours(TUESDAY, "09:00", "09:30"))

    everyone = availability(api, stepMinutes=30).json()["items"]
    assert [(s["startsAt"], s["practitionerId"]) for s in everyone] == [
        (wire(0), str(second.id)),
        (wire(0), str(third.id)),
        (wire(0.5), str(first.id)),
        (wire(0.5), str(second.id)),
    ]
    chosen = availability(api, stepMinutes=30, practitionerIds=f"{first.id},{third.id}").json()["items"]
    assert {s["practitionerId"] for s in chosen} == {str(first.id), str(third.id)}
    at_location = availability(api, stepMinutes=30, locationId=str(location.id)).json()["items"]
    assert {s["practitionerId"] for s in at_location} == {str(second.id)}
    assert {s["locationId"] for s in at_location} == {str(location.id)}


def test_days_without_hours_offer_nothing_and_limit_cuts_the_list(api, practitioner):
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "10:00"))
    monday = START.date() - timedelta(days=1)

    next_tuesday = monday + timedelta(days=8)
    week = availability(api, monday, next_tuesday, stepMinutes=30)
    assert slot_starts(week) == [wire(0), wire(0.5), wire(24 * 7), wire(24 * 7 + 0.5)]
    assert slot_starts(availability(api, monday, next_tuesday, stepMinutes=30, limit=3)) == [
        wire(0),
        wire(0.5),
        wire(24 * 7),
    ]
    assert slot_starts(availability(api, monday)) == []


def test_a_thirty_one_day_range_is_accepted(api, practitioner):
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "09:30"))

    response = availability(api, START.date(), START.date() + timedelta(days=30))

    assert len(slot_starts(response)) == 5  # five Tuesdays from 4 to 1 April inclusive


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"startDate": None}, "startDate"),
        ({"endDate": None}, "endDate"),
        ({"startDate": "2031-02-30"}, "startDate"),
        ({"startDate": "2031-03-04T09:00:00Z"}, "startDate"),
        ({"endDate": "2031-03-03"}, "endDate"),
        ({"endDate": "2031-04-04"}, "endDate"),
        ({"durationMinutes": None}, "durationMinutes"),
        ({"treatmentId": str(uuid.uuid4())}, "durationMinutes"),
        ({"durationMinutes": 4}, "durationMinutes"),
        ({"durationMinutes": 721}, "durationMinutes"),
        ({"durationMinutes": "half an hour"}, "durationMinutes"),
        ({"stepMinutes": 4}, "stepMinutes"),
        ({"stepMinutes": 121}, "stepMinutes"),
        ({"stepMinutes": 0}, "stepMinutes"),
        ({"durationMinutes": None, "treatmentId": "implant"}, "treatmentId"),
        ({"durationMinutes": None, "treatmentId": str(uuid.uuid4())}, "treatmentId"),
        ({"practitionerIds": "abc"}, "practitionerIds"),
        ({"locationId": "north"}, "locationId"),
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"timezone": "Europe/Rome"}, "timezone"),
    ],
)
def test_availability_validation_is_400_naming_the_parameter(api, practitioner, query, field):
    set_hours(api, practitioner, hours(TUESDAY, "09:00", "10:00"))
    base = {"startDate": DAY, "endDate": DAY, "durationMinutes": 30}
    params = {key: value for key, value in (base | query).items() if value is not None}

    body = assert_error(api.get(AVAILABILITY, params), 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
