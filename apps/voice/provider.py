"""The AI Voice provider adapter: speech to text over HTTP, and the summary through the AI assist provider.

Transcription speaks the OpenAI-compatible audio API: POST {SVC_AI_VOICE_TRANSCRIBE_URL}/audio/transcriptions
(the URL is the API's base with its version, e.g. https://api.openai.com/v1, like SVC_AI_ASSIST_PROVIDER_URL),
multipart/form-data with `file` (the recording's bytes), `model` (SVC_AI_VOICE_TRANSCRIBE_MODEL),
`response_format=verbose_json` and `language` when the practice set one; `Authorization: Bearer
{SVC_AI_VOICE_TRANSCRIBE_KEY}`. The answer's `segments` (start, end, text, and `speaker` or `channel` when the model
gives one), `language` and `duration` are kept; an answer with `text` and no segments is one segment.

The summary asks the AI assist provider (apps.assist.public: its chat-completions adapter and settings) for a JSON
object {"summary", "actionItems"}.

SVC_AI_VOICE_TRANSPORT: "provider" (the default) is off until URL, key and model are all set; "sandbox" (make run)
calls nothing and makes up a deterministic transcript from the recording's size and duration, and a summary from
the transcript's length, both marked sandbox.

httpx with a 5 s connect timeout and SVC_AI_VOICE_TIMEOUT for the whole answer, no redirects, the answer read up to
MAX_RESPONSE_BYTES. Failures are TranscriptionFailed with a bounded code; logs carry the HTTP status and the error's
class, never the audio, the transcript or the summary."""

import json
import logging
import math
import re
from dataclasses import dataclass

import httpx
from django.conf import settings

from apps.assist import public as assist
from apps.voice.models import ErrorCode

logger = logging.getLogger("apps.voice")

SANDBOX = "sandbox"
MAX_RESPONSE_BYTES = 5 * 1024 * 1024
MAX_SEGMENTS = 2000
MAX_SEGMENT_CHARS = 2000
MAX_SPEAKER_CHARS = 32
USER_AGENT = "PracticeCRM-Voice/1.0"
SANDBOX_BYTES_PER_SECOND = 16000  # 128 kbit/s MP3: a duration for recordings that came without one
SANDBOX_SEGMENT_SECONDS = 15

# verbose_json names the language in English ("italian"); the usual ones are kept as ISO 639-1.
LANGUAGE_NAMES = {
    "english": "en", "italian": "it", "spanish": "es", "french": "fr", "german": "de", "portuguese": "pt",
    "dutch": "nl", "polish": "pl", "romanian": "ro", "greek": "el", "swedish": "sv", "danish": "da",
    "norwegian": "no", "finnish": "fi", "czech": "cs", "hungarian": "hu", "turkish": "tr", "russian": "ru",
    "ukrainian": "uk", "arabic": "ar", "chinese": "zh", "japanese": "ja", "korean": "ko", "hindi": "hi",
}  # fmt: skip


