"""Fixtures of the journeys tests."""

import pytest

from tests.factories import PatientFactory

JSON = "application/json"


@pytest.fixture
def setup(api, owner):
    """The owner's default pipeline (stage ids by name), an Implant treatment and a patient."""
    pipeline = api.get("/pipelines").json()["items"][0]
    stages = {s["name"]: s["id"] for s in pipeline["stages"]}
    implant = api.post(
        "/treatments", {"name": "Implant", "defaultValue": "3500", "currency": "GBP"}, content_type=JSON
    ).json()
    patient = PatientFactory(organization=owner.organization)
    return {"pipeline": pipeline, "stages": stages, "implant": implant, "patient": patient}
