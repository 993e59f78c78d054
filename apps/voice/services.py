"""AI Voice: the practice's settings, requesting a call's transcript or summary, the workers' processing of them, and
the sweep (automatic transcription and summaries, lost jobs).

Requests: one transcript and one summary per call. A request while one is pending or processing answers that job;
a completed one of the call's newest recording (or, for a summary, of its transcript) answers itself; a failed one
is requested again on the same row. New work takes one token from the practice's AI assist bucket (apps.assist:
60 burst, 6 per minute), after every other check, and is queued to Celery after the commit. Requests of one call
are serialized by a transaction advisory lock; a transcript requested again drops the summary of the text it
replaces.

Processing (Celery, idempotent): the job is claimed with a lease (a conditional update pending → processing); the
audio is read from the dialer's media storage and sent to the provider with no transaction open; the result is
written encrypted if the lease is still ours (a job erased with its call meanwhile writes nothing). A failure is
final with a bounded error code (a new POST retries); a worker that died leaves a lease that runs out, and the
sweep queues the job again, three attempts at most. The practice's switch is read again when the job runs: AI
Voice switched off meanwhile fails it (ai_voice_disabled).

Nothing of a transcript or a summary is written to events, logs or the timeline: logs carry ids, statuses and
error codes only."""

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from apps.assist.public import ASSIST_LIMIT
from apps.core import crypto
from apps.core.errors import ApiError, RateLimited, ServiceUnavailable
from apps.core.writes import assign_fields
from apps.dialer.public import (
    Call,
    Recording,
    RecordingState,
    call_recording,
    open_recording,
)
from apps.voice import provider
from apps.voice.errors import (
    AiVoiceDisabled,
    AiVoiceNotConfigured,
    RecordingNotReady,
    TranscriptNotReady,
)
from apps.voice.models import (
    OPEN_STATUSES,
    ErrorCode,
    JobStatus,
    Summary,
    Transcript,
    VoiceSettings,
)

logger = logging.getLogger("apps.voice")

CLAIM_SECONDS = 600  # a worker's lease on a job: above the task time limit
MAX_ATTEMPTS = 3
LOST_AFTER_SECONDS = 120  # a pending job nobody took for this long is queued again
AUTO_WINDOW_SECONDS = 3600  # the sweep's look-back for recordings to transcribe and transcripts to summarize
SWEEP_LIMIT = 100
SETTINGS_FIELDS = ("enabled", "auto_transcribe", "auto_summarize", "language")


def _org_id(organization):
    return getattr(organization, "pk", organization)


# --- settings ---------------------------------------------------------------------------------------------------------


def settings_get(*, organization) -> VoiceSettings:
    found = VoiceSettings.objects.for_org(organization).first()
    if found is not None:
        return found
    VoiceSettings.objects.bulk_create([VoiceSettings(organization_id=_org_id(organization))], ignore_conflicts=True)
    return VoiceSettings.objects.for_org(organization).get()


@transaction.atomic
def settings_update(*, organization, actor, data: dict) -> VoiceSettings:
    """Switching AI Voice on needs a transcription provider on this deployment (409 AI_VOICE_NOT_CONFIGURED)."""
    if data.get("enabled") and not provider.transcription_available():
        raise AiVoiceNotConfigured("transcription")
    current = settings_get(organization=organization)
    row = VoiceSettings.objects.for_org(organization).select_for_update().get(id=current.id)
    if assign_fields(row, data, fields=SETTINGS_FIELDS):
        row.updated_by = actor
        row.save()
    return row


# --- the bucket ----------------------------------------------------------------------------------------------------


def charge_automatic(organization_id) -> None:
    """One token of the practice's AI assist bucket for work no request carries (the sweep, auto summaries): the
    bucket is keyed on view.organization, exactly as apps.assist's routes take it. Raises RateLimited, or
    ServiceUnavailable without Redis (the bucket fails closed)."""
    ASSIST_LIMIT.check(None, SimpleNamespace(organization=SimpleNamespace(pk=organization_id)))


# --- requests ---------------------------------------------------------------------------------------------------------


def _lock(kind: str, call_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"ai-voice:{kind}:{call_id}"])


def _require_enabled(organization) -> VoiceSettings:
    options = settings_get(organization=organization)
    if not options.enabled:
        raise AiVoiceDisabled()
    return options


