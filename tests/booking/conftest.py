import pytest

from apps.appointments.models import WorkingHours
from apps.journeys.models import Treatment
from tests.booking.helpers import NOW, create_page
from tests.factories import LocationFactory, PractitionerFactory


@pytest.fixture
def clock(time_machine):
    """Time stands still at NOW (Monday 2031-03-03 09:00 in Rome) until a test moves it."""
    time_machine.move_to(NOW, tick=False)
    return time_machine


def _practice(organization):
    """Rome time; two practitioners working Tuesday 09:00-12:00 local at one location; one treatment."""
    organization.timezone = "Europe/Rome"
    organization.save(update_fields=["timezone"])
    location = LocationFactory(organization=organization)
    practitioners = [PractitionerFactory(organization=organization) for _ in range(2)]
    for practitioner in practitioners:
        WorkingHours.objects.create(
            organization=organization,
            practitioner=practitioner,
            weekday=1,
            start_time="09:00",
            end_time="12:00",
            location=location,
        )
    treatment = Treatment.objects.create(organization=organization, name="Implant consultation")
    return location, practitioners, treatment


@pytest.fixture
def practice(owner, clock):
    return _practice(owner.organization)


@pytest.fixture
def page(api, practice):
    """A booking page offering everything, with the default rules."""
    return create_page(api, {"name": "Book online"})


@pytest.fixture
def other_page(outsider, clock):
    _practice(outsider.organization)
    return create_page(outsider.api_client(), {"name": "Theirs"})
