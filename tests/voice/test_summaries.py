"""A call's summary through HTTP, made by its Celery task from the completed transcript through the AI assist
provider (a real local chat-completions server): what it is asked, the transcript it needs, failures, the
provider it needs, and a transcript requested again for a newer recording dropping the old summary."""

import json

import pytest

from apps.voice import tasks
from apps.voice.models import Summary
from tests.assist.conftest import MODEL as CHAT_MODEL
from tests.helpers import assert_error
from tests.voice.conftest import (
    PATIENT_NUMBER,
    SUMMARY,
    SUMMARY_ANSWER,
    TRANSCRIPT,
    enable,
)

pytestmark = pytest.mark.django_db


def post(client, path):
    return client.generic("POST", path)


def transcribed(api, call, capture) -> str:
    with capture(execute=False):
        job = post(api, TRANSCRIPT.format(call.id)).json()
    assert tasks.transcribe(job["id"]) == "completed"
    return job["id"]


def request_summary(api, call, capture) -> dict:
    with capture(execute=False) as callbacks:
        response = post(api, SUMMARY.format(call.id))
    assert response.status_code == 202, response.content
    assert len(callbacks) == 1
    return response.json()


def summaries(owner):
    return Summary.objects.for_org(owner.organization)


def test_summary_of_the_completed_transcript(owner, api, recorded_call, providers, patient, capture):
    enable(api)
    transcript_id = transcribed(api, recorded_call, capture)
    pending = request_summary(api, recorded_call, capture)
    assert (pending["status"], pending["summary"], pending["actionItems"]) == ("pending", None, [])
    assert pending["transcriptId"] == transcript_id and pending["callId"] == str(recorded_call.id)
    assert providers.chat.requests == []

    assert tasks.summarize(pending["id"]) == "completed"
    (asked,) = providers.chat.requests
    assert asked["model"] == CHAT_MODEL and asked["max_tokens"] == 500
    system, user = asked["messages"]
    assert system["role"] == "system" and "JSON object" in system["content"]
    assert user["content"] == (
        "Speaker A: Buongiorno, studio dentistico.\n"
        "Speaker B: Vorrei spostare la pulizia di martedì.\n"
        "Speaker A: Certo, la richiamiamo oggi."
    )
    for secret in (PATIENT_NUMBER, patient.first_name, patient.last_name, str(patient.id)):
        assert secret not in json.dumps(asked, ensure_ascii=False)

    body = api.get(SUMMARY.format(recorded_call.id)).json()
    assert body["id"] == pending["id"] and body["status"] == "completed" and body["sandbox"] is False
    assert (body["summary"], body["actionItems"]) == (SUMMARY_ANSWER["summary"], SUMMARY_ANSWER["actionItems"])
    assert "spostare" not in json.dumps(summaries(owner).values().get(), default=str)  # encrypted at rest
    # Completed: a POST answers it (200), no new work.
    again = post(api, SUMMARY.format(recorded_call.id))
    assert again.status_code == 200 and again.json()["id"] == pending["id"]
    assert tasks.summarize(pending["id"]) == "skipped" and len(providers.chat.requests) == 1


def test_a_second_request_while_pending_answers_the_same_job(owner, api, recorded_call, providers, capture):
    enable(api)
    transcribed(api, recorded_call, capture)
    first = request_summary(api, recorded_call, capture)
    again = post(api, SUMMARY.format(recorded_call.id))
    assert again.status_code == 202 and again.json()["id"] == first["id"]
    assert summaries(owner).count() == 1


def test_a_summary_needs_a_completed_transcript(owner, api, recorded_call, providers, capture):
    enable(api)
    body = assert_error(post(api, SUMMARY.format(recorded_call.id)), 409, "TRANSCRIPT_NOT_READY")
    assert body["details"] == {"transcript": "none"}
    with capture(execute=False):
        job = post(api, TRANSCRIPT.format(recorded_call.id)).json()
    body = assert_error(post(api, SUMMARY.format(recorded_call.id)), 409, "TRANSCRIPT_NOT_READY")
    assert body["details"] == {"transcript": "pending"}
    providers.transcription.status = 500
    tasks.transcribe(job["id"])
    body = assert_error(post(api, SUMMARY.format(recorded_call.id)), 409, "TRANSCRIPT_NOT_READY")
    assert body["details"] == {"transcript": "failed"}
    assert not summaries(owner).exists() and providers.chat.requests == []


