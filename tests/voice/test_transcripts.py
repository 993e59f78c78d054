"""A call's transcript through HTTP, processed by its Celery task against a real local transcription server: off
by default (409), the request and the job (202 pending, the same job while open, 200 once completed), what the
provider is sent, failures with a bounded code and a retry, recordings not ready, the shared AI assist bucket (429),
roles (dialer:use, dialer:recording for recorded calls), OAuth scopes (dialer) and tenancy (404)."""

import json
import uuid

import pytest
from django.core.files.storage import storages
from django_redis import get_redis_connection

from apps.dialer.public import Recording
from apps.voice import tasks
from apps.voice.models import Transcript
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.voice.conftest import (
    AUDIO,
    SEGMENTS,
    SUMMARY,
    TRANSCRIBE_KEY,
    TRANSCRIBE_MODEL,
    TRANSCRIPT,
    enable,
)

pytestmark = pytest.mark.django_db

WORDS = [segment["text"].strip() for segment in SEGMENTS]


def post(client, path):
    return client.generic("POST", path)


def request_transcript(client, call, capture) -> dict:
    """POST and check it queued exactly one task after the commit (not run: the test runs it)."""
    with capture(execute=False) as callbacks:
        response = post(client, TRANSCRIPT.format(call.id))
    assert response.status_code == 202, response.content
    assert len(callbacks) == 1
    return response.json()


def transcripts(owner):
    return Transcript.objects.for_org(owner.organization)


# --- off by default ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [TRANSCRIPT, SUMMARY])
def test_off_by_default_requests_are_409_ai_voice_disabled(owner, api, recorded_call, providers, path):
    assert_error(post(api, path.format(recorded_call.id)), 409, "AI_VOICE_DISABLED")
    assert not transcripts(owner).exists()
    assert providers.transcription.requests == [] and providers.chat.requests == []


def test_switched_on_then_the_provider_removed_is_409_not_configured(owner, api, recorded_call, providers, settings):
    enable(api)
    settings.SVC_AI_VOICE_TRANSCRIBE_KEY = ""
    body = assert_error(post(api, TRANSCRIPT.format(recorded_call.id)), 409, "AI_VOICE_NOT_CONFIGURED")
    assert body["details"] == {"service": "transcription"}
    assert not transcripts(owner).exists()


def test_get_before_any_request_is_404(api, recorded_call):
    assert_error(api.get(TRANSCRIPT.format(recorded_call.id)), 404, "NOT_FOUND")


# --- the request and the job -----------------------------------------------------------------------------------------


def test_request_then_the_task_transcribes_with_the_provider(owner, api, recorded_call, providers, capture):
    enable(api, language="it")
    pending = request_transcript(api, recorded_call, capture)
    recording = Recording.objects.for_org(owner.organization).get(call=recorded_call)
    assert pending["status"] == "pending" and pending["segments"] == []
    assert pending["callId"] == str(recorded_call.id) and pending["recordingId"] == str(recording.id)
    assert pending["requestedById"] == str(owner.user.id) and pending["automatic"] is False
    assert (pending["errorCode"], pending["language"], pending["completedAt"]) == ("", "", None)
    assert providers.transcription.requests == []  # nothing before the worker

    assert tasks.transcribe(pending["id"]) == "completed"
    (asked,) = providers.transcription.requests
    assert asked["authorization"] == f"Bearer {TRANSCRIBE_KEY}"
    assert asked["content_type"] == "multipart/form-data"
    assert asked["form"] == {"model": TRANSCRIBE_MODEL, "response_format": "verbose_json", "language": "it"}
    assert (asked["filename"], asked["file_type"], asked["audio"]) == ("recording.mp3", "audio/mpeg", AUDIO)

    response = api.get(TRANSCRIPT.format(recorded_call.id))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == pending["id"] and body["status"] == "completed"
    assert body["segments"] == [
        {"speaker": "A", "start": 0.0, "end": 3.5, "text": WORDS[0]},
        {"speaker": "B", "start": 3.5, "end": 9.25, "text": WORDS[1]},
        {"speaker": "A", "start": 9.25, "end": 12.0, "text": WORDS[2]},
    ]
    assert (body["language"], body["durationSeconds"], body["errorCode"], body["sandbox"]) == ("it", 12.0, "", False)
    assert body["completedAt"].endswith("Z")
    # Encrypted at rest: the words are nowhere in the row.
    row = transcripts(owner).values().get()
    assert not any(word in json.dumps(row, default=str) for word in ("Buongiorno", "pulizia", "richiamiamo"))
    # The task is idempotent: run again, it does nothing.
    assert tasks.transcribe(pending["id"]) == "skipped"
    assert len(providers.transcription.requests) == 1


