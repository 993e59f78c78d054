"""document_store (apps.clinical.public): what other apps (patient forms) use to keep a file in the record."""

import pytest

from apps.clinical.public import ClinicalDocument, DocumentTooLarge, DocumentTypeRefused, document_store
from apps.core.errors import NotFound
from tests.clinical.conftest import PDF, PNG
from tests.factories import PatientFactory


def _store(owner, patient_id, **overrides):
    fields = {
        "organization": owner.organization,
        "patient_id": patient_id,
        "user": owner.user,
        "name": "consent form.pdf",
        "content_type": "application/pdf",
        "content": PDF,
        "category": "form",
    }
    return document_store(**{**fields, **overrides})


def test_a_form_is_stored_under_a_name_without_personal_data(owner, patient, settings):
    document = _store(owner, patient.id, name="../Anna Bianchi consent.pdf")
    assert document.category == "form"
    assert document.size == len(PDF)
    assert document.storage_name == f"clinical/{owner.organization.id}/{document.id}.pdf"
    assert "Anna" not in document.name_encrypted
    from django.core.files.storage import storages

    with storages[settings.SVC_MEDIA_STORAGE_ALIAS].open(document.storage_name, "rb") as stored:
        assert stored.read() == PDF


def test_refusals(owner, patient, outsider, settings):
    with pytest.raises(DocumentTypeRefused):
        _store(owner, patient.id, category="invoice")
    with pytest.raises(DocumentTypeRefused):
        _store(owner, patient.id, content_type="text/plain", content=b"hello")
    with pytest.raises(DocumentTypeRefused):
        _store(owner, patient.id, content_type="image/png", content=PDF)  # a renamed file
    settings.SVC_CLINICAL_DOCUMENT_MAX_BYTES = len(PNG) - 1
    with pytest.raises(DocumentTooLarge):
        _store(owner, patient.id, content_type="image/png", content=PNG)
    settings.SVC_CLINICAL_DOCUMENT_MAX_BYTES = 20 * 1024 * 1024
    other = PatientFactory(organization=outsider.organization)
    with pytest.raises(NotFound):
        _store(owner, other.id)
    assert not ClinicalDocument.objects.for_org(owner.organization).exists()
