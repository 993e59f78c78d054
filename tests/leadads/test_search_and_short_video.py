"""The search ad platform (routing token + one-time google_key, only its SHA-256 kept) and the short-video ad platform
(TikTok-Signature over timestamp and body, batched bodies up to 100 leads and 2 MiB); needs_review and its
resolution."""

import hashlib
import json
import time

from apps.capture.models import AttributionTouch
from apps.leadads import tasks
from apps.leadads.models import LeadAdConnection, LeadAdSubmission, LeadIntake
from apps.patients.models import Patient
from tests.helpers import assert_error
from tests.leadads.conftest import (
    SEARCH,
    SUBMISSIONS,
    intake_of,
    lead_events,
    post_json,
    post_short_video,
    process_all,
    search_body,
    short_video_lead,
)

# --- search ads ---------------------------------------------------------------------------------------------------


def test_only_the_digests_of_the_routing_token_and_google_key_are_kept(api, owner, search):
    token, key = search["routingToken"], search["googleKey"]
    assert token.startswith("lat_") and key.startswith("lgk_")
    assert search["callbackUrl"].endswith(f"{SEARCH}{token}")
    row = LeadAdConnection.objects.for_org(owner.organization).get(id=search["id"])
    assert row.google_key_digest == hashlib.sha256(key.encode()).hexdigest()
    assert row.routing_token_digest == hashlib.sha256(token.encode()).hexdigest()
    stored = json.dumps([str(v) for v in row.__dict__.values()])
    assert token not in stored and key not in stored
    for path in ("/lead-ads/connections", f"/lead-ads/connections/{search['id']}"):
        shown = api.get(path).content.decode()
        assert token not in shown and key not in shown
    assert api.get(f"/lead-ads/connections/{search['id']}").json()["callbackUrl"] is None


def test_a_search_lead_with_the_right_key_becomes_a_lead(client, owner, search):
    body = search_body(search["googleKey"])
    response = post_json(client, SEARCH + search["routingToken"], body)
    assert response.json() == {"received": True, "duplicate": False, "deliveries": 1}
    intake = intake_of(response)
    assert search["googleKey"] not in intake.signature
    assert tasks.process_intake(str(intake.id)) == "processed"
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert (submission.status, submission.lead_ref, submission.click_id) == ("processed", "gl-1", "Cj0KCQ-click")
    patient = submission.patient
    assert (patient.first_name, patient.last_name, patient.email) == ("Sam", "Search", "search@example.com")
    assert patient.custom_fields == {"Which treatment?": "Implants"}
    touch = AttributionTouch.objects.for_org(owner.organization).get()
    assert (touch.click_id_type, touch.click_id, touch.utm_campaign) == ("gclid", "Cj0KCQ-click", "8765")
    assert patient.lead_source.name == "Search lead ads"


def test_a_wrong_or_missing_google_key_is_refused_and_nothing_stored(client, search):
    url = SEARCH + search["routingToken"]
    for key in ("lgk_wrong", "", None, 12345):
        assert_error(post_json(client, url, search_body(key)), 401, "LEAD_AD_KEY_INVALID")
    body = search_body("x")
    del body["google_key"]
    assert_error(post_json(client, url, body), 401, "LEAD_AD_KEY_INVALID")
    assert not LeadIntake.objects.exists()


def test_an_unknown_or_disconnected_routing_token_is_404(api, client, search):
    assert_error(post_json(client, SEARCH + "lat_unknown", search_body(search["googleKey"])), 404, "NOT_FOUND")
    api.delete(f"/lead-ads/connections/{search['id']}")
    response = post_json(client, SEARCH + search["routingToken"], search_body(search["googleKey"]))
    assert_error(response, 404, "NOT_FOUND")
    assert not LeadIntake.objects.exists()


def test_a_regenerated_key_replaces_the_old_one_at_once(api, client, search):
    response = api.patch(f"/lead-ads/connections/{search['id']}", json.dumps({"regenerateGoogleKey": True}),
                         content_type="application/json")  # fmt: skip
    assert response.status_code == 200, response.content
    new_key = response.json()["googleKey"]
    assert new_key and new_key != search["googleKey"] and response.json()["routingToken"] is None
    url = SEARCH + search["routingToken"]
    assert_error(post_json(client, url, search_body(search["googleKey"])), 401, "LEAD_AD_KEY_INVALID")
    assert post_json(client, url, search_body(new_key)).status_code == 200