def test_a_second_request_while_pending_answers_the_same_job_and_takes_no_token(
    owner, api, recorded_call, providers, settings, capture
):
    settings.SVC_AI_ASSIST_BUCKET = (1, 6 / 60)
    enable(api)
    first = request_transcript(api, recorded_call, capture)
    with capture(execute=False) as callbacks:
        again = post(api, TRANSCRIPT.format(recorded_call.id))
    assert again.status_code == 202 and again.json()["id"] == first["id"] and callbacks == []
    assert transcripts(owner).count() == 1
    tasks.transcribe(first["id"])
    done = post(api, TRANSCRIPT.format(recorded_call.id))  # completed: answers itself, no new work
    assert done.status_code == 200 and done.json()["id"] == first["id"] and done.json()["status"] == "completed"
    assert len(providers.transcription.requests) == 1


def test_a_voicemail_is_transcribed_too(owner, api, make_call, providers, capture):
    voicemail = make_call(voicemail=True)
    enable(api)
    job = request_transcript(api, voicemail, capture)
    assert tasks.transcribe(job["id"]) == "completed"
    assert api.get(TRANSCRIPT.format(voicemail.id)).json()["segments"][0]["text"] == WORDS[0]


def test_an_answer_without_segments_is_one_segment_and_languages_are_iso_codes(
    owner, api, recorded_call, providers, capture
):
    providers.transcription.answer = {"text": " Pronto? ", "language": "it", "duration": 2.5}
    enable(api)
    job = request_transcript(api, recorded_call, capture)
    tasks.transcribe(job["id"])
    body = api.get(TRANSCRIPT.format(recorded_call.id)).json()
    assert body["segments"] == [{"speaker": None, "start": 0.0, "end": 2.5, "text": "Pronto?"}]
    assert body["language"] == "it" and "language" not in providers.transcription.requests[0]["form"]


def test_a_silent_recording_completes_with_no_segments(owner, api, recorded_call, providers, capture):
    providers.transcription.answer = {"text": "", "language": "english", "duration": 4.0, "segments": []}
    enable(api)
    job = request_transcript(api, recorded_call, capture)
    assert tasks.transcribe(job["id"]) == "completed"
    body = api.get(TRANSCRIPT.format(recorded_call.id)).json()
    assert (body["status"], body["segments"], body["language"]) == ("completed", [], "en")


# --- failures ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("break_it", "code"),
    [
        (lambda p, s: setattr(p.transcription, "status", 500), "provider_unavailable"),
        (lambda p, s: setattr(p.transcription, "status", 429), "provider_unavailable"),
        (lambda p, s: setattr(p.transcription, "status", 400), "provider_refused"),
        (lambda p, s: setattr(s, "SVC_AI_VOICE_TRANSCRIBE_KEY", "sk-wrong"), "provider_refused"),
        (lambda p, s: setattr(p.transcription, "raw_answer", b"<html>oops</html>"), "unreadable_answer"),
        (lambda p, s: setattr(p.transcription, "answer", {"segments": [{"text": "x"}]}), "unreadable_answer"),
        (lambda p, s: setattr(p.transcription, "answer", {"segments": "nope"}), "unreadable_answer"),
    ],
)
def test_a_failing_provider_fails_the_job_with_a_code_and_a_new_request_retries(
    owner, api, recorded_call, providers, settings, break_it, code, capture
):
    enable(api)
    job = request_transcript(api, recorded_call, capture)
    break_it(providers, settings)
    assert tasks.transcribe(job["id"]) == "failed"
    failed = api.get(TRANSCRIPT.format(recorded_call.id)).json()
    assert (failed["status"], failed["errorCode"], failed["segments"]) == ("failed", code, [])

    # Mended, the same POST asks again on the same job.
    providers.transcription.status, providers.transcription.raw_answer = 200, None
    providers.transcription.answer["segments"] = SEGMENTS
    settings.SVC_AI_VOICE_TRANSCRIBE_KEY = TRANSCRIBE_KEY
    providers.transcription.answer.setdefault("language", "italian")
    retried = request_transcript(api, recorded_call, capture)
    assert (retried["id"], retried["status"], retried["errorCode"]) == (job["id"], "pending", "")
    assert tasks.transcribe(job["id"]) == "completed"
    assert api.get(TRANSCRIPT.format(recorded_call.id)).json()["status"] == "completed"


