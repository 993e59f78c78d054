"""The back office: the booking-page and hold pages open for a superuser; tokens, keys and hold state are read-only."""

import pytest
from django.test import Client

from apps.booking.models import BookingHold, BookingPage
from tests.booking.helpers import booked, slot
from tests.factories import UserFactory


@pytest.fixture
def staff_client(db, clock):
    """Signed in at the frozen time the booking rows are written at (a session from before would have expired)."""
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def rows(page, practice):
    _, practitioners, _ = practice
    booked(page["token"], str(practitioners[0].id), slot(0))
    return BookingPage.objects.unscoped().get(id=page["id"]), BookingHold.objects.unscoped().get()


@pytest.mark.parametrize(
    "path", ["/admin/booking/", "/admin/booking/bookingpage/", "/admin/booking/bookinghold/?status__exact=completed"]
)
def test_staff_reach_the_changelists(staff_client, rows, path):
    assert staff_client.get(path).status_code == 200


def test_the_change_pages_open_with_tokens_read_only(staff_client, rows):
    page, hold = rows
    page_form = staff_client.get(f"/admin/booking/bookingpage/{page.id}/change/")
    hold_form = staff_client.get(f"/admin/booking/bookinghold/{hold.id}/change/")
    assert page_form.status_code == 200 and hold_form.status_code == 200
    assert 'name="token"' not in page_form.content.decode()
    assert 'name="uid"' not in hold_form.content.decode() and 'name="key"' not in hold_form.content.decode()
