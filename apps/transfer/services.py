"""Writes of data transfer: patient imports (upload, mapping and validation report, dry run, the chunked background
run with its checkpoint), exports of the practice's data (a zip built in the background, a signed expiring link,
audit entries) and the practice archive (a full export, the closing after the grace period).

Imports create no event, timeline entry or automation per row (emission rule 1, as the PMS's historical import):
patients are written through apps.patients' set-based upsert, one statement per chunk of CHUNK_ROWS rows, each chunk
in its own transaction with the checkpoint (rows_done) saved in it. A run that stops (a lost worker, the time budget,
an error) resumes from the last committed chunk; a second runner finds the checkpoint moved and stops.
"""

import logging
import time
from datetime import timedelta
from itertools import islice

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Invitation, Membership
from apps.audit.public import record as audit_record
from apps.oauth.public import connections_disconnect_practice
from apps.patients.public import clean_import_row, import_patients, patients_erase_batch
from apps.transfer import exports, files
from apps.transfer.errors import ArchiveInProgress, ArchiveNotScheduled, ImportStateConflict
from apps.transfer.models import (
    DATASETS,
    ArchiveStatus,
    DataExport,
    ExportPurpose,
    ExportStatus,
    ImportProblem,
    ImportStatus,
    PatientImport,
    PracticeArchive,
)
from apps.webhooks.public import endpoints_archive_practice

logger = logging.getLogger("apps.transfer")

CHUNK_ROWS = 1000
PROBLEM_BATCH = 1000
STALE_SECONDS = 120  # a running import without a committed chunk for this long is resumed by the sweep
RUN_BUDGET_SECONDS = 180  # one task runs this long at most, then queues the rest (under the Celery time limit)
GRACE_PERIOD = timedelta(days=30)
ERASE_BATCH = 500


def _audit(*, action: str, organization_id, user_id=None, subject_type: str, subject_id, source: str = "api"):
    audit_record(
        source=source,
        action=action,
        organization_id=organization_id,
        user_id=user_id,
        subject_type=subject_type,
        subject_id=str(subject_id),
    )


# --- imports: upload and mapping ----------------------------------------------------------------------------------


def import_upload(*, organization, user, upload, file_format: str, source: str | None) -> tuple[PatientImport, dict]:
    """Check and store an uploaded file; answer the import and what the check found (columns, preview)."""
    found = files.inspect(upload, file_format)
    run = PatientImport(
        organization=organization,
        created_by=user,
        format=file_format,
        source=source or file_format,
        file_name=(upload.name or "import.csv")[:200],
        size_bytes=upload.size,
        delimiter=found["delimiter"],
        columns=found["columns"],
        mapping=files.suggest_mapping(found["columns"], file_format),
        rows_total=found["rows"],
    )
    run.storage_name = files.storage_name(organization_id=organization.pk, import_id=run.id)
    upload.seek(0)
    saved = files.media_storage().save(run.storage_name, upload)
    if saved != run.storage_name:  # a storage that renamed it: keep the name it chose
        run.storage_name = saved
    try:
        run.save(force_insert=True)
    except Exception:
        files.media_storage().delete(run.storage_name)
        raise
    return run, found


def _require(run: PatientImport, *allowed: str, action: str) -> None:
    if run.status not in allowed:
        raise ImportStateConflict(run.status, f"A {run.status} import cannot be {action}.")


def _cells(columns: list[str], mapping: dict[str, str], cells: list[str]) -> dict[str, str]:
    index = {column: position for position, column in enumerate(columns)}
    return {field: cells[index[column]] if index[column] < len(cells) else "" for field, column in mapping.items()}


