"""The public surface's guards: the per-practice buckets (429 with Retry-After), the 256 KiB cap before parsing (413),
the abuse screen per client address, and 503 with Retry-After when a write cannot be stored (nothing kept)."""

import json
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection

from apps.appointments.models import Appointment
from apps.booking.models import BookingHold
from tests.booking.helpers import (
    PATIENT,
    availability,
    booked,
    complete,
    config,
    held,
    hold,
    manage,
    public,
    slot,
    wire,
)
from tests.helpers import assert_error

CAP = 256 * 1024


def assert_limited(response):
    body = assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) >= 1
    return body


def test_config_bucket_is_per_practice(settings, page, other_page):
    settings.SVC_BOOKING_CONFIG_BUCKET = (2, 0.001)
    assert config(page["token"]).status_code == 200
    assert config(page["token"]).status_code == 200
    assert_limited(config(page["token"]))
    assert config(other_page["token"]).status_code == 200  # another practice's bucket
    assert availability(page["token"]).status_code == 200  # another route's bucket


def test_availability_bucket(settings, page):
    settings.SVC_BOOKING_AVAILABILITY_BUCKET = (1, 0.001)
    assert availability(page["token"]).status_code == 200
    assert_limited(availability(page["token"]))
    assert config(page["token"]).status_code == 200


def test_hold_bucket_and_the_completes_own_bucket(settings, page, practice):
    _, practitioners, _ = practice
    settings.SVC_BOOKING_HOLD_BUCKET = (1, 0.001)
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    assert_limited(hold(page["token"], str(practitioners[0].id), slot(1)))
    # Completing has its own bucket: an exhausted hold bucket does not stop a patient finishing.
    settings.SVC_BOOKING_COMPLETE_BUCKET = (1, 0.001)
    assert complete(page["token"], hold_id).status_code == 201
    assert_limited(complete(page["token"], hold_id))


def test_unknown_tokens_take_no_practices_bucket(settings, page):
    settings.SVC_BOOKING_CONFIG_BUCKET = (1, 0.001)
    for _ in range(3):
        assert_error(config("unknown"), 404, "NOT_FOUND")
    assert config(page["token"]).status_code == 200


def test_the_abuse_screen_limits_a_client_address_even_for_unknown_tokens(settings, page):
    settings.SVC_PUBLIC_SCREEN_RATE = "3/m"
    assert config(page["token"]).status_code == 200
    assert_error(config("unknown"), 404, "NOT_FOUND")
    assert availability(page["token"]).status_code == 200
    assert_limited(config("unknown"))
    assert_limited(config(page["token"]))
    elsewhere = public()
    elsewhere.defaults["REMOTE_ADDR"] = "203.0.113.9"
    assert config(page["token"], client=elsewhere).status_code == 200


def big_body(extra: dict) -> str:
    return json.dumps(extra | {"notes": "x" * CAP})


@pytest.mark.parametrize("kind", ["hold", "complete", "cancel", "reschedule"])
def test_bodies_over_256_kib_are_413_before_parsing(page, practice, owner, kind):
    _, practitioners, _ = practice
    token = page["token"]
    if kind == "hold":
        path = f"/booking/{token}/holds"
    elif kind == "complete":
        hold_id = held(token, str(practitioners[0].id), slot(0))["holdId"]
        path = f"/booking/{token}/holds/{hold_id}/complete"
    else:
        path = manage(booked(page["token"], str(practitioners[1].id), slot(1))["uid"], kind)
    before = (BookingHold.objects.unscoped().count(), Appointment.objects.for_org(owner.organization).count())
    response = public().post(path, big_body({}), content_type="application/json")
    body = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert body["details"] == {"maxBytes": CAP}
    assert (BookingHold.objects.unscoped().count(), Appointment.objects.for_org(owner.organization).count()) == before


def test_a_body_just_under_the_cap_is_parsed(page, practice):
    _, practitioners, _ = practice
    body = {"practitionerId": str(practitioners[0].id), "startsAt": wire(slot(0)), "pad": ""}
    body["pad"] = "x" * (CAP - len(json.dumps(body)) - 10)
    response = public().post(f"/booking/{page['token']}/holds", json.dumps(body), content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR")  # parsed: the unknown field is named


@contextmanager
def failing_insert(table: str):
    def wrapper(execute, sql, params, many, context):
        if sql.startswith(f'INSERT INTO "{table}"'):
            raise OperationalError("connection lost")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield


def test_a_hold_that_cannot_be_stored_is_503_and_nothing_is_kept(page, practice):
    _, practitioners, _ = practice
    with failing_insert("booking_bookinghold"):
        response = hold(page["token"], str(practitioners[0].id), slot(0))
    assert_error(response, 503, "BOOKING_NOT_STORED")
    assert response["Retry-After"] == "30"
    assert not BookingHold.objects.unscoped().exists()
    assert hold(page["token"], str(practitioners[0].id), slot(0)).status_code == 201


def test_a_complete_that_cannot_be_stored_is_503_and_the_retry_books(page, practice, owner):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    with failing_insert("appointments_appointment"):
        response = complete(page["token"], hold_id)
    assert_error(response, 503, "BOOKING_NOT_STORED")
    assert not Appointment.objects.for_org(owner.organization).exists()
    assert complete(page["token"], hold_id, PATIENT).status_code == 201
