"""Fixtures of the treatment plans tests: a practice with the clinical workspace, its dentist (clinical:write),
owner (pms:manage, clinical:read) and front desk (no clinical:read), a patient, and another practice."""

import pytest

from apps.events.models import Event
from tests.conftest import make_member
from tests.factories import PatientFactory, PractitionerFactory, PriceListFactory


@pytest.fixture
def dentist(db):
    return make_member(role="dentist", clinical_workspace_available=True, country="GB")


@pytest.fixture
def practice(dentist):
    return dentist.organization


@pytest.fixture
def owner(practice):
    return make_member(role="owner", organization=practice)


@pytest.fixture
def front_desk(practice):
    return make_member(role="front_desk", organization=practice)


@pytest.fixture
def other(db):
    """A dentist of another practice, with the clinical workspace."""
    return make_member(role="dentist", clinical_workspace_available=True, country="GB")


@pytest.fixture
def client(dentist):
    return dentist.session_client()


@pytest.fixture
def owner_client(owner):
    return owner.session_client()


@pytest.fixture
def patient(practice):
    return PatientFactory(organization=practice)


@pytest.fixture
def price_list(practice):
    return PriceListFactory(organization=practice)


@pytest.fixture
def practitioner(practice):
    return PractitionerFactory(organization=practice)


@pytest.fixture
def procedures(client):
    """The practice's seeded catalogue, by code (the first read seeds it)."""
    response = client.get("/clinical/procedures?limit=200")
    assert response.status_code == 200, response.content
    return {row["code"]: row for row in response.json()["items"]}


@pytest.fixture
def plan(client, patient):
    response = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans",
        {"title": "Restore lower left", "notes": "Pain on biting 36"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def plan_events(organization):
    return list(
        Event.objects.for_org(organization).filter(type="pms_treatment_plan.updated").order_by("created_at", "id")
    )


def add_item(client, plan_id, procedure_id, **fields):
    return client.post(
        f"/clinical/treatment-plans/{plan_id}/items",
        {"procedureId": procedure_id, **fields},
        content_type="application/json",
    )
