from apps.core.errors import ApiError


class AiVoiceDisabled(ApiError):
    """The practice has not switched AI Voice on (the default)."""

    status_code = 409
    code = "AI_VOICE_DISABLED"
    message = "AI Voice is off for this practice; switch it on under /settings/ai-voice."


class AiVoiceNotConfigured(ApiError):
    """The deployment has no provider for this part (transcription, or the AI assist provider for summaries)."""

    status_code = 409
    code = "AI_VOICE_NOT_CONFIGURED"
    message = "AI Voice has no provider configured on this service."

    def __init__(self, service: str):
        super().__init__(
            f"AI Voice has no {service} provider configured on this service.", details={"service": service}
        )


class RecordingNotReady(ApiError):
    status_code = 409
    code = "RECORDING_NOT_READY"
    message = "The call has no stored recording to transcribe."

    def __init__(self, recording_state: str):
        messages = {
            "none": "The call has no recording to transcribe.",
            "pending": "The recording is still being copied from the provider; try again shortly.",
            "unavailable": "The call's recording could not be copied and cannot be transcribed.",
        }
        super().__init__(messages.get(recording_state), details={"recording": recording_state})


class TranscriptNotReady(ApiError):
    status_code = 409
    code = "TRANSCRIPT_NOT_READY"
    message = "The call has no completed transcript to summarize; request one with POST /calls/{id}/transcript."

    def __init__(self, transcript_status: str):
        super().__init__(details={"transcript": transcript_status})