def _reset(job, *, actor, automatic: bool, **fields) -> None:
    job.status, job.content_encrypted, job.error_code, job.attempts = JobStatus.PENDING, "", "", 0
    job.sandbox, job.claimed_until, job.completed_at = False, None, None
    job.requested_by, job.automatic = actor, automatic
    for name, value in fields.items():
        setattr(job, name, value)
    job.save()


def transcript_request(*, organization, actor, call: Call, charge, automatic: bool = False) -> Transcript:
    """The call's transcript: the open or completed one, or a new job for its newest stored recording. `charge()`
    takes the bucket's token (raising 429) just before new work is written."""
    with transaction.atomic():
        _require_enabled(organization)
        if not provider.transcription_available():
            raise AiVoiceNotConfigured("transcription")
        _lock("transcript", call.id)
        recording = call_recording(call)
        existing = Transcript.objects.for_org(organization).select_for_update().filter(call_id=call.id).first()
        if existing is not None:
            if existing.status in OPEN_STATUSES:
                return existing
            if (
                existing.status == JobStatus.COMPLETED
                and recording is not None
                and existing.recording_id == recording.id
            ):
                return existing
        if recording is None:
            raise RecordingNotReady("none")
        if recording.state != RecordingState.STORED:
            raise RecordingNotReady(recording.state)
        charge()
        if existing is None:
            transcript = Transcript.objects.create(
                organization_id=_org_id(organization),
                call=call,
                recording=recording,
                requested_by=actor,
                automatic=automatic,
            )
        else:
            transcript = existing
            Summary.objects.for_org(organization).filter(call_id=call.id).delete()  # of the text being replaced
            _reset(
                transcript,
                actor=actor,
                automatic=automatic,
                recording=recording,
                language="",
                duration_seconds=None,
                segment_count=0,
            )
        transaction.on_commit(lambda: _queue("transcribe", transcript.id))
    logger.info("AI Voice transcript %s requested (call %s, automatic %s)", transcript.id, call.id, automatic)
    return transcript


def summary_request(*, organization, actor, call: Call, charge, automatic: bool = False) -> Summary:
    """The call's summary: the open or completed one, or a new job over its completed transcript."""
    with transaction.atomic():
        _require_enabled(organization)
        if not provider.summary_available():
            raise AiVoiceNotConfigured("summary")
        _lock("summary", call.id)
        existing = Summary.objects.for_org(organization).select_for_update().filter(call_id=call.id).first()
        if existing is not None and existing.status != JobStatus.FAILED:
            return existing
        # Locked: a transcript requested again meanwhile (which drops this call's summary) goes first or after.
        transcript = Transcript.objects.for_org(organization).select_for_update().filter(call_id=call.id).first()
        if transcript is None:
            raise TranscriptNotReady("none")
        if transcript.status != JobStatus.COMPLETED:
            raise TranscriptNotReady(transcript.status)
        charge()
        if existing is None:
            summary = Summary.objects.create(
                organization_id=_org_id(organization),
                call=call,
                transcript=transcript,
                requested_by=actor,
                automatic=automatic,
            )
        else:
            summary = existing
            _reset(summary, actor=actor, automatic=automatic, transcript=transcript)
        transaction.on_commit(lambda: _queue("summarize", summary.id))
    logger.info("AI Voice summary %s requested (call %s, automatic %s)", summary.id, call.id, automatic)
    return summary


def _queue(task_name: str, job_id) -> bool:
    """Ask a worker (after the commit). A broker failure is logged, never raised: the sweep queues it again."""
    from apps.voice import tasks

    try:
        getattr(tasks, task_name).delay(str(job_id))
        return True
    except Exception as exc:
        logger.warning("AI Voice job %s not queued (%s); left to the sweep", job_id, type(exc).__name__)
        return False


# --- processing (Celery) ----------------------------------------------------------------------------------------------


def _claimable(now) -> Q:
    return Q(status=JobStatus.PENDING) | Q(status=JobStatus.PROCESSING, claimed_until__lt=now)


def _claim(model, job_id, *, related: str):
    """The job, now processing under our lease; None when it is done, held by a live worker, gone, or its attempts
    ran out (then it is failed here)."""
    now = timezone.now()
    jobs = model.objects.unscoped().filter(_claimable(now), id=job_id)
    lease = now + timedelta(seconds=CLAIM_SECONDS)
    taken = jobs.filter(attempts__lt=MAX_ATTEMPTS).update(
        status=JobStatus.PROCESSING, claimed_until=lease, attempts=F("attempts") + 1, updated_at=now
    )
    if not taken:
        if jobs.filter(attempts__gte=MAX_ATTEMPTS).update(
            status=JobStatus.FAILED, error_code=ErrorCode.ATTEMPTS_EXHAUSTED, claimed_until=None, updated_at=now
        ):
            logger.info("AI Voice %s %s failed: %s", model.__name__.lower(), job_id, ErrorCode.ATTEMPTS_EXHAUSTED)
        return None
    return model.objects.unscoped().select_related(related).filter(id=job_id, claimed_until=lease).first()