def _problems_of_rows(run: PatientImport, rows) -> tuple[list[ImportProblem], int, int]:
    """Check every data row with the mapping: (problems, valid rows, invalid rows). Repeated external ids are
    problems of the later rows."""
    problems, valid, invalid = [], 0, 0
    seen: dict[str, int] = {}
    width = len(run.columns)
    for number, cells in rows:
        found = []
        if len(cells) != width:
            found.append(("", "", f"has {len(cells)} cells; the header has {width}"))
        values, row_problems = clean_import_row(_cells(run.columns, run.mapping, cells))
        for field, problem in row_problems:
            found.append((run.mapping.get(field, field), field, problem))
        external_id = values.get("externalId")
        if external_id:
            if external_id in seen:
                found.append((run.mapping["externalId"], "externalId", f"repeats the id of row {seen[external_id]}"))
            else:
                seen[external_id] = number
        if found:
            invalid += 1
            problems.extend(
                ImportProblem(
                    organization_id=run.organization_id,
                    patient_import=run,
                    row=number,
                    column=column[:200],
                    field=field,
                    problem=problem[:200],
                )
                for column, field, problem in found
            )
        else:
            valid += 1
    return problems, valid, invalid


def import_map(*, organization, run: PatientImport, mapping: dict[str, str], source: str | None) -> PatientImport:
    """Set the mapping and check every row with it: the validation report replaces any earlier one."""
    with transaction.atomic():
        run = PatientImport.objects.for_org(organization).select_for_update().get(id=run.id)
        _require(run, ImportStatus.UPLOADED, ImportStatus.VALIDATED, action="mapped again")
        run.mapping = mapping
        if source:
            run.source = source
        problems, run.rows_valid, run.rows_invalid = _problems_of_rows(
            run, files.data_rows(run.storage_name, run.delimiter)
        )
        ImportProblem.objects.for_org(organization).filter(patient_import=run).delete()
        ImportProblem.objects.bulk_create(problems, batch_size=PROBLEM_BATCH)
        run.problems_total = len(problems)
        run.status = ImportStatus.VALIDATED
        run.save()
    return run


def _invalid_rows(run: PatientImport) -> set[int]:
    return set(
        ImportProblem.objects.for_org(run.organization_id)
        .filter(patient_import=run)
        .values_list("row", flat=True)
        .distinct()
    )


def _chunks(run: PatientImport, *, start: int = 0):
    """(rows in the chunk, clean valid rows, invalid rows) for each chunk of CHUNK_ROWS data rows from `start`."""
    invalid = _invalid_rows(run)
    rows = islice(files.data_rows(run.storage_name, run.delimiter), start, None)
    while True:
        chunk = list(islice(rows, CHUNK_ROWS))
        if not chunk:
            return
        clean, failed = [], 0
        for number, cells in chunk:
            if number in invalid:
                failed += 1
                continue
            values, problems = clean_import_row(_cells(run.columns, run.mapping, cells))
            if problems:
                failed += 1
            else:
                clean.append(values)
        yield len(chunk), clean, failed


def import_dry_run(*, organization, run: PatientImport) -> dict:
    """What a start would do now — created, updated, skipped (unchanged, merged or archived), failed (invalid
    rows) — writing nothing."""
    _require(run, ImportStatus.VALIDATED, action="dry-run (map it first)")
    totals = {"created": 0, "updated": 0, "skipped": 0, "failed": 0}
    for _, clean, failed in _chunks(run):
        outcome = import_patients(
            organization=organization, source=run.source, fields=list(run.mapping), rows=clean, dry_run=True
        )
        totals["created"] += outcome.created
        totals["updated"] += outcome.updated
        totals["skipped"] += outcome.unchanged
        totals["failed"] += failed
    return totals


def _queue_run(run_id) -> None:
    from apps.transfer.tasks import run_import

    transaction.on_commit(lambda: run_import.delay(str(run_id)))


@transaction.atomic
def import_start(*, organization, user, run: PatientImport) -> PatientImport:
    run = PatientImport.objects.for_org(organization).select_for_update().get(id=run.id)
    _require(run, ImportStatus.VALIDATED, action="started (map it first; a started import is resumed)")
    now = timezone.now()
    run.status, run.started_at, run.heartbeat_at = ImportStatus.RUNNING, now, now
    run.rows_done = run.created = run.updated = run.skipped = run.failed = 0
    run.save()
    _audit(
        action="import.started",
        organization_id=organization.pk,
        user_id=getattr(user, "pk", None),
        subject_type="patient_import",
        subject_id=run.id,
    )
    _queue_run(run.id)
    return run


