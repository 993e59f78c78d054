"""Wire shapes of AI Voice (camelCase on the wire)."""

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.fields import StrictBooleanField, TextField
from apps.core.serializers import NonEmptyPatchSerializer
from apps.voice import provider, selectors
from apps.voice.models import ErrorCode, JobStatus, Summary, Transcript, VoiceSettings

LANGUAGE = re.compile(r"[a-z]{2}")


class VoiceSettingsSerializer(serializers.ModelSerializer):
    transcription_available = serializers.SerializerMethodField(
        help_text="Whether this service has a speech-to-text provider (or runs the sandbox): AI Voice can be "
        "switched on only then."
    )
    summary_available = serializers.SerializerMethodField(
        help_text="Whether this service has the AI assist provider summaries are made with (or runs the sandbox)."
    )

    class Meta:
        model = VoiceSettings
        ref_name = "AiVoiceSettings"
        fields = [
            "enabled",
            "auto_transcribe",
            "auto_summarize",
            "language",
            "transcription_available",
            "summary_available",
            "updated_at",
        ]
        extra_kwargs = {
            "enabled": {"help_text": "AI Voice for this practice (default false)."},
            "auto_transcribe": {"help_text": "Every stored recording or voicemail is transcribed automatically."},
            "auto_summarize": {"help_text": "Every completed transcript is summarized automatically."},
            "language": {"help_text": "ISO 639-1 code the transcription is told to expect; empty: detected."},
        }

    def get_transcription_available(self, _row) -> bool:
        return provider.transcription_available()

    def get_summary_available(self, _row) -> bool:
        return provider.summary_available()


class VoiceSettingsWriteSerializer(NonEmptyPatchSerializer):
    enabled = StrictBooleanField(
        required=False, help_text="Switch AI Voice on (409 AI_VOICE_NOT_CONFIGURED without a provider) or off."
    )
    auto_transcribe = StrictBooleanField(required=False, help_text="Transcribe every stored recording.")
    auto_summarize = StrictBooleanField(required=False, help_text="Summarize every completed transcript.")
    language = TextField(
        required=False, allow_blank=True, max_length=2, help_text='ISO 639-1 code ("it", "en"); "" to detect.'
    )

    class Meta:
        ref_name = "AiVoiceSettingsUpdate"

    def validate_language(self, value: str) -> str:
        if value and not LANGUAGE.fullmatch(value):
            raise serializers.ValidationError("must be an ISO 639-1 code in lower case, or empty")
        return value


class SegmentSerializer(serializers.Serializer):
    speaker = serializers.CharField(
        allow_null=True, help_text="The speaker or channel label the provider gave (A, B, 0, 1…), or null."
    )
    start = serializers.FloatField(help_text="Seconds from the start of the recording.")
    end = serializers.FloatField(help_text="Seconds from the start of the recording.")
    text = serializers.CharField()

    class Meta:
        ref_name = "AiVoiceTranscriptSegment"


JOB_FIELDS = [
    "id",
    "call_id",
    "status",
    "error_code",
    "automatic",
    "sandbox",
    "requested_by_id",
    "created_at",
    "updated_at",
    "completed_at",
]
JOB_HELP = {
    "status": {"help_text": "pending, processing, completed or failed."},
    "error_code": {"help_text": "Why it failed (empty otherwise): " + ", ".join(ErrorCode.values) + "."},
    "automatic": {"help_text": "Requested by the practice's automatic setting (requestedById is null)."},
    "sandbox": {"help_text": "Made up by the sandbox transport (development), not by a provider."},
}


class TranscriptSerializer(serializers.ModelSerializer):
    call_id = serializers.UUIDField(read_only=True)
    recording_id = serializers.UUIDField(read_only=True, help_text="The recording or voicemail transcribed.")
    requested_by_id = serializers.UUIDField(read_only=True, allow_null=True)
    status = serializers.ChoiceField(choices=JobStatus.choices, read_only=True)
    segments = serializers.SerializerMethodField(help_text="The text by time; [] until completed.")

    class Meta:
        model = Transcript
        ref_name = "AiVoiceTranscript"
        fields = [*JOB_FIELDS, "recording_id", "language", "duration_seconds", "segments"]
        extra_kwargs = {
            **JOB_HELP,
            "language": {"help_text": "ISO 639-1 when known (the provider's detection or the practice's hint)."},
            "duration_seconds": {"help_text": "The audio's length as the provider measured it."},
        }

    @extend_schema_field(SegmentSerializer(many=True))
    def get_segments(self, transcript: Transcript) -> list[dict]:
        return selectors.transcript_segments(transcript)


class SummarySerializer(serializers.ModelSerializer):
    call_id = serializers.UUIDField(read_only=True)
    transcript_id = serializers.UUIDField(read_only=True)
    requested_by_id = serializers.UUIDField(read_only=True, allow_null=True)
    status = serializers.ChoiceField(choices=JobStatus.choices, read_only=True)
    summary = serializers.SerializerMethodField(help_text="A few sentences; null until completed.")
    action_items = serializers.SerializerMethodField(help_text="Follow-ups for the practice; [] until completed.")

    class Meta:
        model = Summary
        ref_name = "AiVoiceSummary"
        fields = [*JOB_FIELDS, "transcript_id", "summary", "action_items"]
        extra_kwargs = JOB_HELP

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_summary(self, summary: Summary) -> str | None:
        return selectors.summary_content(summary)[0]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_action_items(self, summary: Summary) -> list[str]:
        return selectors.summary_content(summary)[1]