def test_an_unreachable_provider_fails_with_provider_unavailable(
    owner, api, recorded_call, providers, settings, capture
):
    from tests.live import free_port

    enable(api)
    job = request_transcript(api, recorded_call, capture)
    settings.SVC_AI_VOICE_TRANSCRIBE_URL = f"http://127.0.0.1:{free_port()}/v1"
    assert tasks.transcribe(job["id"]) == "failed"
    assert transcripts(owner).get().error_code == "provider_unavailable"


def test_a_recording_over_the_size_cap_fails_without_asking_the_provider(
    owner, api, recorded_call, providers, settings, capture
):
    enable(api)
    job = request_transcript(api, recorded_call, capture)
    settings.SVC_AI_VOICE_MAX_AUDIO_BYTES = len(AUDIO) - 1
    assert tasks.transcribe(job["id"]) == "failed"
    assert transcripts(owner).get().error_code == "audio_too_large"
    assert providers.transcription.requests == []


def test_a_recording_missing_from_storage_fails_recording_unavailable(owner, api, recorded_call, providers, capture):
    enable(api)
    job = request_transcript(api, recorded_call, capture)
    storages["dialer-test"].delete(Recording.objects.for_org(owner.organization).get().storage_name)
    assert tasks.transcribe(job["id"]) == "failed"
    assert transcripts(owner).get().error_code == "recording_unavailable"


def test_switched_off_before_the_worker_ran_fails_ai_voice_disabled(owner, api, recorded_call, providers, capture):
    from tests.voice.conftest import SETTINGS, patch_json

    enable(api)
    job = request_transcript(api, recorded_call, capture)
    patch_json(api, SETTINGS, {"enabled": False})
    assert tasks.transcribe(job["id"]) == "failed"
    assert transcripts(owner).get().error_code == "ai_voice_disabled"
    assert providers.transcription.requests == []


# --- recordings not ready ------------------------------------------------------------------------------------------


def test_a_call_without_a_recording_is_409_recording_not_ready(owner, api, make_call, providers):
    call = make_call(recorded=False)
    enable(api)
    body = assert_error(post(api, TRANSCRIPT.format(call.id)), 409, "RECORDING_NOT_READY")
    assert body["details"] == {"recording": "none"}
    assert not transcripts(owner).exists()


def test_a_recording_still_being_copied_or_lost_is_409(owner, api, make_call, telnyx, providers):
    telnyx.fail[("GET", "/files/")] = (503, {"errors": [{"code": "unavailable"}]})
    call = make_call()  # the copy fails (the eager retries run at once): unavailable
    recording = Recording.objects.for_org(owner.organization).get(call=call)
    assert recording.state == "unavailable"
    Recording.objects.for_org(owner.organization).filter(id=recording.id).update(state="pending")  # mid-copy
    enable(api)
    body = assert_error(post(api, TRANSCRIPT.format(call.id)), 409, "RECORDING_NOT_READY")
    assert body["details"] == {"recording": "pending"}
    Recording.objects.for_org(owner.organization).filter(id=recording.id).update(state="unavailable")
    body = assert_error(post(api, TRANSCRIPT.format(call.id)), 409, "RECORDING_NOT_READY")
    assert body["details"] == {"recording": "unavailable"}
    assert not transcripts(owner).exists()


# --- the AI assist bucket ------------------------------------------------------------------------------------------


def test_new_work_draws_from_the_practices_ai_assist_bucket(owner, api, outsider, make_call, providers, settings):
    settings.SVC_AI_ASSIST_BUCKET = (1, 6 / 60)
    first, second = make_call(), make_call()
    enable(api)
    assert post(api, TRANSCRIPT.format(first.id)).status_code == 202
    refused = post(api, TRANSCRIPT.format(second.id))
    body = assert_error(refused, 429, "RATE_LIMITED")
    assert 1 <= int(refused["Retry-After"]) <= 10 and body["details"]["retryAfter"] == int(refused["Retry-After"])
    assert list(transcripts(owner).values_list("call_id", flat=True)) == [first.id]
    # The very bucket of AI assist (apps.assist.limits: "ai-assist", per organization).
    assert get_redis_connection("default").exists(f"svc:tb:ai-assist:org:{owner.organization.id}")


