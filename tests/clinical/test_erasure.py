"""A patient's erasure deletes their clinical documents (the files after the commit) and the visits of their
appointments; a merge moves the duplicate's documents to the survivor."""

import json
from datetime import UTC, datetime

from django.core.files.storage import storages

from apps.clinical.models import AppointmentVisit, Chair, ClinicalDocument
from apps.clinical.public import document_store
from tests.clinical.conftest import PDF, make_appointment
from tests.factories import PatientFactory


def _document(member, patient):
    return document_store(
        organization=member.organization,
        patient_id=patient.id,
        user=member.user,
        name="scan.pdf",
        content_type="application/pdf",
        content=PDF,
        category="scan",
    )


def test_erasure_deletes_documents_files_and_visits(
    owner, dentist, org, location, practitioner, patient, settings, django_capture_on_commit_callbacks
):
    kept_patient = PatientFactory(organization=org)
    erased_doc, kept_doc = _document(dentist, patient), _document(dentist, kept_patient)
    chair = Chair.objects.create(organization=org, location=location, name="S1")
    appointment = make_appointment(org, practitioner, patient, datetime(2026, 3, 1, 9, tzinfo=UTC))
    AppointmentVisit.objects.create(organization=org, appointment=appointment, chair=chair)
    storage = storages[settings.SVC_MEDIA_STORAGE_ALIAS]

    with django_capture_on_commit_callbacks(execute=True):
        response = owner.api_client().delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    assert list(ClinicalDocument.objects.for_org(org).values_list("id", flat=True)) == [kept_doc.id]
    assert not storage.exists(erased_doc.storage_name)
    assert storage.exists(kept_doc.storage_name)
    assert not AppointmentVisit.objects.for_org(org).exists()
    assert Chair.objects.for_org(org).filter(id=chair.id).exists()


def test_a_merge_moves_the_documents_to_the_survivor(owner, dentist, org, patient):
    duplicate = PatientFactory(organization=org)
    moved = _document(dentist, duplicate)

    response = owner.api_client().post(
        f"/patients/{patient.id}/merge",
        json.dumps({"duplicatePatientId": str(duplicate.id)}),
        content_type="application/json",
    )

    assert response.status_code == 200, response.content
    moved.refresh_from_db()
    assert moved.patient_id == patient.id
    record = dentist.session_client().get(f"/patient-record/{patient.id}").json()
    assert [d["id"] for d in record["documents"]] == [str(moved.id)]
