"""Fixtures of the recalls and waitlist tests: a practice with the clinical workspace, its front desk signed in (the
role that runs recalls and the waitlist), a telesales member (no pms:diary), an outsider practice, an SMS connection
made through the settings route, patients and practitioners, appointments booked through the CRM route, and a clock
(time stands still at a fixed weekday morning, UTC)."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.campaigns.conftest import connect
from tests.conftest import make_member
from tests.factories import PatientFactory, PractitionerFactory

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)  # a Tuesday, 10:00 UTC (the practices' timezone is UTC)
SMS_NUMBER = "+390212345678"


def post(client, path: str, data=None):
    body = b"" if data is None else json.dumps(data)
    return client.post(path, body, content_type="application/json")


def patch(client, path: str, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(NOW, tick=False)
    return time_machine


@pytest.fixture
def owner(db):
    return make_member(role="owner", clinical_workspace_available=True)


@pytest.fixture
def desk(owner):
    return make_member(role="front_desk", organization=owner.organization)


@pytest.fixture
def client(desk):
    return desk.session_client()


@pytest.fixture
def telesales(owner):
    return make_member(role="telesales", organization=owner.organization)


@pytest.fixture
def outsider(db):
    return make_member(role="owner", clinical_workspace_available=True)


@pytest.fixture
def api(owner):
    """The owner's API key: CRM routes (appointments, channel connections) for the tests' setup."""
    return owner.api_client()


@pytest.fixture
def sms(api) -> dict:
    return connect(api, "sms", SMS_NUMBER, {"accountSid": "AC" + "0" * 32, "authToken": "recalls-sms-auth-token"})


@pytest.fixture
def patient(owner):
    return PatientFactory(organization=owner.organization)


@pytest.fixture
def practitioner(owner):
    return PractitionerFactory(organization=owner.organization)


def book(api, patient, practitioner, starts_at: datetime, *, minutes: int = 30, kind: str = "hygiene") -> dict:
    response = post(
        api,
        "/appointments",
        {
            "patientId": str(patient.id),
            "practitionerId": str(practitioner.id),
            "startsAt": starts_at.isoformat(),
            "endsAt": (starts_at + timedelta(minutes=minutes)).isoformat(),
            "appointmentType": kind,
        },
    )
    assert response.status_code == 201, response.content
    return response.json()


def recall_types(client) -> dict:
    """name → id of the practice's recall types (the first read seeds Exam and Hygiene)."""
    response = client.get("/clinical/recall-types")
    assert response.status_code == 200, response.content
    return {item["name"]: item["id"] for item in response.json()["items"]}


def set_recall(client, patient, type_id: str, due: str, **extra) -> dict:
    response = post(
        client, f"/clinical/patients/{patient.id}/recalls", {"recallTypeId": type_id, "dueDate": due, **extra}
    )
    assert response.status_code in (200, 201), response.content
    return response.json()
