"""No double booking of a practitioner: overlaps are 409 naming the clash, touching edges are fine, and only
appointments that hold time (booked, confirmed, arrived, completed) block; cancelled and no-show ones free it."""

import psycopg.errors
import pytest
from django.db import OperationalError

from apps.appointments.models import Appointment
from tests.appointments.helpers import (
    appointment_events,
    assert_refused,
    book,
    make_appointment,
    post_json,
    snapshot,
    url,
)
from tests.factories import PractitionerFactory
from tests.helpers import assert_error


@pytest.fixture
def existing(owner, practitioner):
    """An appointment from hour 1 to hour 2."""
    return make_appointment(owner.organization, practitioner=practitioner, start=1, end=2)


@pytest.mark.parametrize(
    ("start", "end"),
    [(1, 2), (0.5, 1.5), (1.5, 2.5), (1.25, 1.75), (0, 3), (1, 1.25), (1.75, 2)],
    ids=["same", "over-start", "over-end", "inside", "around", "same-start", "same-end"],
)
def test_an_overlap_is_409_naming_the_clash(api, owner, patient, practitioner, existing, start, end):
    body = assert_refused(
        owner.organization, lambda: book(api, patient, practitioner, start, end), 409, "APPOINTMENT_CONFLICT"
    )
    assert body["details"] == {"conflictingAppointmentId": str(existing.id)}


@pytest.mark.parametrize(("start", "end"), [(0, 1), (2, 3)], ids=["ends-at-its-start", "starts-at-its-end"])
def test_touching_edges_are_allowed(api, patient, practitioner, existing, start, end):
    response = book(api, patient, practitioner, start, end)

    assert response.status_code == 201, response.content


def test_filling_the_gap_between_two_appointments_is_allowed(api, owner, patient, practitioner, existing):
    make_appointment(owner.organization, practitioner=practitioner, start=3, end=4)

    assert book(api, patient, practitioner, 2, 3).status_code == 201


def test_the_earliest_clash_is_named(api, owner, patient, practitioner, existing):
    make_appointment(owner.organization, practitioner=practitioner, start=2, end=3)

    response = book(api, patient, practitioner, 1.5, 2.5)

    assert assert_error(response, 409, "APPOINTMENT_CONFLICT")["details"] == {
        "conflictingAppointmentId": str(existing.id)
    }


def test_another_practitioner_at_the_same_time_is_fine(api, owner, patient, existing):
    colleague = PractitionerFactory(organization=owner.organization)

    assert book(api, patient, colleague, 1, 2).status_code == 201


@pytest.mark.parametrize("status", ["booked", "confirmed", "arrived", "completed"])
def test_appointments_holding_time_block(api, owner, patient, practitioner, status):
    holding = make_appointment(owner.organization, practitioner=practitioner, start=1, end=2, status=status)

    response = book(api, patient, practitioner, 1, 2)

    assert assert_error(response, 409, "APPOINTMENT_CONFLICT")["details"] == {
        "conflictingAppointmentId": str(holding.id)
    }


@pytest.mark.parametrize("status", ["cancelled", "no_show"])
def test_cancelled_and_no_show_appointments_free_the_slot(api, owner, patient, practitioner, status):
    make_appointment(owner.organization, practitioner=practitioner, start=1, end=2, status=status)

    assert book(api, patient, practitioner, 1, 2).status_code == 201


@pytest.mark.parametrize(("action", "body"), [("cancel", {}), ("status", {"status": "no_show"})])
def test_cancelling_or_marking_a_no_show_through_the_api_frees_the_slot(
    api, patient, practitioner, existing, action, body
):
    assert book(api, patient, practitioner, 1, 2).status_code == 409

    assert post_json(api, url(existing, action), body).status_code == 200

    assert book(api, patient, practitioner, 1, 2).status_code == 201


# --- two bookings racing for one slot ---------------------------------------------------------------------------------
# Concurrent inserts of overlapping rows can each wait for the other's uncommitted row; PostgreSQL then aborts one
# with "deadlock detected" (SQLSTATE 40P01). test_booking.py races real threads; here the abort is injected so each
# outcome is certain.


def _failing_save(monkeypatch, error_class, failures: int) -> list:
    """Appointment.save raises `error_class` (as Django wraps it) `failures` times, then saves for real."""
    original = Appointment.save
    calls = []

    def save(self, *args, **kwargs):
        calls.append(self.id)
        if len(calls) <= failures:
            error = OperationalError(str(error_class.__name__))
            error.__cause__ = error_class("injected")
            raise error
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Appointment, "save", save)
    return calls


def test_a_booking_aborted_by_a_deadlock_saves_again(api, owner, patient, practitioner, monkeypatch):
    calls = _failing_save(monkeypatch, psycopg.errors.DeadlockDetected, failures=1)

    response = book(api, patient, practitioner, 0, 1)

    assert response.status_code == 201, response.content
    assert len(calls) == 2
    assert Appointment.objects.for_org(owner.organization).count() == 1
    assert len(appointment_events(owner.organization, type="appointment.created")) == 1


def test_the_loser_of_a_deadlock_meets_the_winner_as_a_409(api, owner, patient, practitioner, existing, monkeypatch):
    _failing_save(monkeypatch, psycopg.errors.DeadlockDetected, failures=1)
    before = snapshot(owner.organization)

    response = book(api, patient, practitioner, 1, 2)

    assert assert_error(response, 409, "APPOINTMENT_CONFLICT")["details"] == {
        "conflictingAppointmentId": str(existing.id)
    }
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize(
    ("error_class", "attempts"),
    [(psycopg.errors.DeadlockDetected, 3), (psycopg.errors.QueryCanceled, 1)],
    ids=["deadlocks-every-time", "another-database-error"],
)
def test_other_or_endless_database_failures_are_503_and_change_nothing(
    api, owner, patient, practitioner, existing, monkeypatch, error_class, attempts
):
    calls = _failing_save(monkeypatch, error_class, failures=10)

    assert_refused(
        owner.organization,
        lambda: post_json(
            api, url(existing, "reschedule"), {"startsAt": "2031-03-04T15:00:00Z", "endsAt": "2031-03-04T16:00:00Z"}
        ),
        503,
        "SERVICE_UNAVAILABLE",
    )
    assert len(calls) == attempts
