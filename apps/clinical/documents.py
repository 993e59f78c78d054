"""Clinical storage: the files of a patient's clinical record in the media storage (Django's storage API,
`storages[SVC_MEDIA_STORAGE_ALIAS]`: the filesystem, or an S3-compatible bucket).

A file is checked before anything is written: at most MAX_DOCUMENT_BYTES (SVC_CLINICAL_DOCUMENT_MAX_BYTES,
20 MiB by default; over it 413 CLINICAL_DOCUMENT_TOO_LARGE), one of the accepted types (JPEG, PNG, WebP, TIFF,
PDF, DICOM) and its bytes really of that type (the leading signature is checked, so a renamed file is refused).
It is written under clinical/<practice>/<document id><extension>: no name, date of birth or patient id in it.

Erasing: the erasure hook deletes the rows in the erasure's transaction and the files after it commits (a file
whose deletion fails is logged by its storage name only and left; nothing links to it any more)."""

import hashlib
import logging
import unicodedata

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import transaction

from apps.clinical.errors import DocumentStorageUnavailable, DocumentTooLarge, DocumentTypeRefused

logger = logging.getLogger("apps.clinical")

MIB = 1024 * 1024
NAME_MAX = 200

# Accepted types: their extension in storage and a check of their leading bytes.
EXTENSIONS = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/webp": ".webp",
    "image/tiff": ".tiff",
    "application/pdf": ".pdf",
    "application/dicom": ".dcm",
}
ACCEPTED_TYPES = tuple(EXTENSIONS)


def _signature_matches(content_type: str, content: bytes) -> bool:
    if content_type == "image/jpeg":
        return content.startswith(b"\xff\xd8\xff")
    if content_type == "image/png":
        return content.startswith(b"\x89PNG\r\n\x1a\n")
    if content_type == "image/webp":
        return content[:4] == b"RIFF" and content[8:12] == b"WEBP"
    if content_type == "image/tiff":
        return content[:4] in (b"II*\x00", b"MM\x00*")
    if content_type == "application/pdf":
        return content.startswith(b"%PDF-")
    if content_type == "application/dicom":
        # DICOM Part 10: a 128-byte preamble, then "DICM".
        return content[128:132] == b"DICM"
    return False


def max_document_bytes() -> int:
    return int(getattr(settings, "SVC_CLINICAL_DOCUMENT_MAX_BYTES", 20 * MIB))


def media_storage():
    return storages[settings.SVC_MEDIA_STORAGE_ALIAS]


def normalise_content_type(content_type: str) -> str:
    value = (content_type or "").split(";", 1)[0].strip().lower()
    return {"image/jpg": "image/jpeg", "application/x-pdf": "application/pdf", "image/dicom": "application/dicom"}.get(
        value, value
    )


def check_document(*, content_type: str, content: bytes, field: str = "file") -> str:
    """The normalised content type of an acceptable file; DocumentTooLarge or DocumentTypeRefused otherwise."""
    limit = max_document_bytes()
    if len(content) > limit:
        raise DocumentTooLarge(details={"maxBytes": limit, "field": field})
    if not content:
        raise DocumentTypeRefused(field, "the file is empty")
    normalised = normalise_content_type(content_type)
    if normalised not in EXTENSIONS:
        raise DocumentTypeRefused(field, f"the type must be one of {', '.join(ACCEPTED_TYPES)}")
    if not _signature_matches(normalised, content):
        raise DocumentTypeRefused(field, f"the file's content is not {normalised}")
    return normalised


def clean_name(name: str) -> str:
    """The display name kept for a file: its last path segment, control characters dropped, at most 200
    characters; 'document' when nothing is left."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C").strip()
    return base[:NAME_MAX] or "document"


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def storage_name(*, organization_id, document_id, content_type: str) -> str:
    return f"clinical/{organization_id}/{document_id}{EXTENSIONS.get(content_type, '')}"


def write(name: str, content: bytes) -> None:
    try:
        saved = media_storage().save(name, ContentFile(content))
    except Exception as exc:
        logger.warning("clinical document %s not written (%s)", name, type(exc).__name__)
        raise DocumentStorageUnavailable() from exc
    if saved != name:  # a storage that renamed it: the row would point at nothing
        delete_quietly(saved)
        raise DocumentStorageUnavailable()


def open_file(name: str):
    try:
        return media_storage().open(name, "rb")
    except Exception as exc:
        logger.warning("clinical document %s not readable (%s)", name, type(exc).__name__)
        raise DocumentStorageUnavailable() from exc


def delete_quietly(name: str) -> bool:
    try:
        media_storage().delete(name)
        return True
    except Exception as exc:
        logger.warning("clinical document %s not deleted (%s)", name, type(exc).__name__)
        return False


def delete_after_commit(names: list[str]) -> None:
    """Delete these files once the current transaction commits (nothing is deleted if it rolls back)."""
    if names:
        transaction.on_commit(lambda: [delete_quietly(name) for name in names])
