"""The social ad platform: the GET handshake, X-Hub-Signature-256 refusals, the body caps, the shared intake and its
processing through the real httpx client against a local lead API (fields fetched with the page token), the
attempts cap, duplicates and replays (same logical event, no new delivery), parking and forwarding (rule 7)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.capture.models import AttributionTouch
from apps.journeys.models import Journey
from apps.leadads import tasks
from apps.leadads.models import LeadAdConnection, LeadAdSubmission, LeadIntake
from apps.patients.models import MarketingConsent, Patient
from apps.webhooks import delivery as webhook_delivery
from apps.webhooks import services as webhook_services
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.helpers import assert_error
from tests.leadads.conftest import (
    META,
    PAGE_ID,
    PAGE_TOKEN,
    intake_of,
    lead_events,
    meta_body,
    post_meta,
    process_all,
)

# --- handshake ----------------------------------------------------------------------------------------------------


def test_handshake_echoes_the_challenge_for_the_right_verify_token(client):
    response = client.get(
        META, {"hub.mode": "subscribe", "hub.verify_token": "test-lead-ads-verify-token", "hub.challenge": "1158201444"}
    )
    assert response.status_code == 200
    assert response.content == b"1158201444"
    assert response["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize(
    "query",
    [
        {"hub.mode": "subscribe", "hub.verify_token": "wrong-token", "hub.challenge": "1"},
        {"hub.mode": "unsubscribe", "hub.verify_token": "test-lead-ads-verify-token", "hub.challenge": "1"},
    ],
)
def test_handshake_refuses_a_wrong_verify_token_or_mode(client, query):
    assert_error(client.get(META, query), 403, "HANDSHAKE_REFUSED")


def test_handshake_needs_every_parameter(client):
    body = assert_error(client.get(META, {"hub.mode": "subscribe", "hub.challenge": "1"}), 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"hub.verify_token": ["is required"]}


# --- signature refusals -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    ["omit", "", "sha256=" + "0" * 64, "sha1=abc", "sha256=nothex"],
    ids=["missing", "empty", "wrong-digest", "wrong-scheme", "garbage"],
)
def test_signature_refusals_store_nothing(db, client, header):
    response = post_meta(client, meta_body("L1"), header=header)
    assert_error(response, 401, "LEAD_AD_SIGNATURE_INVALID")
    assert not LeadIntake.objects.exists()


def test_a_body_signed_with_another_secret_is_refused(db, client):
    assert_error(post_meta(client, meta_body("L1"), secret="not-the-app-secret"), 401, "LEAD_AD_SIGNATURE_INVALID")
    assert not LeadIntake.objects.exists()


def test_the_signature_covers_the_exact_bytes(db, client, settings):
    from apps.leadads import signatures

    raw = json.dumps(meta_body("L1")).encode()
    header = signatures.meta_header(settings.SVC_LEAD_ADS_META_APP_SECRET, raw)
    tampered = raw.replace(b"L1", b"L2")
    response = client.post(META, tampered, content_type="application/json", HTTP_X_HUB_SIGNATURE_256=header)
    assert_error(response, 401, "LEAD_AD_SIGNATURE_INVALID")
    assert not LeadIntake.objects.exists()


def test_no_app_secret_configured_refuses(db, client, settings):
    settings.SVC_LEAD_ADS_META_APP_SECRET = ""
    response = post_meta(client, meta_body("L1"), secret="anything")
    assert_error(response, 401, "LEAD_AD_SIGNATURE_INVALID")


def test_other_media_types_are_refused(db, client):
    response = client.post(META, "x=1", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert not LeadIntake.objects.exists()


# --- caps ---------------------------------------------------------------------------------------------------------


def test_a_body_over_256_kib_is_413_and_not_stored(db, client):
    body = meta_body("L1") | {"padding": "x" * (256 * 1024)}
    assert_error(post_meta(client, body), 413, "PAYLOAD_TOO_LARGE")
    assert not LeadIntake.objects.exists()


def test_more_than_100_deliveries_is_413_and_not_stored(db, client):
    response = post_meta(client, meta_body(*[f"L{n}" for n in range(101)]))
    body = assert_error(response, 413, "LEAD_BODY_TOO_MANY_DELIVERIES")
    assert body["details"] == {"deliveries": 101, "maxDeliveries": 100}
    assert not LeadIntake.objects.exists()


def test_exactly_100_deliveries_are_taken(db, client):
    response = post_meta(client, meta_body(*[f"L{n}" for n in range(100)]))
    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "duplicate": False, "deliveries": 100}


def test_malformed_bodies_are_400(db, client):
    for body in (b"[1]", b"{", json.dumps({"object": "user", "entry": []}).encode()):
        assert_error(post_meta(client, body), 400, "VALIDATION_ERROR")
    missing = meta_body("L1")
    del missing["entry"][0]["changes"][0]["value"]["leadgen_id"]
    body = assert_error(post_meta(client, missing), 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"entry.changes.value.leadgen_id": ["is required"]}
    assert not LeadIntake.objects.exists()


def test_a_body_with_no_lead_is_acknowledged_and_stores_nothing(db, client):
    body = {"object": "page", "entry": [{"id": PAGE_ID, "changes": [{"field": "feed", "value": {}}]}]}
    response = post_meta(client, body)
    assert response.json() == {"received": True, "duplicate": False, "deliveries": 0}
    assert not LeadIntake.objects.exists()


# --- receiving and processing -------------------------------------------------------------------------------------


def test_the_body_is_saved_encrypted_before_the_answer(api, client, meta):
    raw = json.dumps(meta_body("L1")).encode()
    intake = intake_of(post_meta(client, raw))
    assert intake.status == "received" and intake.deliveries == 1 and intake.routing_keys == [PAGE_ID]
    assert "leadgen" not in intake.raw_encrypted
    from apps.core import crypto

    assert crypto.decrypt(intake.raw_encrypted).encode() == raw
    assert not LeadAdSubmission.objects.unscoped().exists()  # nothing made in the request


def test_a_lead_is_fetched_with_the_page_token_and_becomes_a_patient_and_journey(api, owner, client, meta, graph):
    graph.add("L1", email="mia@example.com", phone="+44 7700 900111")
    intake = intake_of(post_meta(client, meta_body("L1")))

    assert tasks.process_intake(str(intake.id)) == "processed"

    path, query, authorization = graph.requests[0]
    assert path == "/v21.0/L1" and authorization == f"Bearer {PAGE_TOKEN}"
    assert "field_data" in query["fields"]
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert (submission.status, submission.reason, submission.lead_ref) == ("processed", "", "L1")
    assert submission.patient_created is True
    patient = Patient.objects.for_org(owner.organization).get()
    assert (patient.first_name, patient.last_name, patient.email) == ("Mia", "Meta", "mia@example.com")
    assert patient.custom_fields == {"which_treatment?": "Whitening"}
    assert patient.lead_source.name == "Social lead ads"
    journey = Journey.objects.for_org(owner.organization).get()
    assert (journey.patient_id, journey.source, str(journey.id)) == (patient.id, "lead_ad", str(submission.journey_id))
    touch = AttributionTouch.objects.for_org(owner.organization).get()
    assert (touch.utm_source, touch.utm_medium, touch.utm_campaign, touch.utm_content, touch.utm_id) == (
        "meta_platform", "lead_ad", "campaign-1", "form-1", "ad-1",
    )  # fmt: skip
    consents = MarketingConsent.objects.for_org(owner.organization).filter(patient=patient)
    assert {c.channel for c in consents} == {"email", "sms"}
    assert all("lead form form-1, lead L1" in c.evidence for c in consents)
    assert LeadIntake.objects.get(id=intake.id).status == "processed"
    assert LeadAdConnection.objects.for_org(owner.organization).get().last_lead_at is not None

    shown = api.get(f"/lead-ads/submissions/{submission.id}").json()
    assert shown["status"] == "processed" and shown["fields"]["email"] == "mia@example.com"


def test_an_existing_patient_is_matched_not_duplicated(owner, client, meta, graph):
    existing = Patient.objects.create(organization=owner.organization, first_name="Mia", email="MIA@example.com")
    graph.add("L1", email="mia@example.com")
    post_meta(client, meta_body("L1"))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert submission.patient_id == existing.id and submission.patient_created is False
    assert Patient.objects.for_org(owner.organization).count() == 1


def test_events_only_for_meaningful_outcomes_without_personal_data(owner, client, meta, graph):
    graph.add("L1", email="mia@example.com")
    post_meta(client, meta_body("L1"))
    process_all()
    events = lead_events(owner.organization)
    assert [e.type for e in events] == ["lead_ad_submission.received", "lead_ad_submission.status_changed"]
    received, changed = events
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert received.subject_id == changed.subject_id == str(submission.id)
    assert received.data["status"] == "received"
    assert changed.data | {} == {
        "platform": "meta_platform", "connectionId": str(submission.connection_id), "status": "processed",
        "previousStatus": "received", "reason": "", "isTest": False, "patientId": str(submission.patient_id),
        "journeyId": str(submission.journey_id), "action": "status_changed", "changedFields": ["status"],
    }  # fmt: skip
    dumped = json.dumps([e.data for e in events])
    assert "mia@example.com" not in dumped and "Mia" not in dumped and PAGE_TOKEN not in dumped


def test_the_platform_unavailable_keeps_the_lead_waiting_without_a_status_event(owner, client, meta, graph):
    graph.add("L1")
    graph.status = 503
    intake = intake_of(post_meta(client, meta_body("L1")))
    assert tasks.process_intake(str(intake.id)) == "received"
    assert [e.type for e in lead_events(owner.organization)] == ["lead_ad_submission.received"]  # no "retrying"
    row = LeadIntake.objects.get(id=intake.id)
    assert (row.attempts, row.status) == (1, "received") and row.next_attempt_at > timezone.now()
    graph.status = None
    assert tasks.process_intake(str(intake.id)) == "processed"
    assert LeadIntake.objects.get(id=intake.id).attempts == 2


def test_at_most_three_attempts_then_failed_and_no_more(owner, client, meta, graph):
    graph.status = 500
    intake = intake_of(post_meta(client, meta_body("L1")))
    assert [tasks.process_intake(str(intake.id)) for _ in range(3)] == ["received", "received", "failed"]
    assert len(graph.requests) == 3
    row = LeadIntake.objects.get(id=intake.id)
    assert (row.status, row.attempts) == ("failed", 3)
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert (submission.status, submission.reason) == ("failed", "attempts_exhausted")
    assert [e.data["status"] for e in lead_events(owner.organization)] == ["received", "failed"]
    graph.status = None
    assert tasks.process_intake(str(intake.id)) == ""  # settled: never again
    assert len(graph.requests) == 3


def test_attempts_stop_after_24_hours_even_under_three(owner, client, meta, graph, time_machine):
    graph.status = 500
    intake = intake_of(post_meta(client, meta_body("L1")))
    assert tasks.process_intake(str(intake.id)) == "received"
    time_machine.move_to(timezone.now() + timedelta(hours=24, minutes=1))
    assert tasks.process_intake(str(intake.id)) == "failed"
    assert len(graph.requests) == 1
    assert LeadAdSubmission.objects.for_org(owner.organization).get().status == "failed"


def test_the_sweep_runs_due_attempts(owner, client, meta, graph, time_machine):
    graph.status = 503
    intake = intake_of(post_meta(client, meta_body("L1")))
    tasks.process_intake(str(intake.id))
    graph.status = None
    assert tasks.sweep() == 0  # not due yet
    time_machine.move_to(timezone.now() + timedelta(minutes=2))
    assert tasks.sweep() == 1  # eager: processed now
    assert LeadIntake.objects.get(id=intake.id).status == "processed"


def test_a_refused_page_token_turns_the_connection_failing_then_healthy(api, owner, client, meta, graph):
    graph.add("L1")
    LeadAdConnection.objects.for_org(owner.organization).update(page_token_encrypted=_encrypt("EAAB-revoked"))
    post_meta(client, meta_body("L1"))
    assert process_all() == ["received"]
    connection = api.get(f"/lead-ads/connections/{meta['id']}").json()
    assert connection["health"] == "failing" and connection["healthReason"] == "the platform refused the page token"
    health = lead_events(owner.organization, types=("lead_ad_connection.health_changed",))
    assert [(e.data["previousHealth"], e.data["health"]) for e in health] == [("healthy", "failing")]
    assert "EAAB" not in json.dumps(health[0].data)

    response = api.patch(f"/lead-ads/connections/{meta['id']}", json.dumps({"pageAccessToken": PAGE_TOKEN}),
                         content_type="application/json")  # fmt: skip
    assert response.status_code == 200 and response.json()["health"] == "healthy"
    assert process_all() == ["processed"]
    health = lead_events(owner.organization, types=("lead_ad_connection.health_changed",))
    assert [(e.data["previousHealth"], e.data["health"]) for e in health] == [
        ("healthy", "failing"),
        ("failing", "healthy"),
    ]


def _encrypt(value):
    from apps.core import crypto

    return crypto.encrypt(value)


def test_a_lead_the_platform_does_not_have_fails(owner, client, meta, graph):
    post_meta(client, meta_body("gone"))
    assert process_all() == ["processed"]
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert (submission.status, submission.reason) == ("failed", "lead_not_found")
    assert [e.data["status"] for e in lead_events(owner.organization)] == ["received", "failed"]


def test_a_lead_without_usable_contact_needs_review(owner, client, meta, graph):
    graph.add("L1", email="", phone=None)
    post_meta(client, meta_body("L1"))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert (submission.status, submission.reason, submission.patient_id) == ("needs_review", "no_usable_contact", None)
    assert [e.data["status"] for e in lead_events(owner.organization)] == ["received", "needs_review"]
    assert not Patient.objects.for_org(owner.organization).exists()


def test_the_sandbox_transport_makes_a_lead_without_any_server(owner, client, meta):
    post_meta(client, meta_body("SBX123"))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert submission.status == "processed"
    assert submission.fields["email"] == "lead-sbx123@sandbox.example"


# --- duplicates and replays (emission rule 3) ---------------------------------------------------------------------


@pytest.fixture
def endpoint(owner):
    created = webhook_services.endpoint_create(
        organization=owner.organization,
        user=None,
        name="Leads",
        url="https://hooks.example.com/leads",
        events=["lead_ad_submission.received", "lead_ad_submission.status_changed"],
    )
    WebhookEndpoint.objects.for_org(owner.organization).filter(id=created.endpoint.id).update(
        verified_at=timezone.now(), enabled=True
    )
    return created.endpoint


def lead_deliveries(owner) -> int:
    webhook_delivery.fan_out()
    return WebhookDelivery.objects.for_org(owner.organization).count()


def test_the_identical_body_again_is_acknowledged_and_stores_nothing(owner, client, meta, graph, endpoint):
    graph.add("L1")
    first = post_meta(client, meta_body("L1"))
    process_all()
    events_before, deliveries_before = lead_events(owner.organization), lead_deliveries(owner)
    assert deliveries_before == 2

    again = post_meta(client, meta_body("L1"))
    assert again.status_code == 200 and again.json() == {"received": True, "duplicate": True, "deliveries": 1}
    assert first.json()["duplicate"] is False
    assert LeadIntake.objects.count() == 1
    assert process_all() == []
    assert lead_events(owner.organization) == events_before
    assert lead_deliveries(owner) == deliveries_before


def test_the_same_lead_in_another_body_keeps_its_events_and_makes_no_delivery(owner, client, meta, graph, endpoint):
    graph.add("L1")
    post_meta(client, meta_body("L1"))
    process_all()
    ids_before = [e.id for e in lead_events(owner.organization)]
    deliveries_before = lead_deliveries(owner)

    body = meta_body("L1")
    body["entry"][0]["time"] = 1767229999  # a redelivery the platform re-sent as a new body
    assert post_meta(client, body).json()["duplicate"] is False
    assert process_all() == ["processed"]
    assert [e.id for e in lead_events(owner.organization)] == ids_before
    assert lead_deliveries(owner) == deliveries_before
    assert LeadAdSubmission.objects.for_org(owner.organization).count() == 1
    assert Patient.objects.for_org(owner.organization).count() == 1


def test_replaying_an_outcome_keeps_the_logical_event_id(owner, client, meta, graph, endpoint):
    from django.db import transaction

    from apps.leadads import services

    graph.add("L1")
    post_meta(client, meta_body("L1"))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    changed = lead_events(owner.organization)[-1]
    deliveries_before = lead_deliveries(owner)
    with transaction.atomic():  # the same outcome recorded again (a redelivered task, a replay)
        again = services._status_event(submission, "received", services.Actor("provider", "meta_platform"))
    assert again.id == changed.id
    assert [e.id for e in lead_events(owner.organization)][-1] == changed.id
    assert lead_deliveries(owner) == deliveries_before


def test_reprocessing_a_settled_intake_changes_nothing(owner, client, meta, graph):
    graph.add("L1")
    intake = intake_of(post_meta(client, meta_body("L1")))
    process_all()
    before = [e.id for e in lead_events(owner.organization)]
    LeadIntake.objects.filter(id=intake.id).update(status="received", attempts=1)  # a queue redelivery of an attempt
    assert tasks.process_intake(str(intake.id)) == "processed"
    assert [e.id for e in lead_events(owner.organization)] == before
    assert len(graph.requests) == 1  # a settled submission is not fetched again


# --- routing: parked, forwarded (rules 4 and 7) --------------------------------------------------------------------


def test_a_page_not_connected_here_is_parked_without_a_peer(db, client):
    intake = intake_of(post_meta(client, meta_body("L1", page_id="999")))
    assert tasks.process_intake(str(intake.id)) == "parked"
    row = LeadIntake.objects.get(id=intake.id)
    assert (row.status, row.unrouted_keys) == ("parked", ["999"])
    assert not LeadAdSubmission.objects.unscoped().exists()


def test_a_page_not_connected_here_is_forwarded_to_the_peer_region_as_received(db, client, peer_region, settings):
    raw = json.dumps(meta_body("L1", page_id="999")).encode()
    response = post_meta(client, raw)
    intake = intake_of(response)
    assert tasks.process_intake(str(intake.id)) == "forwarded"
    path, headers, forwarded = peer_region.received[0]
    assert path == META and forwarded == raw
    from apps.leadads import signatures

    assert headers["X-Hub-Signature-256"] == signatures.meta_header(settings.SVC_LEAD_ADS_META_APP_SECRET, raw)
    assert headers["X-Service-Forwarded-From"] == "eu"
    assert LeadIntake.objects.get(id=intake.id).status == "forwarded"


def test_a_refusing_peer_is_retried_then_the_body_is_parked(db, client, peer_region):
    peer_region.status = 503
    intake = intake_of(post_meta(client, meta_body("L1", page_id="999")))
    assert [tasks.process_intake(str(intake.id)) for _ in range(3)] == ["received", "received", "parked"]
    assert len(peer_region.received) == 3
    assert LeadIntake.objects.get(id=intake.id).status == "parked"


def test_a_forwarded_body_is_never_forwarded_again(db, client, peer_region):
    response = post_meta(client, meta_body("L1", page_id="999"), HTTP_X_SERVICE_FORWARDED_FROM="us")
    intake = intake_of(response)
    assert intake.forwarded_from == "us"
    assert tasks.process_intake(str(intake.id)) == "parked"
    assert peer_region.received == []


def test_mixed_bodies_process_ours_and_park_the_rest(owner, client, meta, graph):
    graph.add("L1")
    body = meta_body("L1")
    body["entry"].append(meta_body("L2", page_id="999")["entry"][0])
    intake = intake_of(post_meta(client, body))
    assert tasks.process_intake(str(intake.id)) == "processed"
    assert LeadIntake.objects.get(id=intake.id).unrouted_keys == ["999"]
    assert LeadAdSubmission.objects.for_org(owner.organization).get().lead_ref == "L1"


def test_a_disconnected_page_no_longer_receives(api, owner, client, meta, graph):
    api.delete(f"/lead-ads/connections/{meta['id']}")
    graph.add("L1")
    intake = intake_of(post_meta(client, meta_body("L1")))
    assert tasks.process_intake(str(intake.id)) == "parked"
    assert not LeadAdSubmission.objects.for_org(owner.organization).exists()


# --- the lead API adapter's reading of the platform's answers ---------------------------------------------------------


@pytest.mark.parametrize(
    "status, code, outcome",
    [
        (429, None, "Unavailable"),
        (502, None, "Unavailable"),
        (400, 4, "Unavailable"),
        (400, 613, "Unavailable"),
        (401, None, "TokenRefused"),
        (403, None, "TokenRefused"),
        (400, 190, "TokenRefused"),
        (404, None, "LeadNotFound"),
        (400, 100, "LeadNotFound"),
        (418, None, "Refused"),
    ],
)
def test_the_adapter_reads_each_answer(graph, status, code, outcome):
    from apps.leadads import graph as adapter

    graph.status, graph.error_code = status, code
    with pytest.raises(getattr(adapter, outcome)):
        adapter.GraphTransport().fetch_lead("L1", PAGE_TOKEN)


def test_an_unreachable_lead_api_is_unavailable(settings):
    from apps.leadads import graph as adapter
    from tests.live import free_port

    settings.SVC_LEAD_ADS_GRAPH_URL = f"http://127.0.0.1:{free_port()}/v21.0"
    with pytest.raises(adapter.Unavailable):
        adapter.GraphTransport().fetch_lead("L1", PAGE_TOKEN)
