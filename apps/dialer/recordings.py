"""Recordings and voicemails: copied from the provider into the media storage (Django's storage API,
`storages[SVC_MEDIA_STORAGE_ALIAS]`: the filesystem, or an S3-compatible bucket such as R2) by a Celery task, served
only through GET /calls/{id}/recording, deleted with the patient.

Copying: the row (stored with the call.recording.saved event) is claimed with a lease (SELECT … FOR UPDATE SKIP
LOCKED), the file is downloaded through the adapter with no transaction open (the provider's link is pre-signed
and expires within minutes: an expired link is renewed once through GET /v2/recordings/{id}), written under
dialer/<practice>/<call>/<recording>, and the row marked stored if the lease is still ours (a recording erased
meanwhile loses the file this attempt wrote). A failure is counted with a short reason (never the URL) and retried
with backoff; after five attempts, or at once when retrying cannot help, the recording is unavailable.

Erasing: the erasure hook writes one RecordingDeletion row per recording in the erasure's transaction; after the
commit a task deletes the stored file and the provider's copy and then the row; the sweep retries what is left."""

import logging
import mimetypes
import tempfile
from dataclasses import dataclass

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.errors import NotFound
from apps.dialer import provider
from apps.dialer.errors import (
    RecordingNotReady,
    RecordingStorageUnavailable,
    RecordingUnavailable,
)
from apps.dialer.models import Recording, RecordingDeletion, RecordingState

logger = logging.getLogger("apps.dialer")

MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 30
CLAIM_SECONDS = 300
SWEEP_AFTER_SECONDS = 600
SPOOL_BYTES = 1024 * 1024
EXTENSIONS = {"audio/mpeg": ".mp3", "audio/mp3": ".mp3", "audio/wav": ".wav", "audio/x-wav": ".wav"}


def media_storage():
    return storages[settings.SVC_MEDIA_STORAGE_ALIAS]


def storage_name(recording: Recording, content_type: str) -> str:
    extension = EXTENSIONS.get(content_type, "")
    return f"dialer/{recording.organization_id}/{recording.call_id}/{recording.id}{extension}"


# --- publishing ------------------------------------------------------------------------------------------------------


def request_fetch(recording_id, *, countdown: int | None = None) -> bool:
    """Ask a worker to copy the recording (after the commit that stored it). A broker failure is logged, never
    raised: the row is pending, and the sweep asks again."""
    from apps.dialer.tasks import fetch_recording

    try:
        if countdown:
            fetch_recording.apply_async(args=[str(recording_id)], countdown=countdown)
        else:
            fetch_recording.delay(str(recording_id))
        return True
    except Exception as exc:
        logger.warning("recording copy %s not requested (%s); left to the sweep", recording_id, type(exc).__name__)
        return False


def sweep_pending(*, limit: int = 200) -> int:
    """Pending recordings nobody tried for ten minutes are asked for again; those whose attempts ran out are
    marked unavailable."""
    cutoff = timezone.now() - timezone.timedelta(seconds=SWEEP_AFTER_SECONDS)
    waiting = Recording.unscoped_objects.filter(
        state=RecordingState.PENDING, created_at__lt=cutoff, updated_at__lt=cutoff
    )
    waiting.filter(attempts__gte=MAX_ATTEMPTS).update(
        state=RecordingState.UNAVAILABLE, last_error="attempts_exhausted", updated_at=timezone.now()
    )
    ids = list(waiting.filter(attempts__lt=MAX_ATTEMPTS).order_by("created_at").values_list("id", flat=True)[:limit])
    return sum(request_fetch(recording_id) for recording_id in ids)


# --- copying ---------------------------------------------------------------------------------------------------------


def fetch(recording_id) -> str:
    """One attempt: "stored", "retrying" (a later attempt is scheduled), "unavailable", or "skipped" (not pending,
    erased, or held by another worker)."""
    outcome, retry_in = _attempt(recording_id)
    if retry_in is not None:
        request_fetch(recording_id, countdown=retry_in)
    return outcome


