"""The social platform's signed deauthorize and data-deletion callbacks: signed_request refusals, disconnection with
lead_ad_connection.health_changed, erasure of the person's lead data, the {url, confirmation_code} answer, the
per-region tracker, and forwarding to the peer region."""

from urllib.parse import urlsplit

import pytest

from apps.leadads.models import (
    DataDeletionRequest,
    LeadAdConnection,
    LeadAdSubmission,
    LeadIntake,
)
from apps.patients.models import Patient
from tests.helpers import assert_error
from tests.leadads.conftest import (
    DATA_DELETION,
    DEAUTHORIZE,
    META_USER,
    PAGE_TOKEN,
    lead_events,
    make_connection,
    meta_body,
    post_meta,
    process_all,
    signed_form,
)

FORM = "application/x-www-form-urlencoded"
PAYLOAD = {"algorithm": "HMAC-SHA256", "issued_at": 1767225600, "user_id": META_USER}


def post_form(client, path, form, **extra):
    return client.post(path, form, content_type=FORM, **extra)


@pytest.mark.parametrize("path", [DEAUTHORIZE, DATA_DELETION])
def test_signed_request_refusals_change_nothing(api, owner, client, meta, path):
    from apps.leadads import signatures

    good = signatures.signed_request("test-lead-ads-meta-app-secret", PAYLOAD)
    signature, payload = good.split(".")
    forged = signatures.signed_request("test-lead-ads-meta-app-secret", PAYLOAD | {"user_id": "other"}).split(".")[1]
    cases = [
        "other=1",
        "signed_request=",
        "signed_request=nodot",
        f"signed_request={signature}.{forged}",  # payload swapped under a valid signature
        signed_form(PAYLOAD, secret="another-secret"),
        signed_form(PAYLOAD | {"algorithm": "plain"}),
        "signed_request=%%%.%%%",
    ]
    for form in cases:
        assert_error(post_form(client, path, form), 401, "LEAD_AD_SIGNATURE_INVALID")
    assert_error(post_form(client, path, signed_form({"algorithm": "HMAC-SHA256"})), 400, "VALIDATION_ERROR")
    assert client.post(path, '{"signed_request": "x"}', content_type="application/json").status_code == 415
    assert LeadAdConnection.objects.for_org(owner.organization).get().health == "healthy"
    assert not DataDeletionRequest.objects.exists()
    assert not lead_events(owner.organization, types=("lead_ad_connection.health_changed",))
    assert payload  # the untampered payload is what was signed


def test_deauthorize_disconnects_the_persons_connections(api, owner, outsider, client, meta):
    other = make_connection(outsider.api_client(), "meta_platform", externalId="555", authorizedUserId="someone-else")
    response = post_form(client, DEAUTHORIZE, signed_form(PAYLOAD))
    assert response.status_code == 200 and response.json() == {"received": True}
    shown = api.get(f"/lead-ads/connections/{meta['id']}").json()
    assert shown["health"] == "disconnected" and shown["hasPageToken"] is False
    assert shown["healthReason"] == "deauthorized on the platform"
    events = lead_events(owner.organization, types=("lead_ad_connection.health_changed",))
    assert [(e.data["health"], e.actor_type) for e in events] == [("disconnected", "provider")]
    assert LeadAdConnection.objects.for_org(outsider.organization).get(id=other["id"]).health == "healthy"
    assert post_form(client, DEAUTHORIZE, signed_form(PAYLOAD)).status_code == 200  # harmless again
    assert len(lead_events(owner.organization, types=("lead_ad_connection.health_changed",))) == 1


def test_data_deletion_erases_the_lead_data_and_answers_url_and_code(api, owner, client, meta, graph):
    graph.add("L1", email="mia@example.com")
    post_meta(client, meta_body("L1"))
    process_all()
    submission = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert submission.fields and submission.intake_id

    response = post_form(client, DATA_DELETION, signed_form(PAYLOAD))
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"url", "confirmation_code"}  # snake_case, as the platform expects
    code = body["confirmation_code"]
    assert urlsplit(body["url"]).path == f"{DATA_DELETION}/{code}"

    erased = LeadAdSubmission.objects.for_org(owner.organization).get()
    assert erased.fields == {} and erased.click_id == "" and erased.erased_at is not None
    assert erased.lead_ref == f"erased:{erased.id}"
    intake = LeadIntake.objects.get(id=submission.intake_id)
    assert intake.raw_encrypted == "" and intake.erased_at is not None
    connection = LeadAdConnection.objects.for_org(owner.organization).get()
    assert connection.health == "disconnected" and connection.authorized_by_ref == ""
    assert PAGE_TOKEN not in connection.page_token_encrypted
    request = DataDeletionRequest.objects.get()
    assert META_USER not in request.person_digest and (request.connections_erased, request.submissions_erased) == (1, 1)
    assert Patient.objects.for_org(owner.organization).count() == 1  # the practice's own record stays

    tracker = client.get(urlsplit(body["url"]).path)
    assert tracker.status_code == 200
    assert tracker.json() | {"requestedAt": None, "completedAt": None} == {
        "confirmationCode": code, "status": "completed", "region": "eu", "requestedAt": None, "completedAt": None,
        "peerRegion": None,
    }  # fmt: skip


def test_the_tracker_answers_404_for_unknown_codes(db, client):
    for code in ("0" * 20, "not-a-code", "x" * 41):
        assert_error(client.get(f"{DATA_DELETION}/{code}"), 404, "NOT_FOUND")


def test_both_callbacks_are_forwarded_to_the_peer_region_once(api, owner, client, meta, peer_region):
    form = signed_form(PAYLOAD)
    response = post_form(client, DATA_DELETION, form)
    assert response.status_code == 200
    path, headers, raw = peer_region.received[0]
    assert path == DATA_DELETION and raw.decode() == form and headers["X-Service-Forwarded-From"] == "eu"
    code = response.json()["confirmation_code"]
    assert client.get(f"{DATA_DELETION}/{code}").json()["peerRegion"] == "forwarded"
    post_form(client, DEAUTHORIZE, form)
    assert [p for p, _, _ in peer_region.received] == [DATA_DELETION, DEAUTHORIZE]
    # What a peer forwarded here is not sent back.
    post_form(client, DEAUTHORIZE, form, HTTP_X_SERVICE_FORWARDED_FROM="us")
    assert len(peer_region.received) == 2


def test_a_refusing_peer_is_shown_on_the_tracker(api, owner, client, meta, peer_region):
    peer_region.status = 500
    code = post_form(client, DATA_DELETION, signed_form(PAYLOAD)).json()["confirmation_code"]
    assert client.get(f"{DATA_DELETION}/{code}").json()["peerRegion"] == "failed"
