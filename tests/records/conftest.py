"""Fixtures of the clinical records tests: a practice with its clinical workspace, a dentist linked to a
practitioner profile, other roles of the same practice, a patient, and JSON helpers."""

import pytest
from django.test import Client

from apps.clinical.models import PractitionerLink
from tests.conftest import Member, make_member
from tests.factories import DEFAULT_PASSWORD, PatientFactory, PractitionerFactory

REAUTHENTICATE = "/user/reauthenticate"
EVIDENCE = "HTTP_X_SERVICE_ACT_EVIDENCE"


def post(client: Client, path: str, data=None, **extra):
    return client.post(path, data if data is not None else {}, content_type="application/json", **extra)


def put(client: Client, path: str, data, **extra):
    return client.put(path, data, content_type="application/json", **extra)


def link(member: Member):
    """Link the member's account to a new practitioner profile of their practice (as POST
    /settings/practitioners/{id}/user-link does)."""
    practitioner = PractitionerFactory(organization=member.organization)
    PractitionerLink.objects.create(organization=member.organization, practitioner=practitioner, user=member.user)
    return practitioner


def evidence(client: Client) -> str:
    response = post(client, REAUTHENTICATE, {"password": DEFAULT_PASSWORD})
    assert response.status_code == 200, response.content
    return response.json()["token"]


@pytest.fixture
def dentist(db) -> Member:
    return make_member(role="dentist", clinical_workspace_available=True)


@pytest.fixture
def practitioner(dentist):
    return link(dentist)


@pytest.fixture
def same_practice(dentist):
    """make(role) → a member of the dentist's practice."""

    def make(role: str) -> Member:
        return make_member(role=role, organization=dentist.organization)

    return make


@pytest.fixture
def clinical_outsider(db) -> Member:
    """A dentist of another practice that also has the clinical workspace."""
    return make_member(role="dentist", clinical_workspace_available=True)


@pytest.fixture
def patient(dentist):
    return PatientFactory(organization=dentist.organization, status="patient")


@pytest.fixture
def session(dentist) -> Client:
    return dentist.session_client()
