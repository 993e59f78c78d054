"""What AI Voice keeps and where: a patient's erasure (DELETE /patients/{id}) takes their calls' transcripts and
summaries along in its transaction; no transcript or summary text reaches the events table or any log (failures
included, whose provider error messages quote the call); and the sandbox transport of `make run`."""

import json

import pytest

from apps.events.models import Event
from apps.voice import tasks
from apps.voice.models import Summary, Transcript
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.voice.conftest import AUDIO, SUMMARY, SUMMARY_ANSWER, TRANSCRIPT, enable

pytestmark = pytest.mark.django_db

SECRET_WORDS = ("Buongiorno", "spostare", "pulizia", "richiamiamo", "Richiamare", "nuovo orario")
OTHER_CALLER = "+393339999999"


def post(client, path):
    return client.generic("POST", path)


def transcribe(api, call, capture) -> str:
    with capture(execute=False):
        job = post(api, TRANSCRIPT.format(call.id)).json()
    assert tasks.transcribe(job["id"]) == "completed"
    return job["id"]


def summarize(api, call, capture) -> str:
    with capture(execute=False):
        job = post(api, SUMMARY.format(call.id)).json()
    assert tasks.summarize(job["id"]) == "completed"
    return job["id"]


def test_erasure_deletes_the_patients_transcripts_and_summaries(owner, api, make_call, patient, providers, capture):
    PatientFactory(organization=owner.organization, phone_mobile=OTHER_CALLER)
    enable(api)
    recorded, voicemail, others = make_call(), make_call(voicemail=True), make_call(caller=OTHER_CALLER)
    assert recorded.patient_id == voicemail.patient_id == patient.id and others.patient_id != patient.id
    for call in (recorded, voicemail, others):
        transcribe(api, call, capture)
        summarize(api, call, capture)

    with capture(execute=True):
        response = api.delete(f"/patients/{patient.id}")
    assert response.status_code == 200, response.content
    assert list(Transcript.objects.for_org(owner.organization).values_list("call_id", flat=True)) == [others.id]
    assert list(Summary.objects.for_org(owner.organization).values_list("call_id", flat=True)) == [others.id]
    assert_error(api.get(TRANSCRIPT.format(recorded.id)), 404, "NOT_FOUND")
    assert api.get(SUMMARY.format(others.id)).json()["status"] == "completed"


def test_a_job_whose_call_was_erased_while_it_ran_writes_nothing(
    owner, api, recorded_call, patient, providers, capture
):
    enable(api)
    with capture(execute=False):
        job = post(api, TRANSCRIPT.format(recorded_call.id)).json()
    with capture(execute=True):
        assert api.delete(f"/patients/{patient.id}").status_code == 200
    assert tasks.transcribe(job["id"]) == "skipped"
    assert not Transcript.objects.for_org(owner.organization).exists() and providers.transcription.requests == []


def test_no_transcript_or_summary_text_in_events_or_logs(owner, api, make_call, providers, logs, capture):
    enable(api, autoTranscribe=True, autoSummarize=True)
    call, failing = make_call(), make_call()
    tasks.sweep()
    first = Transcript.objects.for_org(owner.organization).get(call=call)
    assert tasks.transcribe(str(first.id)) == "completed"  # asks for its summary (autoSummarize)
    assert tasks.summarize(str(Summary.objects.for_org(owner.organization).get(call=call).id)) == "completed"
    # A failure whose provider error message quotes the call is logged by its status only.
    providers.transcription.status = 500
    second = Transcript.objects.for_org(owner.organization).get(call=failing)
    assert tasks.transcribe(str(second.id)) == "failed"
    # Read through the API too (a read must not log the text either).
    assert api.get(TRANSCRIPT.format(call.id)).json()["segments"][1]["text"].startswith("Vorrei spostare")
    assert api.get(SUMMARY.format(call.id)).json()["actionItems"] == SUMMARY_ANSWER["actionItems"]

    assert any("AI Voice transcript" in message for message in logs.messages)  # the capture works
    assert any("provider answered 500" in message for message in logs.messages)
    for message in logs.messages:
        assert not any(word in message for word in SECRET_WORDS), message
    events = json.dumps(list(Event.objects.for_org(owner.organization).values("type", "data")), ensure_ascii=False)
    assert not any(word in events for word in SECRET_WORDS)
    assert not Event.objects.for_org(owner.organization).filter(subject_type__in=["transcript", "summary"]).exists()


def test_the_sandbox_makes_up_a_deterministic_transcript_and_summary(owner, api, recorded_call, settings, capture):
    settings.SVC_AI_VOICE_TRANSPORT = "sandbox"  # and no provider at all
    assert settings.SVC_AI_VOICE_TRANSCRIBE_URL == "" and settings.SVC_AI_ASSIST_PROVIDER_URL == ""
    enable(api)
    transcribe(api, recorded_call, capture)
    body = api.get(TRANSCRIPT.format(recorded_call.id)).json()
    assert (body["sandbox"], body["language"], body["durationSeconds"]) == (True, "en", 30.0)
    assert [(s["speaker"], s["start"], s["end"]) for s in body["segments"]] == [("A", 0.0, 15.0), ("B", 15.0, 30.0)]
    assert body["segments"][0]["text"] == (
        "[sandbox] Segment 1 of 2: no speech was transcribed; this stands in for 0-15 s of a 30-second recording "
        f"of {len(AUDIO)} bytes."
    )
    summarize(api, recorded_call, capture)
    summary = api.get(SUMMARY.format(recorded_call.id)).json()
    assert summary["sandbox"] is True and summary["summary"].startswith("[sandbox] A call of 2 transcript segments")
    assert summary["actionItems"] == ["[sandbox] Review the call and follow up with the caller."]


def test_agents_never_see_the_call_routes_only_the_setting(db):
    """MCP lists what the OpenAPI document holds, minus the surfaces kept from agents (calls and recordings)."""
    from apps.mcp.operations import catalogue

    listed = {op_id for op_id in catalogue() if op_id.split(" ")[1].startswith(("/calls", "/settings/ai-voice"))}
    assert listed == {"GET /settings/ai-voice", "PATCH /settings/ai-voice"}
