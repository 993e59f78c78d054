"""GET /patient-record/{id}: demographics, the clinical documents and every registered section."""

import pytest

from apps.clinical import records
from apps.clinical.public import document_store, register_record_section
from apps.patients.public import Patient
from tests.clinical.conftest import PDF
from tests.factories import PatientFactory
from tests.helpers import assert_error


@pytest.fixture
def probe_section():
    """A section registered the way the clinical apps register theirs; removed again afterwards."""
    calls = []

    def build(organization, patient_id):
        calls.append((organization.id, patient_id))
        return {"items": [{"patientId": str(patient_id)}]}

    register_record_section("probeSection", build)
    yield calls
    records._SECTIONS.pop("probeSection", None)


def test_the_record(dentist, org, patient, probe_section):
    document = document_store(
        organization=org,
        patient_id=patient.id,
        user=dentist.user,
        name="consent.pdf",
        content_type="application/pdf",
        content=PDF,
        category="consent",
    )

    response = dentist.session_client().get(f"/patient-record/{patient.id}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["patient"]["id"] == str(patient.id)
    assert (body["patient"]["firstName"], body["patient"]["lastName"]) == ("Anna", "Bianchi")
    assert body["patient"]["email"] == patient.email
    assert [(d["id"], d["name"], d["category"]) for d in body["documents"]] == [
        (str(document.id), "consent.pdf", "consent")
    ]
    assert body["probeSection"] == {"items": [{"patientId": str(patient.id)}]}
    assert probe_section == [(org.id, patient.id)]
    assert set(records.record_sections()) <= set(body)


def test_a_registered_name_is_unique(probe_section):
    with pytest.raises(ValueError):
        register_record_section("probeSection", lambda organization, patient_id: None)


def test_merged_and_other_practices_patients(dentist, outsider, org, patient, probe_section):
    client = dentist.session_client()
    theirs = PatientFactory(organization=outsider.organization)
    assert_error(client.get(f"/patient-record/{theirs.id}"), 404, "NOT_FOUND")
    assert_error(client.get("/patient-record/not-a-uuid"), 400, "VALIDATION_ERROR")
    duplicate = PatientFactory(organization=org)
    Patient.objects.for_org(org).filter(id=duplicate.id).update(merged_into=patient)
    merged = assert_error(client.get(f"/patient-record/{duplicate.id}"), 409, "PATIENT_MERGED")
    assert merged["details"] == {"mergedIntoPatientId": str(patient.id)}
    assert probe_section == []


def test_roles_without_clinical_read(front_desk, member_factory, org, patient):
    assert_error(front_desk.session_client().get(f"/patient-record/{patient.id}"), 403, "PERMISSION_DENIED")
    owner_reads = member_factory(role="manager", organization=org).session_client().get(f"/patient-record/{patient.id}")
    assert owner_reads.status_code == 200