def test_a_search_body_over_256_kib_is_413(client, search):
    body = search_body(search["googleKey"]) | {"padding": "x" * (256 * 1024)}
    assert_error(post_json(client, SEARCH + search["routingToken"], body), 413, "PAYLOAD_TOO_LARGE")
    assert not LeadIntake.objects.exists()


def test_a_test_lead_needs_review_then_a_person_resolves_it(api, owner, client, search):
    post_json(client, SEARCH + search["routingToken"], search_body(search["googleKey"], is_test=True))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert (submission.status, submission.reason) == ("needs_review", "test_lead")
    assert not Patient.objects.for_org(owner.organization).exists()

    listed = api.get(f"{SUBMISSIONS}?status=needs_review").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == str(submission.id)
    assert api.get(f"{SUBMISSIONS}?status=processed").json()["total"] == 0

    response = post_json(api, f"{SUBMISSIONS}/{submission.id}/resolve", {"action": "create_lead"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "processed" and body["resolvedById"] == str(owner.user.id) and body["patientCreated"]
    changed = lead_events(owner.organization)[-1]
    assert (changed.data["previousStatus"], changed.data["status"]) == ("needs_review", "processed")
    assert (changed.actor_type, changed.actor_id) == ("user", str(owner.user.id))
    again = post_json(api, f"{SUBMISSIONS}/{submission.id}/resolve", {"action": "dismiss"})
    assert_error(again, 409, "LEAD_AD_SUBMISSION_NOT_IN_REVIEW")


def test_resolving_needs_a_usable_contact(api, owner, client, search):
    body = search_body(search["googleKey"], lead_id="gl-2", email="")
    body["user_column_data"] = [c for c in body["user_column_data"] if c["column_id"] != "PHONE_NUMBER"]
    post_json(client, SEARCH + search["routingToken"], body)
    process_all()
    submission_id = LeadAdSubmission.objects.for_org(owner.organization).get(lead_ref="gl-2").id
    path = f"{SUBMISSIONS}/{submission_id}/resolve"
    refused = assert_error(post_json(api, path, {"action": "create_lead"}), 400, "VALIDATION_ERROR")
    assert set(refused["details"]["fields"]) == {"email", "phone"}
    assert LeadAdSubmission.objects.for_org(owner.organization).get(id=submission_id).status == "needs_review"
    assert_error(post_json(api, path, {"action": "archive"}), 400, "VALIDATION_ERROR")
    fixed = post_json(api, path, {"action": "create_lead", "email": "sam@example.com"})
    assert fixed.status_code == 200 and fixed.json()["fields"]["email"] == "sam@example.com"


def test_dismissing_fails_the_submission(api, owner, client, search):
    post_json(client, SEARCH + search["routingToken"], search_body(search["googleKey"], is_test=True))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    response = post_json(api, f"{SUBMISSIONS}/{submission.id}/resolve", {"action": "dismiss"})
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["reason"]) == ("failed", "dismissed")
    assert [e.data["status"] for e in lead_events(owner.organization)] == ["received", "needs_review", "failed"]


# --- short video --------------------------------------------------------------------------------------------------


def test_a_batch_of_100_leads_becomes_100_leads(owner, client, short_video, django_assert_max_num_queries):
    response = post_short_video(client, {"leads": [short_video_lead(n) for n in range(100)]})
    assert response.json() == {"received": True, "duplicate": False, "deliveries": 100}
    intake = intake_of(response)
    assert tasks.process_intake(str(intake.id)) == "processed"
    submissions = LeadAdSubmission.objects.for_org(owner.organization)
    assert submissions.filter(status="processed").count() == 100
    assert Patient.objects.for_org(owner.organization).count() == 100
    sample = submissions.get(lead_ref="tt-7")
    assert sample.click_id == "ttclid-7" and sample.patient.email == "video7@example.com"
    assert AttributionTouch.objects.for_org(owner.organization).filter(click_id_type="ttclid").count() == 100
    assert len(lead_events(owner.organization)) == 200
    with django_assert_max_num_queries(8):
        page = owner.api_client().get(f"{SUBMISSIONS}?limit=100")
    assert page.status_code == 200 and page.json()["total"] == 100 and len(page.json()["items"]) == 100


def test_101_leads_are_refused_413_and_nothing_stored(db, client, short_video):
    response = post_short_video(client, {"leads": [short_video_lead(n) for n in range(101)]})
    assert_error(response, 413, "LEAD_BODY_TOO_MANY_DELIVERIES")
    assert not LeadIntake.objects.exists()


def test_a_body_over_2_mib_is_413(db, client, short_video):
    body = {"leads": [short_video_lead(0)], "padding": "x" * (2 * 1024 * 1024)}
    assert_error(post_short_video(client, body), 413, "PAYLOAD_TOO_LARGE")
    assert not LeadIntake.objects.exists()


def test_a_body_between_256_kib_and_2_mib_is_taken(db, client, short_video):
    body = {"leads": [short_video_lead(0)], "padding": "x" * (1024 * 1024)}
    assert post_short_video(client, body).status_code == 200


def test_short_video_signature_refusals(db, client, short_video):
    body = {"leads": [short_video_lead(0)]}
    raw = json.dumps(body).encode()
    stale = int(time.time()) - 301
    cases = [
        {"header": "omit"},
        {"header": ""},
        {"header": f"t={int(time.time())}"},
        {"header": f"t={int(time.time())},s={'0' * 64}"},
        {"secret": "not-the-secret"},
        {"timestamp": stale},
        {"timestamp": int(time.time()) + 301},
    ]
    for case in cases:
        assert_error(post_short_video(client, raw, **case), 401, "LEAD_AD_SIGNATURE_INVALID")
    assert not LeadIntake.objects.exists()


def test_a_stale_timestamp_passes_only_for_a_body_the_peer_forwarded_within_a_day(db, client, short_video):
    body = {"leads": [short_video_lead(0)]}
    old = int(time.time()) - 3600
    response = post_short_video(client, body, timestamp=old, HTTP_X_SERVICE_FORWARDED_FROM="us")
    assert response.status_code == 200, response.content
    too_old = int(time.time()) - 25 * 3600
    refused = post_short_video(client, {"leads": [short_video_lead(1)]}, timestamp=too_old,
                               HTTP_X_SERVICE_FORWARDED_FROM="us")  # fmt: skip
    assert_error(refused, 401, "LEAD_AD_SIGNATURE_INVALID")
    own_region = post_short_video(client, {"leads": [short_video_lead(2)]}, timestamp=old,
                                  HTTP_X_SERVICE_FORWARDED_FROM="eu")  # fmt: skip
    assert_error(own_region, 401, "LEAD_AD_SIGNATURE_INVALID")


def test_leads_of_two_advertisers_route_to_their_own_practices(owner, outsider, client, short_video):
    from tests.leadads.conftest import make_connection

    make_connection(outsider.api_client(), "short_video", externalId="7009999")
    body = {"leads": [short_video_lead(0), short_video_lead(1, advertiser_id="7009999")]}
    post_short_video(client, body)
    process_all()
    assert LeadAdSubmission.objects.for_org(owner.organization).get().lead_ref == "tt-0"
    assert LeadAdSubmission.objects.for_org(outsider.organization).get().lead_ref == "tt-1"
    assert lead_events(outsider.organization) and all(
        e.organization_id == owner.organization.id for e in lead_events(owner.organization)
    )


def test_a_short_video_test_lead_and_a_lead_without_contact_need_review(owner, client, short_video):
    body = {"leads": [short_video_lead(0, is_test=True), short_video_lead(1, email="not-an-email")]}
    post_short_video(client, body)
    process_all()
    rows = {s.lead_ref: (s.status, s.reason) for s in LeadAdSubmission.objects.for_org(owner.organization)}
    assert rows == {"tt-0": ("needs_review", "test_lead"), "tt-1": ("needs_review", "no_usable_contact")}


def test_duplicate_leads_in_one_batch_make_one_submission(owner, client, short_video):
    post_short_video(client, {"leads": [short_video_lead(0), short_video_lead(0)]})
    process_all()
    assert LeadAdSubmission.objects.for_org(owner.organization).count() == 1
    assert [e.data["status"] for e in lead_events(owner.organization)] == ["received", "processed"]