@transaction.atomic
def import_resume(*, organization, run: PatientImport) -> PatientImport:
    """A failed import, or a running one without progress for STALE_SECONDS, continues from its checkpoint."""
    run = PatientImport.objects.for_org(organization).select_for_update().get(id=run.id)
    stalled = run.status == ImportStatus.RUNNING and (
        run.heartbeat_at is None or run.heartbeat_at < timezone.now() - timedelta(seconds=STALE_SECONDS)
    )
    if run.status != ImportStatus.FAILED and not stalled:
        raise ImportStateConflict(run.status, "Only a failed or stalled import can be resumed.")
    run.status, run.error_code, run.heartbeat_at = ImportStatus.RUNNING, "", timezone.now()
    run.save()
    _queue_run(run.id)
    return run


# --- imports: the run ---------------------------------------------------------------------------------------------


def run_import(import_id, *, max_chunks: int | None = None, budget_seconds: float = RUN_BUDGET_SECONDS) -> str | None:
    """Run (or resume) an import from its checkpoint. Returns its status afterwards; "continued" when the time
    budget ran out and the rest was queued; None when another runner moved it on (or it is not running)."""
    run = PatientImport.objects.unscoped().filter(id=import_id).first()
    if run is None or run.status != ImportStatus.RUNNING:
        return None
    started, done, chunks = time.monotonic(), run.rows_done, 0
    try:
        for size, clean, failed in _chunks(run, start=run.rows_done):
            if max_chunks is not None and chunks >= max_chunks:
                return ImportStatus.RUNNING
            if time.monotonic() - started > budget_seconds:
                from apps.transfer.tasks import run_import as task

                task.delay(str(run.id))
                return "continued"
            if not _apply_chunk(run, done, size, clean, failed):
                return None
            done += size
            chunks += 1
    except Exception as error:
        logger.warning("import %s stopped: %s", run.id, type(error).__name__)
        _stop(run, ImportStatus.FAILED, error_code="unexpected_error")
        return ImportStatus.FAILED
    _stop(run, ImportStatus.COMPLETED)
    return ImportStatus.COMPLETED


def _apply_chunk(run: PatientImport, done: int, size: int, clean: list[dict], failed: int) -> bool:
    with transaction.atomic():
        locked = (
            PatientImport.objects.for_org(run.organization_id)
            .select_for_update()
            .filter(id=run.id, status=ImportStatus.RUNNING, rows_done=done)
            .first()
        )
        if locked is None:
            return False
        outcome = import_patients(
            organization=run.organization_id, source=run.source, fields=list(run.mapping), rows=clean
        )
        PatientImport.objects.for_org(run.organization_id).filter(id=run.id).update(
            rows_done=done + size,
            created=locked.created + outcome.created,
            updated=locked.updated + outcome.updated,
            skipped=locked.skipped + outcome.unchanged,
            failed=locked.failed + failed,
            heartbeat_at=timezone.now(),
            updated_at=timezone.now(),
        )
    return True


def _stop(run: PatientImport, status: str, *, error_code: str = "") -> None:
    with transaction.atomic():
        stopped = (
            PatientImport.objects.for_org(run.organization_id)
            .filter(id=run.id, status=ImportStatus.RUNNING)
            .update(status=status, error_code=error_code, finished_at=timezone.now(), updated_at=timezone.now())
        )
        if stopped and status == ImportStatus.COMPLETED:
            _audit(
                action="import.completed",
                organization_id=run.organization_id,
                subject_type="patient_import",
                subject_id=run.id,
                source="system",
            )


def sweep_stalled_imports() -> int:
    """Running imports without a committed chunk for STALE_SECONDS (a worker that died): queued again."""
    from apps.transfer.tasks import run_import as task

    cutoff = timezone.now() - timedelta(seconds=STALE_SECONDS)
    stalled = list(
        PatientImport.objects.unscoped()
        .filter(status=ImportStatus.RUNNING, heartbeat_at__lt=cutoff)
        .values_list("id", flat=True)
    )
    for import_id in stalled:
        PatientImport.objects.unscoped().filter(id=import_id).update(heartbeat_at=timezone.now())
        task.delay(str(import_id))
    return len(stalled)


