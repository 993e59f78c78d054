"""A patient fills the medical history form in headless Chromium through the public page (/patient-form/{token})
against the real server: the page shows the practice's name, the patient answers and sends, and the thank-you page
follows; the answers are a medical history version from the patient and the filled form a stored PDF."""

import pytest

from apps.clinical.public import ClinicalDocument
from apps.records.models import MedicalHistory
from tests.browser.conftest import browser, page, screenshot  # noqa: F401  (fixtures)
from tests.e2e.conftest import start_worker, worker_env  # noqa: F401  (fixtures)
from tests.factories import PatientFactory
from tests.live import start_server, web_server  # noqa: F401  (fixtures)
from tests.records.conftest import post

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_patient_fills_the_form(member_factory, start_server, page):  # noqa: F811
    address = start_server()
    desk = member_factory(role="front_desk", clinical_workspace_available=True)
    organization = desk.organization
    patient = PatientFactory(organization=organization, status="patient")
    sent = post(
        desk.session_client(), f"/clinical/patients/{patient.id}/forms", {"kind": "medical_history", "delivery": "link"}
    )
    assert sent.status_code == 201, sent.content
    path = "/patient-form/" + sent.json()["url"].rsplit("/patient-form/", 1)[1]

    page.goto(f"http://{address}{path}")
    assert organization.name in page.inner_text("body")
    for key in (
        "medications",
        "anticoagulants",
        "bisphosphonates",
        "heartCondition",
        "endocarditisRisk",
        "highBloodPressure",
        "diabetes",
        "bleedingDisorder",
        "asthma",
        "epilepsy",
    ):
        page.check(f"input[name={key}][value='no']")
    page.check("input[name=anticoagulants][value='yes']")
    page.fill("#q-allergies", "Penicillin")
    page.check("input[name=smoking][value='never']")
    screenshot(page, "patient-form")
    page.click("button[type=submit]")
    page.wait_for_selector("text=Thank you")
    screenshot(page, "patient-form-thanks")

    entry = MedicalHistory.objects.for_org(organization).get()
    assert entry.source == "patient" and entry.patient_id == patient.id
    assert ClinicalDocument.objects.for_org(organization).filter(patient_id=patient.id, category="form").exists()
    page.goto(f"http://{address}{path}")
    assert "not valid" in page.inner_text("body")
