"""Export archives and their download links.

The zip holds one CSV per dataset (UTF-8, comma separated, a header row; cells a spreadsheet would run as formulas
prefixed with an apostrophe) and manifest.json (practice id, generation time, datasets with their row counts and
files). It is written row by row from server-side cursors into a temporary file on the worker's disk, then handed to
the media storage under transfer/<practice>/exports/<export id>.zip: memory stays flat whatever the practice's size.

Download links: /transfer/core-exports/{id}/download?token=… where the token is signed with Django's signing
framework (TimestampSigner, salted, bound to the export and its practice) and valid LINK_LIFETIME (24 hours) from
when it was issued (every read of the export issues a fresh one). The route also needs the caller's credential with
transfer:manage in the same practice: a leaked link alone opens nothing. An expired token answers 410
EXPORT_LINK_EXPIRED, a tampered one or one for another export 403 EXPORT_LINK_INVALID.
"""

import csv
import io
import json
import logging
import tempfile
import zipfile
from datetime import timedelta

from django.core import signing
from django.core.files import File
from django.db.models import F
from django.utils import timezone

from apps.appointments.public import appointments_export
from apps.conversations.public import conversations_export
from apps.core.csv_export import neutralise
from apps.journeys.public import journeys_export
from apps.patients.public import patients_export
from apps.tasks.public import tasks_export
from apps.transfer.errors import ExportLinkExpired, ExportLinkInvalid
from apps.transfer.files import media_storage
from apps.transfer.models import DataExport

logger = logging.getLogger("apps.transfer")

LINK_LIFETIME = timedelta(hours=24)
FILE_RETENTION = timedelta(days=7)
PROGRESS_EVERY = 5000
CURSOR_CHUNK = 2000
_SALT = "apps.transfer.export-link"

READERS = {
    "patients": patients_export,
    "journeys": journeys_export,
    "tasks": tasks_export,
    "appointments": appointments_export,
    "conversations": conversations_export,
}


def storage_name(export: DataExport) -> str:
    return f"transfer/{export.organization_id}/exports/{export.id}.zip"


def _progress(export_id, rows: int) -> None:
    DataExport.objects.unscoped().filter(id=export_id).update(rows_done=F("rows_done") + rows)


def write_archive(export: DataExport) -> tuple[str, int, dict]:
    """Write the export's zip to storage; answer (storage name, size, rows per dataset)."""
    organization = export.organization_id
    readers = {name: READERS[name](organization=organization) for name in export.datasets}
    total = sum(rows.count() for _, rows in readers.values())
    DataExport.objects.unscoped().filter(id=export.id).update(rows_total=total, rows_done=0)
    counts = {}
    with tempfile.TemporaryFile() as spool:
        with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, (header, rows) in readers.items():
                counts[name] = _write_csv(archive, f"{name}.csv", header, rows, export.id)
            manifest = {
                "version": 1,
                "organizationId": str(organization),
                "exportId": str(export.id),
                "generatedAt": timezone.now().isoformat().replace("+00:00", "Z"),
                "format": "CSV, UTF-8, comma separated, header row",
                "datasets": {name: {"file": f"{name}.csv", "rows": count} for name, count in counts.items()},
            }
            archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        size = spool.tell()
        spool.seek(0)
        name = media_storage().save(storage_name(export), File(spool, name=f"{export.id}.zip"))
    return name, size, counts


def _write_csv(archive: zipfile.ZipFile, member: str, header: list[str], rows, export_id) -> int:
    count, pending = 0, 0
    with archive.open(member, "w", force_zip64=True) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        writer = csv.writer(text)
        writer.writerow(header)
        for row in rows.iterator(chunk_size=CURSOR_CHUNK):
            writer.writerow([neutralise(value) for value in row])
            count += 1
            pending += 1
            if pending == PROGRESS_EVERY:
                _progress(export_id, pending)
                pending = 0
        text.flush()
        text.detach()
    if pending:
        _progress(export_id, pending)
    return count


def delete_quietly(name: str) -> bool:
    try:
        media_storage().delete(name)
        return True
    except Exception as error:
        logger.warning("transfer file %s not deleted: %s", name, type(error).__name__)
        return False


def open_file(name: str):
    return media_storage().open(name, "rb")


# --- links ---------------------------------------------------------------------------------------------------------


def link_for(export: DataExport) -> tuple[str, str]:
    """(download path with a fresh token, when the token expires as ISO 8601)."""
    token = signing.TimestampSigner(salt=_SALT).sign_object({"e": str(export.id), "o": str(export.organization_id)})
    expires = (timezone.now() + LINK_LIFETIME).isoformat().replace("+00:00", "Z")
    return f"/transfer/core-exports/{export.id}/download?token={token}", expires


def check_token(token: str | None, export: DataExport) -> None:
    if not token:
        raise ExportLinkInvalid("The download link has no token.")
    signer = signing.TimestampSigner(salt=_SALT)
    try:
        claims = signer.unsign_object(token, max_age=LINK_LIFETIME)
    except signing.SignatureExpired:
        raise ExportLinkExpired() from None
    except (signing.BadSignature, ValueError, TypeError):
        raise ExportLinkInvalid() from None
    if (
        not isinstance(claims, dict)
        or claims.get("e") != str(export.id)
        or claims.get("o") != str(export.organization_id)
    ):
        raise ExportLinkInvalid()
