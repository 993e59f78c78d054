"""The clinical workspace's interface to other apps: import from here, never from its other modules or its api/.

- `register_record_section(name, build)`: a clinical app adds its part of GET /patient-record/{id} (call it in
  AppConfig.ready(); `build(organization, patient_id)` returns JSON-ready data).
- `practitioner_of_user(organization, user)`: the practitioner profile a member account is linked to
  (POST /settings/practitioners/{id}/user-link), or None: who the clinician is for notes and prescriptions.
- `document_store(*, organization, patient_id, user, name, content_type, content, category) -> ClinicalDocument`:
  store one file in the patient's clinical record (clinical storage; filled patient forms use it with category
  "form"). `category` is one of `DOCUMENT_CATEGORIES` (xray, photo, scan, letter, form, consent, other);
  `content_type` one of `DOCUMENT_TYPES` (image/jpeg, image/png, image/webp, image/tiff, application/pdf,
  application/dicom) and the bytes must really be of that type; at most `max_document_bytes()` bytes (20 MiB by
  default). Raises NotFound when the patient is not of this practice, 413 CLINICAL_DOCUMENT_TOO_LARGE
  (`DocumentTooLarge`), 400 VALIDATION_ERROR naming `file` or `category` (`DocumentTypeRefused`), 503
  CLINICAL_STORAGE_UNAVAILABLE when the media storage cannot be written. The file is written before the row; call
  it inside your own transaction if you like (a rollback of yours leaves only an unreferenced file, named by a
  random id). The document then appears in GET /patient-record/{id} and under /clinical/patients/{id}/documents.
- `ClinicalDocument`: the stored document's model (id, patient_id, category, content_type, size, created_at).
"""

from apps.clinical.documents import ACCEPTED_TYPES as DOCUMENT_TYPES
from apps.clinical.documents import max_document_bytes
from apps.clinical.errors import DocumentStorageUnavailable, DocumentTooLarge, DocumentTypeRefused
from apps.clinical.models import ClinicalDocument, DocumentCategory
from apps.clinical.records import RecordSectionBuilder, record_sections, register_record_section
from apps.clinical.selectors import practitioner_of_user
from apps.clinical.services import document_store

DOCUMENT_CATEGORIES = tuple(DocumentCategory.values)

__all__ = [
    "DOCUMENT_CATEGORIES",
    "DOCUMENT_TYPES",
    "ClinicalDocument",
    "DocumentStorageUnavailable",
    "DocumentTooLarge",
    "DocumentTypeRefused",
    "RecordSectionBuilder",
    "document_store",
    "max_document_bytes",
    "practitioner_of_user",
    "record_sections",
    "register_record_section",
]
