"""Recordings and voicemails: call.recording.saved stores a pending recording; a Celery task downloads it through the
adapter (SSRF-vetted, an expired link renewed through GET /v2/recordings/{id}) into the media storage; GET
/calls/{id}/recording serves it to permitted roles only (a recorded call needs dialer:recording; a voicemail
dialer:use); another practice's call is 404. A voicemail makes the call a voicemail with a follow-up task."""

import pytest
from django.core.files.storage import storages

from apps.dialer import recordings
from apps.dialer.models import Call, CallStatus, Recording, RecordingState
from apps.dialer.tasks import fetch_recording, sweep
from apps.tasks.public import Task
from tests.conftest import make_member
from tests.dialer.conftest import AUDIO, InboundCall
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def the_recording(owner) -> Recording:
    return Recording.objects.for_org(owner.organization).select_related("call").get()


def stored_bytes(recording: Recording) -> bytes:
    with storages["dialer-test"].open(recording.storage_name, "rb") as handle:
        return handle.read()


def answered_call_with_recording(deliver, telnyx, *, voicemail=False, path="/files/rec-1"):
    telnyx.files[path] = AUDIO
    call = InboundCall()
    deliver(call.initiated(), call.answered(), call.hangup(), call.recording(telnyx.url(path), voicemail=voicemail))
    return call


def test_a_call_recording_is_copied_into_storage_and_served_to_managers_only(owner, api, number, deliver, telnyx):
    answered_call_with_recording(deliver, telnyx)
    recording = the_recording(owner)
    assert recording.state == RecordingState.STORED, recording.last_error
    assert (recording.kind, recording.size, recording.content_type) == ("call", len(AUDIO), "audio/mpeg")
    assert recording.storage_name == f"dialer/{owner.organization.id}/{recording.call_id}/{recording.id}.mp3"
    assert recording.provider_url == ""  # the capability link is not kept once stored
    assert recording.duration_seconds == 30
    assert stored_bytes(recording) == AUDIO
    (download,) = telnyx.calls("GET", "/files/")
    assert download["authorization"] == ""  # a pre-signed link: no credentials sent

    listed = api.get("/calls").json()["items"][0]["recording"]
    assert listed == {
        "id": str(recording.id),
        "kind": "call",
        "state": "stored",
        "durationSeconds": 30,
        "size": len(AUDIO),
        "contentType": "audio/mpeg",
        "createdAt": listed["createdAt"],
    }
    path = f"/calls/{recording.call_id}/recording"
    response = api.get(path)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == AUDIO
    assert response["Content-Type"] == "audio/mpeg"
    assert response["Content-Disposition"] == f'attachment; filename="call-{recording.call_id}.mp3"'
    assert response["Cache-Control"] == "private, no-store"
    manager = make_member(role="manager", organization=owner.organization).api_client()
    assert manager.get(path).status_code == 200
    for role in ("front_desk", "telesales"):
        client = make_member(role=role, organization=owner.organization).api_client()
        error = assert_error(client.get(path), 403, "PERMISSION_DENIED")
        assert error["details"] == {"permission": "dialer:recording"}
    for role in ("analyst", "nurse"):
        client = make_member(role=role, organization=owner.organization).api_client()
        assert_error(client.get(path), 403, "PERMISSION_DENIED")


def test_a_voicemail_makes_a_voicemail_call_with_a_task_and_the_desk_can_hear_it(owner, api, number, deliver, telnyx):
    answered_call_with_recording(deliver, telnyx, voicemail=True)
    recording = the_recording(owner)
    call = recording.call
    assert (recording.kind, recording.state) == ("voicemail", RecordingState.STORED)
    assert call.status == CallStatus.VOICEMAIL
    task = Task.objects.for_org(owner.organization).get()
    assert call.follow_up_task_id == task.id
    assert task.title == "Call back +393331234567 (voicemail)"
    desk = make_member(role="front_desk", organization=owner.organization).api_client()
    response = desk.get(f"/calls/{call.id}/recording")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == AUDIO
    assert api.get("/calls?status=voicemail").json()["items"][0]["id"] == str(call.id)


def test_a_voicemail_after_a_missed_call_keeps_one_task(owner, number, deliver, telnyx):
    telnyx.files["/files/vm"] = AUDIO
    call = InboundCall()
    deliver(call.initiated(), call.hangup(cause="originator_cancel"))
    deliver(call.recording(telnyx.url("/files/vm"), voicemail=True))
    row = Call.objects.for_org(owner.organization).get()
    assert row.status == CallStatus.VOICEMAIL
    assert Task.objects.for_org(owner.organization).count() == 1


