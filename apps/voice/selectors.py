"""Reads of AI Voice: a call's transcript and summary, and their decrypted content (for the wire only)."""

import json

from apps.core import crypto
from apps.voice.models import JobStatus, Summary, Transcript


def transcript_of(*, organization, call_id) -> Transcript | None:
    return Transcript.objects.for_org(organization).select_related("recording").filter(call_id=call_id).first()


def summary_of(*, organization, call_id) -> Summary | None:
    return Summary.objects.for_org(organization).select_related("transcript__recording").filter(call_id=call_id).first()


def _content(job) -> dict:
    """The job's decrypted result, once per instance (the wire reads it field by field)."""
    if job.status != JobStatus.COMPLETED or not job.content_encrypted:
        return {}
    cached = getattr(job, "_decrypted", None)
    if cached is None:
        cached = job._decrypted = json.loads(crypto.decrypt(job.content_encrypted))
    return cached


def transcript_segments(transcript: Transcript) -> list[dict]:
    """[{speaker, start, end, text}] of a completed transcript; [] otherwise."""
    return _content(transcript).get("segments", [])


def summary_content(summary: Summary) -> tuple[str | None, list[str]]:
    """(summary text, action items) of a completed summary; (None, []) otherwise."""
    content = _content(summary)
    return content.get("summary"), content.get("actionItems", [])
