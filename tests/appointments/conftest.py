import pytest

from tests.factories import LocationFactory, PatientFactory, PractitionerFactory


@pytest.fixture
def patient(owner):
    return PatientFactory(organization=owner.organization)


@pytest.fixture
def practitioner(owner):
    return PractitionerFactory(organization=owner.organization)


@pytest.fixture
def location(owner):
    return LocationFactory(organization=owner.organization)


@pytest.fixture
def clock(time_machine):
    """Time stands still (tick=False) until a test moves it; each test chooses its 'now' with move_to."""
    return time_machine