def _ours(job):
    return (
        type(job)
        .objects.for_org(job.organization_id)
        .filter(id=job.id, status=JobStatus.PROCESSING, claimed_until=job.claimed_until)
    )


def _fail(job, code: str) -> str:
    if _ours(job).update(status=JobStatus.FAILED, error_code=code, claimed_until=None, updated_at=timezone.now()):
        logger.info("AI Voice %s %s failed: %s", type(job).__name__.lower(), job.id, code)
        return "failed"
    return "skipped"


@dataclass(frozen=True)
class Audio:
    data: bytes
    content_type: str


def _read_audio(recording: Recording) -> Audio:
    limit = int(settings.SVC_AI_VOICE_MAX_AUDIO_BYTES)
    try:
        download = open_recording(recording)
    except ApiError as exc:
        logger.info("AI Voice: recording %s not readable (%s)", recording.id, exc.code)
        raise provider.TranscriptionFailed(ErrorCode.RECORDING_UNAVAILABLE) from None
    try:
        if download.size and download.size > limit:
            raise provider.TranscriptionFailed(ErrorCode.AUDIO_TOO_LARGE)
        data = download.handle.read(limit + 1)
    except OSError as exc:
        logger.warning("AI Voice: recording %s read failed (%s)", recording.id, type(exc).__name__)
        raise provider.TranscriptionFailed(ErrorCode.RECORDING_UNAVAILABLE) from None
    finally:
        download.handle.close()
    if len(data) > limit:
        raise provider.TranscriptionFailed(ErrorCode.AUDIO_TOO_LARGE)
    return Audio(data=data, content_type=download.content_type)


def transcript_process(transcript_id) -> str:
    """One attempt: "completed", "failed" or "skipped" (not ours to work)."""
    transcript = _claim(Transcript, transcript_id, related="recording")
    if transcript is None:
        return "skipped"
    options = settings_get(organization=transcript.organization_id)
    if not options.enabled:
        return _fail(transcript, ErrorCode.DISABLED)
    try:
        audio = _read_audio(transcript.recording)
        result = provider.transcribe(
            audio.data,
            content_type=audio.content_type,
            language=options.language,
            duration_hint=transcript.recording.duration_seconds,
        )
    except provider.TranscriptionFailed as failure:
        return _fail(transcript, failure.code)
    except Exception as exc:  # a fault of ours: the type only
        logger.warning("AI Voice transcript %s raised %s", transcript.id, type(exc).__name__)
        return _fail(transcript, ErrorCode.ERROR)
    content = crypto.encrypt(json.dumps({"segments": [segment.as_dict() for segment in result.segments]}))
    now = timezone.now()
    done = _ours(transcript).update(
        status=JobStatus.COMPLETED,
        content_encrypted=content,
        language=result.language,
        duration_seconds=result.duration,
        segment_count=len(result.segments),
        sandbox=result.sandbox,
        error_code="",
        claimed_until=None,
        completed_at=now,
        updated_at=now,
    )
    if not done:
        return "skipped"
    logger.info("AI Voice transcript %s completed (%d segments)", transcript.id, len(result.segments))
    if options.auto_summarize:
        _auto_summary(transcript.organization_id, transcript.call_id)
    return "completed"


def summary_process(summary_id) -> str:
    summary = _claim(Summary, summary_id, related="transcript")
    if summary is None:
        return "skipped"
    if not settings_get(organization=summary.organization_id).enabled:
        return _fail(summary, ErrorCode.DISABLED)
    transcript = summary.transcript
    if transcript.status != JobStatus.COMPLETED:
        return _fail(summary, ErrorCode.TRANSCRIPT_EMPTY)
    try:
        result = provider.summarize(json.loads(crypto.decrypt(transcript.content_encrypted))["segments"])
    except provider.TranscriptionFailed as failure:
        return _fail(summary, failure.code)
    except Exception as exc:
        logger.warning("AI Voice summary %s raised %s", summary.id, type(exc).__name__)
        return _fail(summary, ErrorCode.ERROR)
    content = crypto.encrypt(json.dumps({"summary": result.summary, "actionItems": result.action_items}))
    now = timezone.now()
    done = _ours(summary).update(
        status=JobStatus.COMPLETED,
        content_encrypted=content,
        sandbox=result.sandbox,
        error_code="",
        claimed_until=None,
        completed_at=now,
        updated_at=now,
    )
    if not done:
        return "skipped"
    logger.info("AI Voice summary %s completed (%d action items)", summary.id, len(result.action_items))
    return "completed"