def test_refusals_before_the_bucket_take_no_token(owner, api, outsider, make_call, providers, settings):
    settings.SVC_AI_ASSIST_BUCKET = (1, 6 / 60)
    silent, recorded = make_call(recorded=False), make_call()
    enable(api)
    assert_error(post(outsider.api_client(), TRANSCRIPT.format(recorded.id)), 404, "NOT_FOUND")
    assert_error(post(api, TRANSCRIPT.format(silent.id)), 409, "RECORDING_NOT_READY")
    assert_error(post(api, SUMMARY.format(recorded.id)), 409, "TRANSCRIPT_NOT_READY")
    assert post(api, TRANSCRIPT.format(recorded.id)).status_code == 202  # the one token was still there


# --- roles, scopes, tenancy ----------------------------------------------------------------------------------------

ROUTES = [("GET", TRANSCRIPT), ("POST", TRANSCRIPT), ("GET", SUMMARY), ("POST", SUMMARY)]


@pytest.mark.parametrize("role", ["analyst", "dentist", "hygienist", "nurse"])
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_roles_without_dialer_use_are_403(owner, api, member_factory, recorded_call, providers, role, method, path):
    enable(api)
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert_error(client.generic(method, path.format(recorded_call.id)), 403, "PERMISSION_DENIED")
    assert not transcripts(owner).exists()


@pytest.mark.parametrize("role", ["front_desk", "telesales"])
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_recorded_calls_words_need_dialer_recording(
    owner, api, member_factory, recorded_call, providers, role, method, path
):
    enable(api)
    client = member_factory(role=role, organization=owner.organization).api_client()
    body = assert_error(client.generic(method, path.format(recorded_call.id)), 403, "PERMISSION_DENIED")
    assert body["details"] == {"permission": "dialer:recording"}
    assert not transcripts(owner).exists()


def test_front_desk_may_have_a_voicemail_transcribed_and_read_it(
    owner, api, member_factory, make_call, providers, capture
):
    voicemail = make_call(voicemail=True)
    enable(api)
    desk = member_factory(role="front_desk", organization=owner.organization)
    job = request_transcript(desk.api_client(), voicemail, capture)
    assert job["requestedById"] == str(desk.user.id)
    tasks.transcribe(job["id"])
    assert desk.api_client().get(TRANSCRIPT.format(voicemail.id)).json()["status"] == "completed"


def test_a_manager_may_transcribe_a_recorded_call(owner, api, member_factory, recorded_call, providers):
    enable(api)
    manager = member_factory(role="manager", organization=owner.organization).api_client()
    assert post(manager, TRANSCRIPT.format(recorded_call.id)).status_code == 202


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_oauth_tokens_need_the_dialer_scope(owner, api, recorded_call, providers, method, path):
    enable(api)
    raw, _ = mint(owner, "read write settings.write")
    assert_error(bearer(raw).generic(method, path.format(recorded_call.id)), 403, "INSUFFICIENT_SCOPE")
    assert not transcripts(owner).exists()


def test_an_oauth_token_with_the_dialer_scope_may_use_them(owner, api, recorded_call, providers):
    enable(api)
    raw, _ = mint(owner, "dialer")
    assert post(bearer(raw), TRANSCRIPT.format(recorded_call.id)).status_code == 202
    assert bearer(raw).get(TRANSCRIPT.format(recorded_call.id)).status_code == 200


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_another_practices_or_an_unknown_call_is_404(
    owner, api, outsider, recorded_call, providers, method, path, capture
):
    enable(api, autoSummarize=False)
    enable(outsider.api_client())
    job = request_transcript(api, recorded_call, capture)
    tasks.transcribe(job["id"])
    stranger = outsider.api_client()
    assert_error(stranger.generic(method, path.format(recorded_call.id)), 404, "NOT_FOUND")
    assert_error(stranger.generic(method, path.format(uuid.uuid4())), 404, "NOT_FOUND")
    assert_error(stranger.generic(method, path.format("not-a-uuid")), 400, "VALIDATION_ERROR")
    assert list(transcripts(owner).values_list("id", flat=True)) == [uuid.UUID(job["id"])]
    assert not Transcript.objects.for_org(outsider.organization).exists()
    assert len(providers.transcription.requests) == 1


@pytest.mark.parametrize("path", [TRANSCRIPT, SUMMARY])
def test_other_methods_are_405(api, recorded_call, path):
    assert_error(api.delete(path.format(recorded_call.id)), 405, "METHOD_NOT_ALLOWED")
    assert_error(api.patch(path.format(recorded_call.id)), 405, "METHOD_NOT_ALLOWED")