def _claim(recording_id) -> Recording | None:
    now = timezone.now()
    with transaction.atomic():
        recording = (
            Recording.unscoped_objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("call__connection")
            .filter(id=recording_id, state=RecordingState.PENDING)
            .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
            .first()
        )
        if recording is not None:
            recording.claimed_until = now + timezone.timedelta(seconds=CLAIM_SECONDS)
            recording.save(update_fields=["claimed_until", "updated_at"])
        return recording


def _download(recording: Recording, sink) -> provider.Downloaded:
    from apps.dialer.services import connection_api_key

    try:
        transport = provider.transport(connection_api_key(recording.call.connection))
    except Exception:
        raise provider.DownloadFailed("credentials_unreadable", final=True) from None
    url = recording.provider_url
    if not url and not recording.provider_recording_id:
        raise provider.DownloadFailed("no_reference", final=True)
    if url:
        try:
            return transport.download(url, sink)
        except provider.DownloadFailed as failure:
            if not failure.expired:
                raise
            if not recording.provider_recording_id:  # gone, and no way to ask for a fresh link
                raise provider.DownloadFailed(failure.reason, final=True) from None
        sink.seek(0)
        sink.truncate()
    try:  # the link expired (or there was none): a fresh one from the API
        links = transport.recording_links(recording.provider_recording_id)
    except provider.ProviderRefused as refusal:
        raise provider.DownloadFailed(f"provider_{refusal.code}"[:60], final=refusal.status in (404, 410)) from None
    except provider.ProviderUnavailable:
        raise provider.DownloadFailed("provider_unavailable") from None
    fresh = links.get("mp3") or links.get("wav")
    if not fresh:
        raise provider.DownloadFailed("no_download_link")
    try:
        return transport.download(fresh, sink)
    except provider.DownloadFailed as failure:
        if failure.expired:  # a fresh link that is refused: the provider's copy is gone
            raise provider.DownloadFailed(failure.reason, final=True) from None
        raise


def _store(recording: Recording, sink, fetched: provider.Downloaded) -> str:
    name = storage_name(recording, fetched.content_type)
    sink.seek(0)
    content = File(sink, name=name)
    content.size = fetched.size
    try:
        storage = media_storage()
        storage.delete(name)
        return storage.save(name, content)
    except Exception as exc:
        logger.warning("recording %s storage write failed: %s", recording.id, type(exc).__name__)
        raise provider.DownloadFailed("storage") from None


def _attempt(recording_id) -> tuple[str, int | None]:
    recording = _claim(recording_id)
    if recording is None:
        return "skipped", None
    lease = recording.claimed_until
    written, fetched, failure = "", None, None
    try:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as sink:
            fetched = _download(recording, sink)
            written = _store(recording, sink, fetched)
    except provider.DownloadFailed as download_failure:
        failure = download_failure
    except Exception as exc:  # a fault of ours: counted like any failure (the type only)
        logger.warning("recording %s copy raised %s", recording.id, type(exc).__name__)
        failure = provider.DownloadFailed("error")
    with transaction.atomic():
        current = (
            Recording.unscoped_objects.select_for_update()
            .filter(id=recording.id, state=RecordingState.PENDING, claimed_until=lease)
            .first()
        )
        if current is None:
            if written and not Recording.unscoped_objects.filter(id=recording.id).exists():
                transaction.on_commit(lambda: _delete_files([written]))  # erased while copying: no orphan
            return "skipped", None
        current.claimed_until = None
        if failure is not None:
            return _failed(current, failure)
        current.state, current.storage_name, current.size = RecordingState.STORED, written, fetched.size
        current.content_type = fetched.content_type or "application/octet-stream"
        current.provider_url, current.last_error = "", ""
        current.save(
            update_fields=[
                "state", "storage_name", "size", "content_type", "provider_url", "last_error", "claimed_until",
                "updated_at",
            ]
        )  # fmt: skip
        return "stored", None


def _failed(recording: Recording, failure: provider.DownloadFailed) -> tuple[str, int | None]:
    recording.attempts += 1
    recording.last_error = failure.reason[:120]
    retry_in = None
    if failure.final or recording.attempts >= MAX_ATTEMPTS:
        recording.state = RecordingState.UNAVAILABLE
        recording.provider_url = ""
        outcome = "unavailable"
    else:
        retry_in = RETRY_BASE_SECONDS * 2 ** (recording.attempts - 1)
        outcome = "retrying"
    recording.save(update_fields=["attempts", "last_error", "state", "provider_url", "claimed_until", "updated_at"])
    logger.info(
        "recording %s copy failed (%s, attempt %d): %s", recording.id, failure.reason, recording.attempts, outcome
    )
    return outcome, retry_in