def _auto_summary(organization_id, call_id) -> bool:
    """A summary of a transcript that just completed, for a practice that summarizes automatically. A refusal (the
    bucket, AI Voice switched off, no provider) is left to the sweep."""
    call = Call.objects.for_org(organization_id).filter(id=call_id).first()
    if call is None:
        return False
    try:
        summary_request(
            organization=organization_id,
            actor=None,
            call=call,
            charge=lambda: charge_automatic(organization_id),
            automatic=True,
        )
    except ApiError as refusal:
        logger.info("AI Voice automatic summary of call %s not requested (%s)", call_id, refusal.code)
        return False
    return True


# --- the sweep (every minute) ----------------------------------------------------------------------------------------


def sweep() -> dict:
    return {"requeued": requeue_lost(), "transcripts": auto_transcribe(), "summaries": auto_summarize()}


def requeue_lost(*, limit: int = SWEEP_LIMIT) -> int:
    """Pending jobs nobody took for two minutes (a lost queue message) and processing ones whose lease ran out (a
    worker that died) are queued again; the task fails them once three attempts are spent."""
    now = timezone.now()
    stale = Q(status=JobStatus.PENDING, updated_at__lt=now - timedelta(seconds=LOST_AFTER_SECONDS)) | Q(
        status=JobStatus.PROCESSING, claimed_until__lt=now
    )
    queued = 0
    for model, task_name in ((Transcript, "transcribe"), (Summary, "summarize")):
        ids = list(model.objects.unscoped().filter(stale).order_by("updated_at").values_list("id", flat=True)[:limit])
        model.objects.unscoped().filter(id__in=ids, status=JobStatus.PENDING).update(updated_at=now)
        queued += sum(_queue(task_name, job_id) for job_id in ids)
    return queued


def _automatic_practices(flag: str):
    return VoiceSettings.objects.unscoped().filter(enabled=True, **{flag: True}).values("organization_id")


def auto_transcribe(*, limit: int = SWEEP_LIMIT) -> int:
    """Recordings stored in the last hour, of practices transcribing automatically, whose call has no transcript
    yet. A practice whose bucket is empty waits for the next run."""
    since = timezone.now() - timedelta(seconds=AUTO_WINDOW_SECONDS)
    recordings = (
        Recording.objects.unscoped()
        .filter(
            organization_id__in=_automatic_practices("auto_transcribe"),
            state=RecordingState.STORED,
            updated_at__gte=since,
        )
        .filter(~Exists(Transcript.objects.unscoped().filter(call_id=OuterRef("call_id"))))
        .select_related("call")
        .order_by("updated_at")[:limit]
    )
    return _request_each(((recording.organization_id, recording.call) for recording in recordings), transcript_request)


def auto_summarize(*, limit: int = SWEEP_LIMIT) -> int:
    """Transcripts completed in the last hour, of practices summarizing automatically, without a summary yet."""
    since = timezone.now() - timedelta(seconds=AUTO_WINDOW_SECONDS)
    transcripts = (
        Transcript.objects.unscoped()
        .filter(
            organization_id__in=_automatic_practices("auto_summarize"),
            status=JobStatus.COMPLETED,
            completed_at__gte=since,
        )
        .filter(~Exists(Summary.objects.unscoped().filter(call_id=OuterRef("call_id"))))
        .select_related("call")
        .order_by("completed_at")[:limit]
    )
    return _request_each(((transcript.organization_id, transcript.call) for transcript in transcripts), summary_request)


def _request_each(pairs, request) -> int:
    requested, waiting = 0, set()
    for organization_id, call in pairs:
        if organization_id in waiting:
            continue
        try:
            request(
                organization=organization_id,
                actor=None,
                call=call,
                charge=lambda organization_id=organization_id: charge_automatic(organization_id),
                automatic=True,
            )
        except (RateLimited, ServiceUnavailable):
            waiting.add(organization_id)  # the bucket is empty (or Redis is down): the next run tries again
            continue
        except ApiError as refusal:
            logger.info("AI Voice automatic request for call %s refused (%s)", call.id, refusal.code)
            continue
        requested += 1
    return requested