class TranscriptionFailed(Exception):
    def __init__(self, code: str):
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Segment:
    speaker: str | None
    start: float
    end: float
    text: str

    def as_dict(self) -> dict:
        return {"speaker": self.speaker, "start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True)
class TranscriptResult:
    language: str
    duration: float | None
    segments: list[Segment]
    sandbox: bool = False


@dataclass(frozen=True)
class SummaryResult:
    summary: str
    action_items: list[str]
    sandbox: bool = False


@dataclass(frozen=True)
class TranscriptionConfig:
    url: str
    key: str
    model: str
    timeout: float


def sandboxed() -> bool:
    return settings.SVC_AI_VOICE_TRANSPORT == SANDBOX


def transcription_configuration() -> TranscriptionConfig | None:
    url, key, model = (
        settings.SVC_AI_VOICE_TRANSCRIBE_URL.rstrip("/"),
        settings.SVC_AI_VOICE_TRANSCRIBE_KEY,
        settings.SVC_AI_VOICE_TRANSCRIBE_MODEL,
    )
    if not (url and key and model):
        return None
    return TranscriptionConfig(url=url, key=key, model=model, timeout=float(settings.SVC_AI_VOICE_TIMEOUT))


def transcription_available() -> bool:
    return sandboxed() or transcription_configuration() is not None


def summary_available() -> bool:
    return sandboxed() or assist.configuration() is not None


# --- transcription ---------------------------------------------------------------------------------------------------


def transcribe(audio: bytes, *, content_type: str, language: str, duration_hint: int | None) -> TranscriptResult:
    """The transcript of this audio. Raises TranscriptionFailed."""
    if sandboxed():
        return _sandbox_transcript(len(audio), duration_hint, language)
    config = transcription_configuration()
    if config is None:
        raise TranscriptionFailed(ErrorCode.NOT_CONFIGURED)
    data = {"model": config.model, "response_format": "verbose_json"}
    if language:
        data["language"] = language
    extension = {"audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/wav": "wav", "audio/x-wav": "wav"}
    filename = f"recording.{extension.get(content_type, 'mp3')}"
    headers = {"Authorization": f"Bearer {config.key}", "User-Agent": USER_AGENT, "Accept": "application/json"}
    timeout = httpx.Timeout(config.timeout, connect=min(5.0, config.timeout))
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False) as client,
            client.stream(
                "POST",
                f"{config.url}/audio/transcriptions",
                data=data,
                files={"file": (filename, audio, content_type or "application/octet-stream")},
                headers=headers,
            ) as response,
        ):
            raw = bytearray()
            for chunk in response.iter_bytes():
                raw.extend(chunk)
                if len(raw) > MAX_RESPONSE_BYTES:
                    logger.warning("AI Voice transcription: answer over %d bytes", MAX_RESPONSE_BYTES)
                    raise TranscriptionFailed(ErrorCode.UNREADABLE_ANSWER)
            status = response.status_code
    except httpx.HTTPError as exc:
        logger.warning("AI Voice transcription: request failed (%s)", type(exc).__name__)
        raise TranscriptionFailed(ErrorCode.PROVIDER_UNAVAILABLE) from None
    if status != 200:
        logger.warning("AI Voice transcription: provider answered %d", status)
        retryable = status in (408, 409, 425, 429) or status >= 500
        raise TranscriptionFailed(ErrorCode.PROVIDER_UNAVAILABLE if retryable else ErrorCode.PROVIDER_REFUSED)
    try:
        return _parse_transcript(json.loads(bytes(raw)))
    except (ValueError, TypeError, KeyError):
        logger.warning("AI Voice transcription: unreadable answer (status %d)", status)
        raise TranscriptionFailed(ErrorCode.UNREADABLE_ANSWER) from None


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError("not a time")
    return round(float(value), 3)


def _language(value) -> str:
    if not isinstance(value, str):
        return ""
    value = value.strip().lower()
    if re.fullmatch(r"[a-z]{2}", value):
        return value
    return LANGUAGE_NAMES.get(value, re.sub(r"[^a-z-]", "", value)[:16])


def _parse_transcript(answer) -> TranscriptResult:
    if not isinstance(answer, dict):
        raise ValueError("not an object")
    duration = answer.get("duration")
    duration = _number(duration) if duration is not None else None
    raw_segments = answer.get("segments")
    segments = []
    if isinstance(raw_segments, list) and raw_segments:
        for item in raw_segments[:MAX_SEGMENTS]:
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                raise ValueError("not a segment")
            text = item["text"].strip()[:MAX_SEGMENT_CHARS]
            speaker = item.get("speaker", item.get("channel"))
            speaker = str(speaker)[:MAX_SPEAKER_CHARS] if isinstance(speaker, str | int) and speaker != "" else None
            start, end = _number(item.get("start")), _number(item.get("end"))
            if text:
                segments.append(Segment(speaker=speaker, start=start, end=max(start, end), text=text))
    elif isinstance(answer.get("text"), str):
        text = answer["text"].strip()
        if text:
            segments = [Segment(speaker=None, start=0.0, end=duration or 0.0, text=text[: MAX_SEGMENT_CHARS * 4])]
    elif raw_segments != []:
        raise ValueError("no transcript")
    return TranscriptResult(language=_language(answer.get("language")), duration=duration, segments=segments)


