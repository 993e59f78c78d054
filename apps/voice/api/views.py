"""AI Voice routes (tag "AI Voice"): the practice's switch (GET/PATCH /settings/ai-voice), and a call's transcript
and summary (GET reads, POST requests one) under /calls/{id}/…, so MCP agents never see them.

Access: the settings are practice settings (settings:read, settings:update; OAuth scope area settings). The call
routes are in the dialer scope area (an OAuth token needs the `dialer` scope) with permission dialer:use (owners,
managers, front desk, telesales); like listening to it (GET /calls/{id}/recording), a recorded call's transcript
and summary also need dialer:recording (owners, managers), a voicemail's only dialer:use.

Order of refusals on POST: credential, scope and role (401/403) → another practice's or an unknown call (404) →
a recorded call without dialer:recording (403) → AI Voice off for the practice (409 AI_VOICE_DISABLED) → no
provider on this service (409 AI_VOICE_NOT_CONFIGURED) → an open job answers itself (202), a completed one too
(200) → no stored recording (409 RECORDING_NOT_READY) or, for a summary, no completed transcript (409
TRANSCRIPT_NOT_READY) → the practice's AI assist bucket (429 RATE_LIMITED with Retry-After) → 202 pending."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.assist.public import ASSIST_LIMIT
from apps.core.access import access_backend
from apps.core.errors import NotFound, PermissionDenied
from apps.core.schema import ApiErrorSerializer
from apps.core.scopes import DIALER_AREA
from apps.core.views import BaseApiView
from apps.dialer.public import Call, RecordingKind, call_recording
from apps.voice import selectors, services
from apps.voice.api import serializers as s
from apps.voice.models import JobStatus

TAGS = ["AI Voice"]
PRIVACY = (
    "Transcripts and summaries are kept encrypted at rest and never appear in events, webhooks, logs or the "
    "timeline; they are deleted with the call (a patient's erasure included)."
)
REQUEST_RULES = (
    "Permission dialer:use; a recorded call also needs dialer:recording (owners and managers), a voicemail does not "
    "(403 PERMISSION_DENIED, details.permission). Another practice's or an unknown call: 404. AI Voice switched off "
    "for the practice (the default): 409 AI_VOICE_DISABLED; no provider on this service: 409 "
    "AI_VOICE_NOT_CONFIGURED (details.service). A job already pending or processing answers 202 with that job (no "
    "new work, no token); a completed one answers 200 with itself. New work takes one token from the practice's AI "
    "assist bucket (shared with the inbox's AI assist: 60 burst, 6 per minute): when it is empty, 429 RATE_LIMITED "
    "with Retry-After. Otherwise 202 with status pending: a worker processes it; poll the GET route. A failed job "
    "(errorCode says why) is requested again by the same POST. No body."
)


def _job_response(serializer_class, job) -> Response:
    status = 200 if job.status == JobStatus.COMPLETED else 202
    return Response(serializer_class(job).data, status=status)


# --- settings ---------------------------------------------------------------------------------------------------------


class VoiceSettingsView(BaseApiView):
    permission = {"GET": "settings:read", "PATCH": "settings:update"}
    scope_area = "settings"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="ai_voice_settings_read",
        responses={200: s.VoiceSettingsSerializer},
        summary="AI Voice settings of the practice (off by default)",
        description="Permission settings:read. enabled (default false), autoTranscribe, autoSummarize, language "
        "(ISO 639-1 hint, empty: detected), and whether this service has the providers (transcriptionAvailable, "
        "summaryAvailable).",
    )
    def get(self, request):
        return Response(s.VoiceSettingsSerializer(services.settings_get(organization=self.organization)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="ai_voice_settings_update",
        request=s.VoiceSettingsWriteSerializer,
        responses={
            200: s.VoiceSettingsSerializer,
            409: OpenApiResponse(
                ApiErrorSerializer,
                description="AI_VOICE_NOT_CONFIGURED: enabled true on a service without a transcription provider.",
            ),
        },
        summary="Switch AI Voice on or off, and its automatic transcripts and summaries",
        description="Permission settings:update (owners and managers). Any of enabled, autoTranscribe (every "
        "recording or voicemail the dialer stores is transcribed, within a minute), autoSummarize (every completed "
        "transcript is summarized), language (ISO 639-1 or empty). Automatic work draws from the practice's AI "
        "assist bucket like a request does and waits for the next minute when it is empty. Switching off stops "
        "jobs not yet worked (they fail with ai_voice_disabled); transcripts already made stay readable. " + PRIVACY,
    )
    def patch(self, request):
        data = self.parse_body(s.VoiceSettingsWriteSerializer).validated_data
        row = services.settings_update(organization=self.organization, actor=request.user, data=dict(data))
        return Response(s.VoiceSettingsSerializer(row).data)


# --- a call's transcript and summary -------------------------------------------------------------------------------


class CallJobView(BaseApiView):
    permission = "dialer:use"
    scope_area = DIALER_AREA
    error_statuses = ("409",)

    def call(self, id) -> Call:
        return self.get_tenant_object(Call, id)

    def require_listening(self, recording) -> None:
        """A recorded call's words need what listening to it needs (dialer:recording); a voicemail's do not."""
        needs = "dialer:recording"
        recorded_call = recording is not None and recording.kind == RecordingKind.CALL
        if recorded_call and not access_backend().role_has_permission(self.membership.role, needs):
            raise PermissionDenied(details={"permission": needs})

    def charge(self) -> None:
        ASSIST_LIMIT.check(self.request, self)


NOT_FOUND = OpenApiResponse(
    ApiErrorSerializer, description="NOT_FOUND: no such call (another practice's included), or none made yet."
)
FORBIDDEN = OpenApiResponse(
    ApiErrorSerializer,
    description="PERMISSION_DENIED: a role without dialer:use, or a recorded call without dialer:recording; "
    "INSUFFICIENT_SCOPE: an OAuth token without the dialer scope.",
)


class TranscriptView(CallJobView):
    @extend_schema(
        tags=TAGS,
        operation_id="calls_transcript_read",
        responses={200: s.TranscriptSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        summary="Read a call's transcript",
        description="Permission dialer:use; a recorded call's transcript also needs dialer:recording. status "
        "pending or processing (segments []), completed (segments: speaker when the provider tells speakers or "
        "channels apart, start and end in seconds, text; language; durationSeconds) or failed (errorCode). 404 "
        "when the call has none. " + PRIVACY,
    )
    def get(self, request, id):
        call = self.call(id)
        transcript = selectors.transcript_of(organization=self.organization, call_id=call.id)
        self.require_listening(transcript.recording if transcript is not None else call_recording(call))
        if transcript is None:
            raise NotFound("This call has no transcript; request one with POST.")
        return Response(s.TranscriptSerializer(transcript).data)

    @extend_schema(
        tags=TAGS,
        operation_id="calls_transcript_request",
        request=None,
        responses={
            200: s.TranscriptSerializer,
            202: s.TranscriptSerializer,
            403: FORBIDDEN,
            404: NOT_FOUND,
            409: OpenApiResponse(
                ApiErrorSerializer,
                description="AI_VOICE_DISABLED, AI_VOICE_NOT_CONFIGURED, or RECORDING_NOT_READY (details.recording: "
                "none, pending while the dialer copies it, unavailable when the copy failed for good).",
            ),
        },
        summary="Transcribe a call's recording or voicemail",
        description="The call's newest recording, once the dialer has stored it, is sent to the speech-to-text "
        "provider by a worker. " + REQUEST_RULES + " Requesting again after the call got a newer recording "
        "transcribes that one (and drops the summary of the old text). " + PRIVACY,
    )
    def post(self, request, id):
        call = self.call(id)
        self.require_listening(call_recording(call))
        transcript = services.transcript_request(
            organization=self.organization, actor=request.user, call=call, charge=self.charge
        )
        return _job_response(s.TranscriptSerializer, transcript)


class SummaryView(CallJobView):
    @extend_schema(
        tags=TAGS,
        operation_id="calls_summary_read",
        responses={200: s.SummarySerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        summary="Read a call's summary",
        description="Permission dialer:use; a recorded call's summary also needs dialer:recording. status pending, "
        "processing, completed (summary: a few sentences; actionItems: follow-ups for the practice) or failed "
        "(errorCode). 404 when the call has none. " + PRIVACY,
    )
    def get(self, request, id):
        call = self.call(id)
        summary = selectors.summary_of(organization=self.organization, call_id=call.id)
        self.require_listening(summary.transcript.recording if summary is not None else call_recording(call))
        if summary is None:
            raise NotFound("This call has no summary; request one with POST.")
        return Response(s.SummarySerializer(summary).data)

    @extend_schema(
        tags=TAGS,
        operation_id="calls_summary_request",
        request=None,
        responses={
            200: s.SummarySerializer,
            202: s.SummarySerializer,
            403: FORBIDDEN,
            404: NOT_FOUND,
            409: OpenApiResponse(
                ApiErrorSerializer,
                description="AI_VOICE_DISABLED, AI_VOICE_NOT_CONFIGURED, or TRANSCRIPT_NOT_READY (details."
                "transcript: none, pending, processing or failed).",
            ),
        },
        summary="Summarize a call from its transcript",
        description="The call's completed transcript (speaker labels and text only) is sent to the AI assist "
        "provider, which answers a short summary and action items. " + REQUEST_RULES + " " + PRIVACY,
    )
    def post(self, request, id):
        call = self.call(id)
        self.require_listening(call_recording(call))
        summary = services.summary_request(
            organization=self.organization, actor=request.user, call=call, charge=self.charge
        )
        return _job_response(s.SummarySerializer, summary)