def test_without_the_ai_assist_provider_summaries_are_409_not_configured(
    owner, api, recorded_call, providers, settings, capture
):
    enable(api)
    transcribed(api, recorded_call, capture)
    settings.SVC_AI_ASSIST_PROVIDER_MODEL = ""
    assert api.get("/settings/ai-voice").json()["summaryAvailable"] is False
    body = assert_error(post(api, SUMMARY.format(recorded_call.id)), 409, "AI_VOICE_NOT_CONFIGURED")
    assert body["details"] == {"service": "summary"}
    assert not summaries(owner).exists()


@pytest.mark.parametrize("status", [500, 429])
def test_a_failing_provider_fails_the_summary_and_a_new_request_retries(
    owner, api, recorded_call, providers, status, capture
):
    enable(api)
    transcribed(api, recorded_call, capture)
    job = request_summary(api, recorded_call, capture)
    providers.chat.status = status
    assert tasks.summarize(job["id"]) == "failed"
    failed = api.get(SUMMARY.format(recorded_call.id)).json()
    assert (failed["status"], failed["errorCode"], failed["summary"]) == ("failed", "provider_unavailable", None)
    providers.chat.status = 200
    retried = request_summary(api, recorded_call, capture)
    assert (retried["id"], retried["status"]) == (job["id"], "pending")
    assert tasks.summarize(job["id"]) == "completed"


def test_an_answer_that_is_not_json_is_kept_as_the_summary(owner, api, recorded_call, providers, capture):
    providers.chat.reply = "The patient wants to move Tuesday's cleaning."
    enable(api)
    transcribed(api, recorded_call, capture)
    job = request_summary(api, recorded_call, capture)
    tasks.summarize(job["id"])
    body = api.get(SUMMARY.format(recorded_call.id)).json()
    assert (body["summary"], body["actionItems"]) == (providers.chat.reply, [])


def test_a_fenced_json_answer_is_read_and_bounded(owner, api, recorded_call, providers, capture):
    answer = {"summary": "S" * 2500, "actionItems": ["call back", 5, "", *[f"item {n}" for n in range(12)]]}
    providers.chat.reply = "```json\n" + json.dumps(answer) + "\n```"
    enable(api)
    transcribed(api, recorded_call, capture)
    job = request_summary(api, recorded_call, capture)
    tasks.summarize(job["id"])
    body = api.get(SUMMARY.format(recorded_call.id)).json()
    assert body["summary"] == "S" * 2000
    assert body["actionItems"] == ["call back", *[f"item {n}" for n in range(9)]]


def test_a_transcript_without_words_fails_the_summary_without_asking(owner, api, recorded_call, providers, capture):
    providers.transcription.answer = {"text": "", "language": "it", "segments": []}
    enable(api)
    transcribed(api, recorded_call, capture)
    job = request_summary(api, recorded_call, capture)
    assert tasks.summarize(job["id"]) == "failed"
    assert summaries(owner).get().error_code == "transcript_empty" and providers.chat.requests == []


def test_a_newer_recording_is_transcribed_again_and_drops_the_old_summary(
    owner, api, recorded_call, providers, telnyx, deliver, capture
):
    from tests.dialer.conftest import AUDIO, telnyx_event

    enable(api)
    first = transcribed(api, recorded_call, capture)
    tasks.summarize(request_summary(api, recorded_call, capture)["id"])
    # The call gets a second recording (recording.saved of the same leg, a later file).
    telnyx.files["/files/later"] = AUDIO[::-1]
    payload = {
        "call_control_id": recorded_call.provider_call_control_id,
        "call_leg_id": recorded_call.provider_call_leg_id,
        "call_session_id": recorded_call.provider_call_session_id,
        "recording_id": "rec-later",
        "channels": "single",
        "recording_urls": {"mp3": telnyx.url("/files/later")},
    }
    deliver(telnyx_event("call.recording.saved", payload))
    with capture(execute=False):
        again = post(api, TRANSCRIPT.format(recorded_call.id))
    assert again.status_code == 202 and again.json()["id"] == first
    assert not summaries(owner).exists()
    tasks.transcribe(first)
    assert providers.transcription.requests[-1]["audio"] == AUDIO[::-1]
