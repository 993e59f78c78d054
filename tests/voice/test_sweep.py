"""The AI Voice sweep (beat, every minute): automatic transcripts of recordings the dialer stored in the last hour
and automatic summaries of completed transcripts, for practices that asked for them, drawing from the AI assist
bucket; lost jobs queued again, and given up after three attempts."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_redis import get_redis_connection

from apps.dialer.public import Recording
from apps.voice import services, tasks
from apps.voice.models import Summary, Transcript
from tests.voice.conftest import SETTINGS, TRANSCRIPT, enable, patch_json

pytestmark = pytest.mark.django_db


def transcripts(owner):
    return Transcript.objects.for_org(owner.organization)


def summaries(owner):
    return Summary.objects.for_org(owner.organization)


def test_stored_recordings_are_transcribed_and_summarized_automatically(owner, api, make_call, providers):
    enable(api, autoTranscribe=True, autoSummarize=True)
    call, voicemail = make_call(), make_call(voicemail=True)
    assert tasks.sweep() == {"requeued": 0, "transcripts": 2, "summaries": 0}
    rows = list(transcripts(owner).order_by("created_at"))
    assert {row.call_id for row in rows} == {call.id, voicemail.id}
    assert all(row.automatic and row.requested_by_id is None and row.status == "pending" for row in rows)
    assert tasks.sweep() == {"requeued": 0, "transcripts": 0, "summaries": 0}  # nothing twice

    # A transcript that completes asks for its summary at once (autoSummarize).
    assert tasks.transcribe(str(rows[0].id)) == "completed"
    summary = summaries(owner).get()
    assert (summary.call_id, summary.status, summary.automatic) == (rows[0].call_id, "pending", True)
    assert tasks.summarize(str(summary.id)) == "completed"
    body = api.get(f"/calls/{rows[0].call_id}/summary").json()
    assert body["automatic"] is True and body["requestedById"] is None and body["status"] == "completed"


def test_the_sweep_summarizes_completed_transcripts_it_did_not_see_complete(
    owner, api, recorded_call, providers, capture
):
    enable(api)
    with capture(execute=False):
        job = api.generic("POST", TRANSCRIPT.format(recorded_call.id)).json()
    tasks.transcribe(job["id"])
    assert not summaries(owner).exists()
    enable(api, autoSummarize=True)
    assert tasks.sweep()["summaries"] == 1
    assert summaries(owner).get().automatic is True


def test_practices_that_did_not_ask_get_nothing(owner, api, outsider, make_call, providers):
    make_call()
    assert tasks.sweep()["transcripts"] == 0  # AI Voice off
    enable(api)
    assert tasks.sweep()["transcripts"] == 0  # on, but not automatic
    enable(api, autoTranscribe=True)
    patch_json(api, SETTINGS, {"enabled": False})
    assert tasks.sweep()["transcripts"] == 0  # automatic, but switched off
    enable(outsider.api_client(), autoTranscribe=True)  # another practice's switch changes nothing here
    assert tasks.sweep()["transcripts"] == 0
    assert not transcripts(owner).exists()


def test_recordings_stored_more_than_an_hour_ago_are_left(owner, api, make_call, providers):
    call = make_call()
    Recording.objects.for_org(owner.organization).filter(call=call).update(
        updated_at=timezone.now() - timedelta(minutes=61)
    )
    enable(api, autoTranscribe=True)
    assert tasks.sweep()["transcripts"] == 0


def test_an_empty_bucket_waits_for_the_next_run(owner, api, make_call, providers, settings):
    settings.SVC_AI_ASSIST_BUCKET = (1, 6 / 60)
    first, second = make_call(), make_call()
    enable(api, autoTranscribe=True)
    assert tasks.sweep()["transcripts"] == 1
    assert transcripts(owner).count() == 1
    get_redis_connection("default").flushdb()  # a minute later: the bucket has a token again
    assert tasks.sweep()["transcripts"] == 1
    assert set(transcripts(owner).values_list("call_id", flat=True)) == {first.id, second.id}


def test_a_lost_pending_job_is_queued_again_and_worked(owner, api, recorded_call, providers, capture):
    enable(api)
    with capture(execute=False):  # the queue message is lost
        job = api.generic("POST", TRANSCRIPT.format(recorded_call.id)).json()
    assert services.requeue_lost() == 0  # not yet: it may still be on its way
    transcripts(owner).update(updated_at=timezone.now() - timedelta(minutes=3))
    assert services.requeue_lost() == 1  # the eager test broker runs it at once
    assert transcripts(owner).get(id=job["id"]).status == "completed"


def test_a_job_whose_worker_died_is_taken_again_then_given_up(owner, api, recorded_call, providers, capture):
    enable(api)
    with capture(execute=False):
        job = api.generic("POST", TRANSCRIPT.format(recorded_call.id)).json()
    live_lease = timezone.now() + timedelta(minutes=5)
    transcripts(owner).update(status="processing", claimed_until=live_lease, attempts=1)
    assert tasks.transcribe(job["id"]) == "skipped"  # another worker holds it
    assert services.requeue_lost() == 0
    transcripts(owner).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert services.requeue_lost() == 1
    row = transcripts(owner).get()
    assert (row.status, row.attempts) == ("completed", 2)

    # Three workers died on it: given up.
    transcripts(owner).update(status="processing", claimed_until=timezone.now() - timedelta(seconds=1), attempts=3)
    assert tasks.transcribe(job["id"]) == "skipped"
    row = transcripts(owner).get()
    assert (row.status, row.error_code) == ("failed", "attempts_exhausted")


def test_the_sweep_is_on_the_beat_schedule(settings):
    assert settings.CELERY_BEAT_SCHEDULE["voice-sweep"] == {"task": "apps.voice.tasks.sweep", "schedule": 60.0}
