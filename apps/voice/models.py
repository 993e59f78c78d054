"""AI Voice: a practice's switch and options (VoiceSettings), and per call one transcript of its recording and one
summary of that transcript, each a job worked by Celery (pending → processing → completed or failed).

Transcripts and summaries are clinical-adjacent personal data: their text is kept only encrypted at rest
(apps.core.crypto), never in events, logs or the timeline. Both point at the dialer's Call with on_delete=CASCADE
(and the transcript at the Recording it was made from): a patient's erasure deletes their calls, and these go with
them in the same transaction."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel
from apps.dialer.public import Call, Recording


class VoiceSettings(TenantModel):
    """One row per practice (made on first read). Off by default."""

    enabled = models.BooleanField(default=False)
    auto_transcribe = models.BooleanField(default=False, help_text="Transcribe every stored recording.")
    auto_summarize = models.BooleanField(default=False, help_text="Summarize every completed transcript.")
    language = models.CharField(
        max_length=2, blank=True, default="", help_text="ISO 639-1 hint for transcription; blank: detected."
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization"], name="voice_settings_org_unique")]


class JobStatus(models.TextChoices):
    PENDING = "pending"  # requested, waiting for a worker
    PROCESSING = "processing"  # a worker holds it (claimed_until)
    COMPLETED = "completed"
    FAILED = "failed"  # error_code says why; a new request may be made


OPEN_STATUSES = (JobStatus.PENDING, JobStatus.PROCESSING)


class ErrorCode(models.TextChoices):
    """The bounded reasons a job failed (never a provider's message or any text of the call)."""

    DISABLED = "ai_voice_disabled"  # the practice switched AI Voice off before the job ran
    NOT_CONFIGURED = "not_configured"  # the deployment's provider was removed before the job ran
    RECORDING_UNAVAILABLE = "recording_unavailable"  # gone, unavailable or unreadable in the media storage
    AUDIO_TOO_LARGE = "audio_too_large"
    TRANSCRIPT_EMPTY = "transcript_empty"  # a summary of a transcript without words
    PROVIDER_UNAVAILABLE = "provider_unavailable"  # timeout, network error, 429 or 5xx
    PROVIDER_REFUSED = "provider_refused"  # any other 4xx
    UNREADABLE_ANSWER = "unreadable_answer"
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"  # workers died on it three times
    ERROR = "error"  # a fault of ours


class Job(TenantModel):
    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    # The result as encrypted JSON (apps.core.crypto); empty until completed.
    content_encrypted = models.TextField(blank=True, default="")
    error_code = models.CharField(max_length=32, choices=ErrorCode.choices, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    automatic = models.BooleanField(default=False, help_text="Requested by the practice's auto setting.")
    sandbox = models.BooleanField(default=False, help_text="Made up by the sandbox transport, not a provider.")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    claimed_until = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Transcript(Job):
    recording = models.ForeignKey(Recording, on_delete=models.CASCADE, related_name="+")
    language = models.CharField(max_length=16, blank=True, default="")
    duration_seconds = models.FloatField(null=True, blank=True)
    segment_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "call"], name="voice_transcript_call_unique")]
        indexes = [
            models.Index(
                fields=["updated_at"], condition=Q(status__in=OPEN_STATUSES), name="voice_transcript_open_idx"
            ),
            models.Index(
                fields=["organization", "completed_at"],
                condition=Q(status=JobStatus.COMPLETED),
                name="voice_transcript_done_idx",
            ),
        ]


class Summary(Job):
    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name_plural = "summaries"
        constraints = [models.UniqueConstraint(fields=["organization", "call"], name="voice_summary_call_unique")]
        indexes = [
            models.Index(fields=["updated_at"], condition=Q(status__in=OPEN_STATUSES), name="voice_summary_open_idx"),
        ]