def test_an_expired_link_is_renewed_through_the_api(owner, number, deliver, telnyx):
    telnyx.expired.add("/files/old")
    telnyx.files["/files/rec-9"] = AUDIO
    call = InboundCall()
    deliver(call.initiated(), call.recording(telnyx.url("/files/old"), recording_id="rec-9"))
    recording = the_recording(owner)
    assert recording.state == RecordingState.STORED, recording.last_error
    assert stored_bytes(recording) == AUDIO
    (lookup,) = telnyx.calls("GET", "/v2/recordings/rec-9")
    assert lookup["authorization"].startswith("Bearer ")


def test_a_recording_before_its_call_waits_for_the_call(
    owner, number, deliver, telnyx, django_capture_on_commit_callbacks
):
    telnyx.files["/files/early"] = AUDIO
    call = InboundCall()
    deliver(call.recording(telnyx.url("/files/early")))
    assert not Recording.objects.for_org(owner.organization).exists()
    deliver(call.initiated())
    from apps.dialer.models import TelephonyEvent

    waiting = TelephonyEvent.objects.for_org(owner.organization).get(event_type="call.recording.saved")
    # Tried again by the second drain (before the call.initiated behind it): still waiting.
    assert (waiting.state, waiting.attempts, waiting.error) == ("received", 2, "call_unknown")
    TelephonyEvent.objects.for_org(owner.organization).filter(id=waiting.id).update(
        created_at=waiting.created_at.replace(year=2020)
    )
    with django_capture_on_commit_callbacks(execute=True):
        sweep()
    assert the_recording(owner).state == RecordingState.STORED


def test_failed_downloads_retry_then_give_up_and_the_route_says_so(owner, api, number, deliver, telnyx):
    """Retries are published with backoff (eager in tests: they run at once) until five attempts are used."""
    telnyx.fail[("GET", "/files/")] = (503, {"errors": [{"code": "slow down"}]})
    call = InboundCall()
    deliver(call.initiated(), call.recording(telnyx.url("/files/busy")))
    recording = the_recording(owner)
    assert (recording.state, recording.attempts, recording.last_error) == ("unavailable", 5, "provider_http_503")
    assert len(telnyx.calls("GET", "/files/busy")) == 5
    path = f"/calls/{recording.call_id}/recording"
    assert_error(api.get(path), 410, "RECORDING_UNAVAILABLE")
    assert fetch_recording(str(recording.id)) == "skipped"
    Recording.objects.for_org(owner.organization).filter(id=recording.id).update(state=RecordingState.PENDING)
    assert_error(api.get(path), 409, "RECORDING_NOT_READY")


def test_a_gone_link_without_a_recording_id_is_unavailable_at_once(owner, number, deliver, telnyx):
    call = InboundCall()
    deliver(call.initiated(), call.recording(telnyx.url("/files/gone"), recording_id=""))
    recording = the_recording(owner)
    assert (recording.state, recording.attempts, recording.last_error) == ("unavailable", 1, "provider_http_404")
    assert not telnyx.calls("GET", "/v2/recordings/")


def test_a_link_to_a_private_address_is_refused_for_good(owner, number, deliver, settings):
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = False
    settings.SVC_TELEPHONY_TRANSPORT = "provider"
    call = InboundCall()
    deliver(call.initiated(), call.recording("http://127.0.0.1:9/secret", recording_id=""))
    recording = the_recording(owner)
    assert (recording.state, recording.last_error) == (RecordingState.UNAVAILABLE, "unsafe_url")


def test_a_call_without_a_recording_answers_404_and_a_missing_file_404(owner, api, number, deliver, telnyx):
    call = InboundCall()
    deliver(call.initiated(), call.hangup())
    row = Call.objects.for_org(owner.organization).get()
    assert_error(api.get(f"/calls/{row.id}/recording"), 404, "NOT_FOUND")
    answered_call_with_recording(deliver, telnyx, path="/files/gone")
    recording = Recording.objects.for_org(owner.organization).get()
    storages["dialer-test"].delete(recording.storage_name)
    assert_error(api.get(f"/calls/{recording.call_id}/recording"), 404, "NOT_FOUND")


def test_the_sweep_asks_again_for_a_lost_copy(owner, number, deliver, settings):
    """A pending recording nobody tried for ten minutes (its task lost with the broker) is copied by the sweep; in
    the sandbox the copy is a short silent WAV."""
    from django.utils import timezone

    call = InboundCall()
    with_recording = call.recording("https://sandbox.invalid/recordings/1.mp3")
    deliver(call.initiated())
    deliver(with_recording)
    recording = the_recording(owner)
    assert recording.state == RecordingState.STORED  # sandbox: stored at once
    Recording.objects.for_org(owner.organization).filter(id=recording.id).update(
        state=RecordingState.PENDING,
        storage_name="",
        updated_at=timezone.now() - timezone.timedelta(hours=1),
        created_at=timezone.now() - timezone.timedelta(hours=1),
    )
    assert recordings.sweep_pending() == 1
    recording.refresh_from_db()
    assert recording.state == RecordingState.STORED and recording.content_type == "audio/wav"