def _sandbox_transcript(size: int, duration_hint: int | None, language: str) -> TranscriptResult:
    duration = duration_hint or max(1, round(size / SANDBOX_BYTES_PER_SECOND))
    count = min(20, max(1, math.ceil(duration / SANDBOX_SEGMENT_SECONDS)))
    segments = []
    for index in range(count):
        start = index * SANDBOX_SEGMENT_SECONDS
        end = min(duration, start + SANDBOX_SEGMENT_SECONDS)
        segments.append(
            Segment(
                speaker="A" if index % 2 == 0 else "B",
                start=float(start),
                end=float(end),
                text=f"[sandbox] Segment {index + 1} of {count}: no speech was transcribed; this stands in for "
                f"{start}-{end} s of a {duration}-second recording of {size} bytes.",
            )
        )
    return TranscriptResult(language=language or "en", duration=float(duration), segments=segments, sandbox=True)


# --- summary ----------------------------------------------------------------------------------------------------------

MAX_PROMPT_CHARS = 24000
MAX_SUMMARY_CHARS = 2000
MAX_ACTION_ITEMS = 10
MAX_ACTION_ITEM_CHARS = 300
SUMMARY_SYSTEM = (
    "You help the staff of a dental practice. Below is the transcript of a phone call between the practice and a "
    "patient, or of a voicemail a caller left. Answer with one JSON object and nothing else: "
    '{"summary": "<at most three short sentences: why they called, what was said or agreed>", '
    '"actionItems": ["<a short follow-up the practice has to do>", ...]}, in the language of the call. State only '
    "what the transcript says; give no diagnosis or medical advice; an empty list when nothing is left to do."
)


def summarize(segments: list[dict]) -> SummaryResult:
    """A short summary and the action items of a transcript's segments. Raises TranscriptionFailed."""
    if not segments:
        raise TranscriptionFailed(ErrorCode.TRANSCRIPT_EMPTY)
    if sandboxed():
        words = sum(len(segment["text"].split()) for segment in segments)
        return SummaryResult(
            summary=f"[sandbox] A call of {len(segments)} transcript segments ({words} words); no summary was "
            "made by a provider.",
            action_items=["[sandbox] Review the call and follow up with the caller."],
            sandbox=True,
        )
    config = assist.configuration()
    if config is None:
        raise TranscriptionFailed(ErrorCode.NOT_CONFIGURED)
    lines, used = [], 0
    for segment in segments:
        line = f"Speaker {segment['speaker']}: {segment['text']}" if segment.get("speaker") else segment["text"]
        if used + len(line) > MAX_PROMPT_CHARS:
            lines.append("[…]")
            break
        lines.append(line)
        used += len(line) + 1
    messages = [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]
    try:
        text = assist.complete(config, messages, max_tokens=500, temperature=0.2)
    except assist.AssistUnavailable:
        raise TranscriptionFailed(ErrorCode.PROVIDER_UNAVAILABLE) from None
    return _parse_summary(text)


def _parse_summary(text: str) -> SummaryResult:
    """The model's JSON object; an answer that is not one is kept as the summary, with no action items."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        answer = json.loads(body)
        summary = answer["summary"]
        items = answer.get("actionItems", answer.get("action_items", []))
        if not isinstance(summary, str) or not isinstance(items, list):
            raise TypeError("unexpected shape")
    except (ValueError, TypeError, KeyError, AttributeError):
        return SummaryResult(summary=text.strip()[:MAX_SUMMARY_CHARS], action_items=[])
    action_items = [item.strip()[:MAX_ACTION_ITEM_CHARS] for item in items if isinstance(item, str) and item.strip()]
    return SummaryResult(summary=summary.strip()[:MAX_SUMMARY_CHARS], action_items=action_items[:MAX_ACTION_ITEMS])
