"""The sync review queue: GET /settings/pms/reviews and POST /settings/pms/reviews/{id}/resolve."""

import pytest

from apps.pms.models import PmsPatientLink, PmsSyncReview
from tests.helpers import assert_error
from tests.pms.conftest import events_of, live, patient, post_json

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(owner, connection, deliver) -> PmsSyncReview:
    deliver([live("patient", patient(1, lastName="Verdi"))])
    return PmsSyncReview.objects.for_org(owner.organization).get()


def test_the_queue_lists_held_changes_without_their_content(api, held):
    listed = api.get("/settings/pms/reviews?status=open").json()
    assert listed["total"] == 1
    (item,) = listed["items"]
    assert (item["id"], item["kind"], item["providerItemId"], item["revision"], item["status"]) == (
        str(held.id),
        "patient",
        "P1",
        1,
        "open",
    )
    assert "Verdi" not in str(listed)
    assert api.get("/settings/pms/reviews?status=kept").json()["total"] == 0


def test_apply_incoming_applies_the_held_content(owner, api, held):
    response = post_json(api, f"/settings/pms/reviews/{held.id}/resolve", {"action": "apply_incoming"})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "applied" and response.json()["resolvedById"] == str(owner.user.id)
    anna = PmsPatientLink.objects.for_org(owner.organization).get(provider_patient_id="P1")
    assert anna.patient.last_name == "Verdi" and anna.sync_state == "synced" and anna.revision == 1
    assert anna.content_hash == held.incoming_hash
    assert [e.type for e in events_of(owner.organization)] == ["pms_sync.review_required", "patient.updated"]
    assert_error(
        post_json(api, f"/settings/pms/reviews/{held.id}/resolve", {"action": "keep_current"}),
        409,
        "PMS_REVIEW_RESOLVED",
    )


def test_keep_current_leaves_the_record(owner, api, held, deliver):
    response = post_json(api, f"/settings/pms/reviews/{held.id}/resolve", {"action": "keep_current"})
    assert response.json()["status"] == "kept"
    anna = PmsPatientLink.objects.for_org(owner.organization).get(provider_patient_id="P1")
    assert anna.patient.last_name == "Rossi1" and anna.sync_state == "synced"
    assert len(events_of(owner.organization)) == 1


def test_a_review_overtaken_by_a_newer_revision_cannot_be_applied(owner, api, held, deliver):
    deliver([live("patient", patient(1, revision=2, lastName="Neri"))])
    assert_error(
        post_json(api, f"/settings/pms/reviews/{held.id}/resolve", {"action": "apply_incoming"}),
        409,
        "PMS_REVIEW_STALE",
    )
    assert post_json(api, f"/settings/pms/reviews/{held.id}/resolve", {"action": "keep_current"}).status_code == 200


def test_bad_input_permission_and_tenancy(owner, outsider, member_factory, api, held):
    path = f"/settings/pms/reviews/{held.id}/resolve"
    body = assert_error(post_json(api, path, {"action": "merge"}), 400, "VALIDATION_ERROR")
    assert "action" in body["details"]["fields"]
    assert (
        "kind"
        in assert_error(api.get("/settings/pms/reviews?kind=invoice"), 400, "VALIDATION_ERROR")["details"]["fields"]
    )
    front_desk = member_factory(role="front_desk", organization=owner.organization).session_client()
    assert_error(front_desk.get("/settings/pms/reviews"), 403, "PERMISSION_DENIED")
    assert_error(post_json(front_desk, path, {"action": "keep_current"}), 403, "PERMISSION_DENIED")
    stranger = outsider.api_client()
    assert_error(post_json(stranger, path, {"action": "apply_incoming"}), 404, "NOT_FOUND")
    assert stranger.get("/settings/pms/reviews").json()["total"] == 0
    held.refresh_from_db()
    assert held.status == "open"
