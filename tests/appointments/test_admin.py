"""The back office: the appointment and working-hours pages open for a superuser; status stays read-only there."""

import pytest
from django.test import Client

from apps.appointments.models import WorkingHours
from tests.appointments.helpers import make_appointment
from tests.factories import LocationFactory, UserFactory


@pytest.fixture
def staff_client(db):
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def rows(owner, outsider, practitioner):
    location = LocationFactory(organization=owner.organization)
    appointment = make_appointment(owner.organization, practitioner=practitioner, location=location, notes="Private")
    make_appointment(outsider.organization, status="cancelled")
    hours = WorkingHours.objects.create(
        organization=owner.organization, practitioner=practitioner, weekday=1, start_time="09:00", end_time="12:00"
    )
    return appointment, hours


@pytest.mark.parametrize(
    "path",
    [
        "/admin/appointments/",
        "/admin/appointments/appointment/",
        "/admin/appointments/appointment/?status__exact=cancelled",
        "/admin/appointments/appointment/?starts_at__year=2031",
        "/admin/appointments/workinghours/",
    ],
)
def test_staff_reach_the_changelists(staff_client, rows, path):
    response = staff_client.get(path)

    assert response.status_code == 200, path


def test_the_changelist_lists_every_practice(staff_client, rows):
    response = staff_client.get("/admin/appointments/appointment/")

    assert response.context["cl"].result_count == 2


def test_the_change_pages_open_and_status_is_read_only(staff_client, rows):
    appointment, hours = rows

    page = staff_client.get(f"/admin/appointments/appointment/{appointment.id}/change/")
    assert page.status_code == 200
    assert "status" not in page.context["adminform"].form.fields
    assert staff_client.get(f"/admin/appointments/workinghours/{hours.id}/change/").status_code == 200


def test_non_staff_are_sent_to_the_admin_login(owner):
    client = Client()
    client.force_login(owner.user)

    response = client.get("/admin/appointments/appointment/")

    assert response.status_code == 302 and "/admin/login/" in response["Location"]
