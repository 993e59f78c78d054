"""A patient's erasure removes their clinical records; a merge moves the duplicate's to the survivor, with the
medical history versions numbered again in the order they were taken."""

from apps.records.models import ClinicalNote, MedicalAlert, MedicalHistory, NoteAmendment, PatientForm
from tests.factories import PatientFactory
from tests.records.conftest import post
from tests.records.test_medical_history import ANSWERS


def fill(session, patient):
    note = post(session, f"/clinical/patients/{patient.id}/notes", {"text": "Scale and polish."}).json()
    post(session, f"/clinical/notes/{note['id']}/amendments", {"text": "And fluoride.", "reason": "Omitted"})
    assert post(session, f"/clinical/patients/{patient.id}/medical-history", {"answers": ANSWERS}).status_code == 201
    post(session, f"/clinical/patients/{patient.id}/alerts", {"text": "Nervous"})
    post(session, f"/clinical/patients/{patient.id}/forms", {"kind": "medical_history", "delivery": "link"})


def test_erasure_removes_the_patients_records(session, dentist, patient, same_practice):
    other = PatientFactory(organization=dentist.organization)
    fill(session, patient)
    fill(session, other)
    owner = same_practice("owner")

    response = owner.api_client().delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    organization = dentist.organization
    for model in (ClinicalNote, MedicalHistory, MedicalAlert, PatientForm):
        assert not model.objects.for_org(organization).filter(patient_id=patient.id).exists()
        assert model.objects.for_org(organization).filter(patient_id=other.id).exists()
    assert NoteAmendment.objects.for_org(organization).count() == 1


def test_a_merge_moves_the_records_to_the_survivor(session, dentist, patient, same_practice):
    duplicate = PatientFactory(organization=dentist.organization)
    fill(session, patient)
    fill(session, duplicate)  # taken later: becomes the survivor's version 2
    owner = same_practice("owner")

    merged = post(owner.api_client(), f"/patients/{patient.id}/merge", {"duplicatePatientId": str(duplicate.id)})

    assert merged.status_code == 200, merged.content
    organization = dentist.organization
    for model in (ClinicalNote, MedicalHistory, MedicalAlert, PatientForm):
        assert not model.objects.for_org(organization).filter(patient_id=duplicate.id).exists()
    histories = session.get(f"/clinical/patients/{patient.id}/medical-history").json()["items"]
    assert [h["version"] for h in histories] == [2, 1]
    alerts = session.get(f"/clinical/patients/{patient.id}/alerts").json()["items"]
    derived = [a for a in alerts if a["source"] == "medical_history"]
    assert {a["medicalHistoryId"] for a in derived} == {histories[0]["id"]}
    assert len([a for a in alerts if a["source"] == "manual"]) == 2
    assert len(session.get(f"/clinical/patients/{patient.id}/notes").json()["items"]) == 2
