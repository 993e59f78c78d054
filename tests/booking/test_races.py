"""Real commits from real threads: visitors racing for one slot (exactly one holds it) and a patient pressing
"complete" twice at once (one appointment, the same booking twice)."""

import threading

import pytest

from apps.appointments.models import Appointment
from apps.booking.models import BookingHold, HoldStatus
from tests.booking.helpers import complete, held, hold, slot
from tests.helpers import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_visitors_racing_for_one_slot_exactly_one_wins(page, practice, owner):
    _, practitioners, _ = practice
    practitioner_id = str(practitioners[0].id)
    statuses, lock = [], threading.Lock()
    start = threading.Barrier(8)

    def race():
        start.wait(timeout=10)
        response = hold(page["token"], practitioner_id, slot(2))
        with lock:
            statuses.append((response.status_code, response.json().get("code")))

    assert run_in_threads(race, count=8) == []
    assert sorted(statuses) == [(201, None)] + [(409, "BOOKING_SLOT_UNAVAILABLE")] * 7
    assert BookingHold.objects.for_org(owner.organization).filter(status=HoldStatus.ACTIVE).count() == 1


def test_racing_for_overlapping_slots_of_different_lengths(api, page, practice, owner):
    """A 60-minute page and a 30-minute page of one practice offer overlapping slots; one hold wins."""
    _, practitioners, _ = practice
    long_page = api.post(
        "/settings/booking-pages", {"name": "Long", "slotMinutes": 60}, content_type="application/json"
    )
    tokens = [page["token"], long_page.json()["token"]]
    statuses, lock = [], threading.Lock()
    start = threading.Barrier(2)

    def race():
        with lock:
            token = tokens.pop()
        start.wait(timeout=10)
        response = hold(token, str(practitioners[0].id), slot(2))
        with lock:
            statuses.append(response.status_code)

    assert run_in_threads(race, count=2) == []
    assert sorted(statuses) == [201, 409]


def test_completing_twice_at_once_books_once(page, practice, owner):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    answers, lock = [], threading.Lock()
    start = threading.Barrier(4)

    def press():
        start.wait(timeout=10)
        response = complete(page["token"], hold_id)
        with lock:
            answers.append((response.status_code, response.json()))

    assert run_in_threads(press, count=4) == []
    assert sorted(status for status, _ in answers) == [200, 200, 200, 201]
    assert len({body["uid"] for _, body in answers}) == 1
    assert Appointment.objects.for_org(owner.organization).count() == 1
