"""Fixtures of the campaigns tests: channel connections made through the settings route, patients with consent, and
helpers for the templates and campaigns routes."""

import json

import pytest
from django.utils import timezone

from apps.patients.models import MarketingConsent
from tests.factories import PatientFactory

SMS_NUMBER = "+390212345678"
SMS_AUTH_TOKEN = "campaigns-sms-auth-token"
PHONE_NUMBER_ID = "106540352242922"


def post(client, path: str, data=None):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json")


def patch(client, path: str, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


def connect(api, kind: str, address: str, credentials: dict) -> dict:
    response = post(
        api,
        "/settings/channel-connections",
        {"kind": kind, "name": f"Campaigns {kind}", "address": address, "credentials": credentials},
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture(autouse=True)
def no_quiet_hours(api):
    """Marketing messages wait out the practice's quiet hours (21:00 to 08:00 by default): off, so what a test sends
    does not depend on the time of day it runs at."""
    response = api.put("/settings/messaging", json.dumps({"quietHoursEnabled": False}), content_type="application/json")
    assert response.status_code == 200, response.content


@pytest.fixture
def sms(api) -> dict:
    return connect(api, "sms", SMS_NUMBER, {"accountSid": "AC" + "0" * 32, "authToken": SMS_AUTH_TOKEN})


@pytest.fixture
def email(api) -> dict:
    return connect(api, "email", "reception", {})


@pytest.fixture
def messaging(api) -> dict:
    return connect(api, "messaging_app", PHONE_NUMBER_ID, {"accessToken": "EAAG-campaigns"})


def grant(patient, channel: str, status: str = "granted", **fields) -> MarketingConsent:
    """A consent record as the consent route stores one (test setup)."""
    return MarketingConsent.objects.create(
        organization_id=patient.organization_id,
        patient=patient,
        channel=channel,
        status=status,
        source=fields.pop("source", "form"),
        evidence=fields.pop("evidence", "signed form"),
        recorded_at=fields.pop("recorded_at", timezone.now()),
    )


def consenting_patient(organization, channel: str = "sms", **fields):
    patient = PatientFactory(organization=organization, **fields)
    grant(patient, channel)
    return patient


def make_template(api, **fields) -> dict:
    data = {"channel": "sms", "name": "Spring check-up", "body": "Hi {{patient.first_name}}, book your check-up."}
    data.update(fields)
    response = post(api, "/templates", data)
    assert response.status_code == 201, response.content
    return response.json()


def make_campaign(api, connection: dict, template: dict, audience: dict | None = None, **fields) -> dict:
    data = {
        "name": "Spring campaign",
        "connectionId": connection["id"],
        "templateId": template["id"],
        "audience": audience if audience is not None else {"filters": {}},
    }
    data.update(fields)
    response = post(api, "/campaigns", data)
    assert response.status_code == 201, response.content
    return response.json()