# --- reading ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Download:
    handle: object  # an open binary file of the storage; the response closes it
    content_type: str
    filename: str
    size: int | None


def open_download(recording: Recording | None) -> Download:
    """The stored file, opened: none 404, pending 409, unavailable 410, missing from storage 404, an unreachable
    store 503."""
    if recording is None:
        raise NotFound("This call has no recording.")
    if recording.state == RecordingState.PENDING:
        raise RecordingNotReady()
    if recording.state != RecordingState.STORED:
        raise RecordingUnavailable()
    try:
        handle = media_storage().open(recording.storage_name, "rb")
    except FileNotFoundError:
        logger.error("stored recording %s is missing from storage", recording.id)
        raise NotFound("The recording's file is missing.") from None
    except Exception as exc:
        logger.warning("recording storage read failed: %s", type(exc).__name__)
        raise RecordingStorageUnavailable() from None
    content_type = recording.content_type or "application/octet-stream"
    extension = mimetypes.guess_extension(content_type) or EXTENSIONS.get(content_type, "")
    return Download(handle, content_type, f"{recording.kind}-{recording.call_id}{extension}", recording.size)


# --- erasing ---------------------------------------------------------------------------------------------------------


def schedule_deletion(*, organization, recordings: list[Recording]) -> int:
    """Inside the erasure's transaction: one deletion row per recording (its stored file and the provider's copy),
    worked off after the commit. Returns how many were scheduled."""
    rows = RecordingDeletion.objects.bulk_create(
        [
            RecordingDeletion(
                organization_id=recording.organization_id,
                storage_name=recording.storage_name if recording.state == RecordingState.STORED else "",
                connection_id=recording.call.connection_id,
                provider_recording_id=recording.provider_recording_id,
            )
            for recording in recordings
        ]
    )
    ids = [str(row.id) for row in rows]
    if ids:
        transaction.on_commit(lambda: _request_deletion(ids))
    return len(rows)


def _request_deletion(ids: list[str]) -> None:
    from apps.dialer.tasks import delete_recordings

    try:
        delete_recordings.delay(ids)
    except Exception as exc:
        logger.warning("recording deletion not requested (%s); left to the sweep", type(exc).__name__)


def delete_scheduled(deletion_ids) -> int:
    """Delete the files (and the provider's copies) of these deletion rows; each row goes once both are gone. A
    failure keeps the row for the sweep. Returns how many were done."""
    from apps.dialer.services import connection_api_key

    done = 0
    for deletion in RecordingDeletion.unscoped_objects.select_related("connection").filter(id__in=deletion_ids):
        try:
            if deletion.storage_name:
                media_storage().delete(deletion.storage_name)
                deletion.storage_name = ""  # the file is gone, whatever happens at the provider
            if deletion.provider_recording_id and deletion.connection is not None:
                provider.transport(connection_api_key(deletion.connection)).delete_recording(
                    deletion.provider_recording_id
                )
        except Exception as exc:
            logger.warning("recording deletion failed (%s); the sweep retries it", type(exc).__name__)
            RecordingDeletion.unscoped_objects.filter(id=deletion.id).update(
                storage_name=deletion.storage_name, attempts=deletion.attempts + 1, updated_at=timezone.now()
            )
            continue
        RecordingDeletion.unscoped_objects.filter(id=deletion.id).delete()
        done += 1
    return done


def sweep_deletions(*, limit: int = 200) -> int:
    cutoff = timezone.now() - timezone.timedelta(seconds=60)
    ids = list(
        RecordingDeletion.unscoped_objects.filter(created_at__lt=cutoff, attempts__lt=50)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    return delete_scheduled(ids) if ids else 0


def _delete_files(names: list[str]) -> None:
    storage = media_storage()
    for name in names:
        try:
            storage.delete(name)
        except Exception as exc:
            logger.warning("could not delete a recording file: %s", type(exc).__name__)
