"""A patient's erasure (DELETE /patients/{id}) deletes their calls with their voicemails and recordings and
schedules each stored recording's file (and the provider's copy) for deletion by a Celery task, reported as
recordingsScheduled; a merge moves the duplicate's calls to the survivor."""

import pytest
from django.core.files.storage import storages

from apps.dialer.models import Call, Recording, RecordingDeletion, RecordingState
from apps.dialer.tasks import sweep
from tests.dialer.conftest import AUDIO, PATIENT_NUMBER, InboundCall, post_json
from tests.factories import PatientFactory

pytestmark = pytest.mark.django_db


def test_erasure_deletes_the_calls_and_schedules_their_recordings(
    owner, api, number, deliver, telnyx, django_capture_on_commit_callbacks
):
    patient = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    other = PatientFactory(organization=owner.organization, phone_mobile="+393339999999")
    telnyx.files["/files/a"] = telnyx.files["/files/b"] = telnyx.files["/files/c"] = AUDIO
    first, second, kept = InboundCall(), InboundCall(), InboundCall(caller="+393339999999")
    deliver(first.initiated(), first.hangup(), first.recording(telnyx.url("/files/a"), recording_id="rec-a"))
    deliver(second.initiated(), second.recording(telnyx.url("/files/b"), recording_id="rec-b", voicemail=True))
    deliver(kept.initiated(), kept.recording(telnyx.url("/files/c"), recording_id="rec-c"))
    recordings = {r.provider_recording_id: r for r in Recording.objects.for_org(owner.organization)}
    assert {r.state for r in recordings.values()} == {RecordingState.STORED}
    media = storages["dialer-test"]
    names = {key: recordings[key].storage_name for key in recordings}

    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/patients/{patient.id}")
    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True, "recordingsScheduled": 2}
    assert list(Call.objects.for_org(owner.organization).values_list("patient_id", flat=True)) == [other.id]
    assert set(Recording.objects.for_org(owner.organization).values_list("provider_recording_id", flat=True)) == {
        "rec-c"
    }
    # The deletion task ran after the commit: the files and the provider's copies are gone, and its rows.
    assert not media.exists(names["rec-a"]) and not media.exists(names["rec-b"])
    assert media.exists(names["rec-c"])
    deleted = sorted(r["path"] for r in telnyx.calls("DELETE", "/v2/recordings/"))
    assert deleted == ["/v2/recordings/rec-a", "/v2/recordings/rec-b"]
    assert not RecordingDeletion.objects.for_org(owner.organization).exists()


def test_a_deletion_the_provider_refuses_is_retried_by_the_sweep(
    owner, api, number, deliver, telnyx, django_capture_on_commit_callbacks
):
    patient = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    telnyx.files["/files/a"] = AUDIO
    call = InboundCall()
    deliver(call.initiated(), call.recording(telnyx.url("/files/a"), recording_id="rec-a"))
    telnyx.fail[("DELETE", "/v2/recordings/")] = (503, {"errors": [{"code": "down"}]})
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/patients/{patient.id}").json() == {"ok": True, "recordingsScheduled": 1}
    left = RecordingDeletion.objects.for_org(owner.organization).get()
    assert left.attempts == 1 and left.storage_name == ""  # the file went; the provider's copy waits
    del telnyx.fail[("DELETE", "/v2/recordings/")]
    RecordingDeletion.objects.for_org(owner.organization).update(created_at=left.created_at.replace(year=2020))
    assert sweep()["deletions"] == 1
    assert not RecordingDeletion.objects.for_org(owner.organization).exists()


def test_erasure_of_a_patient_without_calls_schedules_nothing(owner, api, number):
    patient = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    assert api.delete(f"/patients/{patient.id}").json() == {"ok": True, "recordingsScheduled": 0}


def test_a_merge_moves_the_duplicates_calls_to_the_survivor(owner, api, number, deliver):
    duplicate = PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)
    survivor = PatientFactory(organization=owner.organization, phone_mobile="+393330000001")
    call = InboundCall()
    deliver(call.initiated(), call.hangup())
    merged = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})
    assert merged.status_code == 200, merged.content
    assert Call.objects.for_org(owner.organization).get().patient_id == survivor.id
    assert api.get(f"/calls?patientId={survivor.id}").json()["items"][0]["id"]