# --- exports --------------------------------------------------------------------------------------------------------


def _queue_export(export_id) -> None:
    from apps.transfer.tasks import build_export

    transaction.on_commit(lambda: build_export.delay(str(export_id)))


@transaction.atomic
def export_create(*, organization, user, datasets: list[str], purpose: str = ExportPurpose.EXPORT) -> DataExport:
    export = DataExport.objects.create(
        organization=organization,
        requested_by=user,
        purpose=purpose,
        datasets=[name for name in DATASETS if name in set(datasets)],
    )
    _audit(
        action="export.created",
        organization_id=organization.pk,
        user_id=getattr(user, "pk", None),
        subject_type="export",
        subject_id=export.id,
    )
    _queue_export(export.id)
    return export


def export_downloaded(*, organization, export: DataExport, actor: dict) -> None:
    """The download's audit entry: who (person, credential, OAuth client) and from where, as `request_actor` read
    them from the request."""
    audit_record(
        source="api",
        action="export.downloaded",
        organization_id=organization.pk,
        subject_type="export",
        subject_id=str(export.id),
        **actor,
    )


def build_export(export_id) -> str | None:
    """Build the export's zip (once: a queued export is claimed by one runner). Returns its status."""
    claimed = (
        DataExport.objects.unscoped()
        .filter(id=export_id, status=ExportStatus.QUEUED)
        .update(status=ExportStatus.RUNNING, started_at=timezone.now(), updated_at=timezone.now())
    )
    if not claimed:
        return None
    export = DataExport.objects.unscoped().get(id=export_id)
    try:
        name, size, counts = exports.write_archive(export)
    except Exception as error:
        logger.warning("export %s failed: %s", export.id, type(error).__name__)
        DataExport.objects.unscoped().filter(id=export.id).update(
            status=ExportStatus.FAILED, error_code="unexpected_error", updated_at=timezone.now()
        )
        return ExportStatus.FAILED
    now = timezone.now()
    DataExport.objects.unscoped().filter(id=export.id).update(
        status=ExportStatus.READY,
        storage_name=name,
        size_bytes=size,
        counts=counts,
        rows_done=sum(counts.values()),
        ready_at=now,
        file_expires_at=None if export.purpose == ExportPurpose.ARCHIVE else now + exports.FILE_RETENTION,
        updated_at=now,
    )
    return ExportStatus.READY


def purge_export_files(*, organization=None) -> int:
    """Export files past their retention (or every file of `organization`, when it closes): deleted, the rows kept
    as expired."""
    rows = DataExport.objects.unscoped().exclude(storage_name="")
    if organization is None:
        rows = rows.filter(status=ExportStatus.READY, file_expires_at__lte=timezone.now())
    else:
        rows = rows.filter(organization_id=organization.pk)
    purged = 0
    for export_id, name in list(rows.values_list("id", "storage_name")):
        exports.delete_quietly(name)
        DataExport.objects.unscoped().filter(id=export_id).update(
            status=ExportStatus.EXPIRED, storage_name="", updated_at=timezone.now()
        )
        purged += 1
    return purged


# --- the practice archive -------------------------------------------------------------------------------------------


@transaction.atomic
def archive_schedule(*, organization, user) -> PracticeArchive:
    """Start the full export and schedule the closing at now + GRACE_PERIOD."""
    open_archive = PracticeArchive.objects.for_org(organization).filter(
        status__in=[ArchiveStatus.SCHEDULED, ArchiveStatus.CLOSING]
    )
    if open_archive.exists():
        raise ArchiveInProgress()
    export = export_create(organization=organization, user=user, datasets=list(DATASETS), purpose=ExportPurpose.ARCHIVE)
    archive = PracticeArchive.objects.create(
        organization=organization, requested_by=user, export=export, closes_at=timezone.now() + GRACE_PERIOD
    )
    _audit(
        action="practice_archive.scheduled",
        organization_id=organization.pk,
        user_id=user.pk,
        subject_type="practice_archive",
        subject_id=archive.id,
    )
    return archive


