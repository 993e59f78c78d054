"""The patient embed pms, and erasure and merge reaching the PMS links."""

import pytest

from apps.pms.models import PmsPatientLink, PmsSyncReview
from tests.pms.conftest import events_of, live, patient, post_json

pytestmark = pytest.mark.django_db


def anna(owner, provider_id="P1"):
    return PmsPatientLink.objects.for_org(owner.organization).get(provider_patient_id=provider_id)


def test_the_pms_embed_shows_the_link_and_no_clinical_content(owner, api, connection):
    link = anna(owner)
    body = api.get(f"/patients/{link.patient_id}?embed=pms").json()
    assert body["pms"]["link"] == {
        "connectionId": connection["id"],
        "provider": "pmsconnect",
        "providerPatientId": "P1",
        "linkedAt": body["pms"]["link"]["linkedAt"],
        "lastSyncedAt": body["pms"]["link"]["lastSyncedAt"],
        "syncState": "synced",
    }
    assert len(body["pms"]["links"]) == 1


def test_erasure_removes_the_links_and_held_changes(
    owner, api, connection, deliver, django_capture_on_commit_callbacks
):
    deliver([live("patient", patient(1, lastName="Verdi"))])
    link = anna(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/patients/{link.patient_id}")
    assert response.status_code == 200, response.content
    assert not PmsPatientLink.objects.for_org(owner.organization).filter(id=link.id).exists()
    assert not PmsSyncReview.objects.for_org(owner.organization).exists()
    removed = events_of(owner.organization, "pms_patient.link_changed")[-1]
    assert removed.data["change"] == "removed" and removed.data["previousPatientId"] == str(link.patient_id)


def test_a_merge_moves_the_links_to_the_survivor(owner, api, connection):
    survivor, duplicate = anna(owner, "P1"), anna(owner, "P2")
    merged = post_json(api, f"/patients/{survivor.patient_id}/merge", {"duplicatePatientId": str(duplicate.patient_id)})
    assert merged.status_code == 200, merged.content
    assert anna(owner, "P2").patient_id == survivor.patient_id
    moved = events_of(owner.organization, "pms_patient.link_changed")[-1]
    assert moved.data["change"] == "moved" and moved.data["previousPatientId"] == str(duplicate.patient_id)