@transaction.atomic
def archive_cancel(*, organization, user) -> PracticeArchive:
    archive = (
        PracticeArchive.objects.for_org(organization).select_for_update().filter(status=ArchiveStatus.SCHEDULED).first()
    )
    if archive is None:
        raise ArchiveNotScheduled()
    archive.status, archive.cancelled_at, archive.cancelled_by = ArchiveStatus.CANCELLED, timezone.now(), user
    archive.save()
    # The practice stays: its archive export becomes an ordinary one, kept for the usual retention.
    DataExport.objects.for_org(organization).filter(id=archive.export_id).update(
        purpose=ExportPurpose.EXPORT, file_expires_at=timezone.now() + exports.FILE_RETENTION
    )
    _audit(
        action="practice_archive.cancelled",
        organization_id=organization.pk,
        user_id=user.pk,
        subject_type="practice_archive",
        subject_id=archive.id,
    )
    return archive


def close_due_practices() -> int:
    """Beat: close every practice whose grace period is over (and finish closings a lost worker left)."""
    due = list(
        PracticeArchive.objects.unscoped()
        .filter(status=ArchiveStatus.SCHEDULED, closes_at__lte=timezone.now())
        .values_list("id", flat=True)
    ) + list(PracticeArchive.objects.unscoped().filter(status=ArchiveStatus.CLOSING).values_list("id", flat=True))
    return sum(1 for archive_id in due if practice_close(archive_id) == ArchiveStatus.CLOSED)


def _end_access(archive: PracticeArchive) -> dict:
    """Members lose access at once (memberships deleted: every request re-reads them, and API keys act as their
    person), pending invitations are cancelled, OAuth connections disconnected, webhook endpoints archived."""
    organization = archive.organization
    members = Membership.objects.for_org(organization).count()
    Membership.objects.for_org(organization).delete()
    invitations = (
        Invitation.objects.for_org(organization)
        .filter(status=Invitation.Status.PENDING)
        .update(status=Invitation.Status.CANCELED, updated_at=timezone.now())
    )
    return {
        "members": members,
        "invitations": invitations,
        "connections": connections_disconnect_practice(organization=organization),
        "webhookEndpoints": endpoints_archive_practice(organization=organization),
    }


def practice_close(archive_id) -> str | None:
    """Close one practice whose grace period is over: access ended (one transaction), then its patients erased in
    batches (each its own transaction: a lost worker resumes), then its export and import files deleted."""
    with transaction.atomic():
        archive = (
            PracticeArchive.objects.unscoped()
            .select_for_update()
            .select_related("organization")
            .filter(id=archive_id)
            .first()
        )
        if archive is None or archive.status not in (ArchiveStatus.SCHEDULED, ArchiveStatus.CLOSING):
            return None
        if archive.status == ArchiveStatus.SCHEDULED:
            if archive.closes_at > timezone.now():
                return None
            archive.closing_report = _end_access(archive)
            archive.status = ArchiveStatus.CLOSING
            archive.save()
    organization = archive.organization
    erased = 0
    while True:
        with transaction.atomic():
            batch = patients_erase_batch(organization=organization, limit=ERASE_BATCH)
        if not batch:
            break
        erased += batch
    files_deleted = purge_export_files(organization=organization) + _delete_import_files(organization)
    with transaction.atomic():
        archive = PracticeArchive.objects.for_org(organization).select_for_update().get(id=archive_id)
        report = dict(archive.closing_report)
        report["patientsErased"] = report.get("patientsErased", 0) + erased
        report["filesDeleted"] = report.get("filesDeleted", 0) + files_deleted
        archive.closing_report, archive.status, archive.closed_at = report, ArchiveStatus.CLOSED, timezone.now()
        archive.save()
        _audit(
            action="practice.closed",
            organization_id=organization.pk,
            subject_type="practice_archive",
            subject_id=archive.id,
            source="system",
        )
    return ArchiveStatus.CLOSED


def _delete_import_files(organization) -> int:
    runs = PatientImport.objects.for_org(organization)
    names = list(runs.values_list("storage_name", flat=True))
    for name in names:
        exports.delete_quietly(name)
    ImportProblem.objects.for_org(organization).delete()
    runs.delete()
    return len(names)
