"""Deposit requests through HTTP: create, read, list, update a draft, send, cancel; their events; tenancy and roles."""

import pytest

from tests.deposits.helpers import (
    DEPOSITS,
    create_deposit,
    deposit_events,
    make_journey,
    make_patient,
    patch_json,
    post_json,
    stored,
    url,
)
from tests.helpers import assert_error


def test_create_read_list_a_draft_and_its_created_event(owner, api):
    org = owner.organization
    patient = make_patient(org)
    journey = make_journey(org, owner.user, patient)
    created = create_deposit(api, patient, journeyId=str(journey.id), currency="Eur", amount=12550)
    assert created["status"] == "draft"
    assert created["amount"] == 12550 and created["currency"] == "eur"
    assert created["patientId"] == str(patient.id) and created["journeyId"] == str(journey.id)
    assert created["refundedAmount"] == 0 and created["patientLink"] is None
    assert created["createdById"] == str(owner.user.id)

    read = api.get(url(created))
    assert read.status_code == 200 and read.json() == created

    listed = api.get(DEPOSITS, {"patientId": str(patient.id), "status": "draft"})
    assert listed.status_code == 200
    assert listed.json()["total"] == 1 and listed.json()["items"] == [created]
    assert api.get(DEPOSITS, {"status": "sent"}).json()["total"] == 0

    (event,) = deposit_events(org, created["id"])
    assert event.type == "deposit_request.created"
    assert event.data == {
        "action": "created",
        "status": "draft",
        "patientId": str(patient.id),
        "journeyId": str(journey.id),
        "amount": 12550,
        "currency": "eur",
        "refundedAmount": 0,
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("amount", 0),
        ("amount", -5),
        ("amount", 100_000_001),
        ("amount", "5000"),
        ("amount", 50.5),
        ("amount", True),
        ("currency", "xyz"),
        ("currency", 978),
        ("reason", ""),
        ("reason", "   "),
        ("reason", "x" * 201),
        ("reason", 7),
    ],
)
def test_invalid_amount_currency_or_reason_is_400(owner, api, field, value):
    patient = make_patient(owner.organization)
    body = {"patientId": str(patient.id), "amount": 5000, "currency": "gbp", "reason": "Whitening", field: value}
    response = post_json(api, DEPOSITS, body)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert deposit_events(owner.organization) == []


def test_unknown_field_and_missing_fields_are_400(owner, api):
    patient = make_patient(owner.organization)
    body = {"patientId": str(patient.id), "amount": 5000, "currency": "gbp", "reason": "x", "paid": True}
    assert_error(post_json(api, DEPOSITS, body), 400, "VALIDATION_ERROR")
    assert_error(post_json(api, DEPOSITS, {"patientId": str(patient.id)}), 400, "VALIDATION_ERROR")


def test_another_practices_patient_or_a_journey_of_another_patient_is_400(owner, outsider, api):
    foreign = make_patient(outsider.organization)
    body = {"patientId": str(foreign.id), "amount": 5000, "currency": "gbp", "reason": "x"}
    assert_error(post_json(api, DEPOSITS, body), 400, "VALIDATION_ERROR")
    patient, other = make_patient(owner.organization), make_patient(owner.organization)
    journey = make_journey(owner.organization, owner.user, other)
    body = {
        "patientId": str(patient.id),
        "amount": 5000,
        "currency": "gbp",
        "reason": "x",
        "journeyId": str(journey.id),
    }
    body_error = assert_error(post_json(api, DEPOSITS, body), 400, "VALIDATION_ERROR")
    assert "journeyId" in body_error["details"]["fields"]


def test_a_draft_changes_a_sent_request_does_not(owner, api):
    patient = make_patient(owner.organization)
    draft = create_deposit(api, patient)
    changed = patch_json(api, url(draft), {"amount": 7000, "reason": "Aligners"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["amount"] == 7000 and changed.json()["reason"] == "Aligners"
    assert post_json(api, url(draft, "send")).status_code == 200
    refused = assert_error(patch_json(api, url(draft), {"amount": 1}), 409, "DEPOSIT_TRANSITION_NOT_ALLOWED")
    assert refused["details"]["status"] == "sent"
    assert stored(owner.organization, draft["id"]).amount == 7000


def test_send_then_cancel_with_status_events_and_no_link_in_them(owner, api):
    org = owner.organization
    patient = make_patient(org)
    draft = create_deposit(api, patient)
    sent = post_json(api, url(draft, "send"))
    assert sent.status_code == 200, sent.content
    body = sent.json()
    assert body["status"] == "sent" and body["sentAt"] is not None and body["linkExpiresAt"] is not None
    assert "/l/" in body["patientLink"]
    assert_error(post_json(api, url(draft, "send")), 409, "DEPOSIT_TRANSITION_NOT_ALLOWED")

    cancelled = post_json(api, url(draft, "cancel"))
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["patientLink"] is None
    assert_error(post_json(api, url(draft, "cancel")), 409, "DEPOSIT_TRANSITION_NOT_ALLOWED")

    events = deposit_events(org, draft["id"], "deposit_request.status_changed")
    assert [(e.data["action"], e.data["status"]) for e in events] == [("sent", "sent"), ("cancelled", "cancelled")]
    assert events[0].data["changedFields"] == ["status", "sentAt", "linkExpiresAt"]
    for event in events:
        assert "patientLink" not in event.data and all("/l/" not in str(v) for v in event.data.values())


def test_send_takes_a_validity_in_days(owner, api):
    patient = make_patient(owner.organization)
    draft = create_deposit(api, patient)
    sent = post_json(api, url(draft, "send"), {"validDays": 2})
    assert sent.status_code == 200
    deposit = stored(owner.organization, draft["id"])
    assert 1.9 * 86400 < (deposit.link_expires_at - deposit.sent_at).total_seconds() <= 2 * 86400
    other = create_deposit(api, patient)
    assert_error(post_json(api, url(other, "send"), {"validDays": 31}), 400, "VALIDATION_ERROR")


def test_the_expiry_sweep_moves_sent_requests_past_their_link_and_they_can_be_sent_again(owner, api):
    from datetime import timedelta

    from django.utils import timezone

    from apps.deposits.tasks import expire_links

    org = owner.organization
    patient = make_patient(org)
    deposit = create_deposit(api, patient)
    post_json(api, url(deposit, "send"))
    assert expire_links() == 0
    assert expire_links() == 0
    from apps.deposits.services import expire_due

    assert expire_due(now=timezone.now() + timedelta(days=15)) == 1
    assert api.get(url(deposit)).json()["status"] == "expired"
    again = post_json(api, url(deposit, "send"))
    assert again.status_code == 200 and again.json()["status"] == "sent" and again.json()["expiredAt"] is None
    actions = [e.data["action"] for e in deposit_events(org, deposit["id"], "deposit_request.status_changed")]
    assert actions == ["sent", "expired", "sent"]


def test_another_practices_deposit_is_404_on_every_route_and_absent_from_lists(owner, outsider, api):
    patient = make_patient(owner.organization)
    deposit = create_deposit(api, patient)
    theirs = outsider.api_client()
    assert_error(theirs.get(url(deposit)), 404, "NOT_FOUND")
    assert_error(patch_json(theirs, url(deposit), {"amount": 1}), 404, "NOT_FOUND")
    assert_error(post_json(theirs, url(deposit, "send")), 404, "NOT_FOUND")
    assert_error(post_json(theirs, url(deposit, "cancel")), 404, "NOT_FOUND")
    assert theirs.get(DEPOSITS).json()["total"] == 0
    assert theirs.get(DEPOSITS, {"patientId": str(patient.id)}).json()["total"] == 0
    assert stored(owner.organization, deposit["id"]).status == "draft"


def test_roles(owner, member_factory, api):
    org = owner.organization
    patient = make_patient(org)
    deposit = create_deposit(api, patient)
    front_desk = member_factory(role="front_desk", organization=org).api_client()
    telesales = member_factory(role="telesales", organization=org).api_client()
    dentist = member_factory(role="dentist", organization=org).api_client()
    # front desk asks for and sends deposits, but does not change or cancel them
    created = create_deposit(front_desk, patient)
    assert post_json(front_desk, url(created, "send")).status_code == 200
    assert_error(patch_json(front_desk, url(deposit), {"amount": 1}), 403, "PERMISSION_DENIED")
    assert_error(post_json(front_desk, url(deposit, "cancel")), 403, "PERMISSION_DENIED")
    # telesales reads only
    assert telesales.get(url(deposit)).status_code == 200
    body = {"patientId": str(patient.id), "amount": 5000, "currency": "gbp", "reason": "x"}
    assert_error(post_json(telesales, DEPOSITS, body), 403, "PERMISSION_DENIED")
    assert_error(post_json(telesales, url(deposit, "send")), 403, "PERMISSION_DENIED")
    # clinical roles hold no deposit permission
    assert_error(dentist.get(DEPOSITS), 403, "PERMISSION_DENIED")
    assert_error(dentist.get(url(deposit)), 403, "PERMISSION_DENIED")


def test_patient_embed_shows_the_patients_deposits(owner, outsider, api):
    org = owner.organization
    patient, other = make_patient(org), make_patient(org)
    first = create_deposit(api, patient, amount=1000)
    second = create_deposit(api, patient, amount=2000)
    create_deposit(api, other)
    response = api.get(f"/patients/{patient.id}", {"embed": "deposits"})
    assert response.status_code == 200, response.content
    assert [d["id"] for d in response.json()["deposits"]] == [second["id"], first["id"]]
    assert response.json()["deposits"][0] == second
    assert api.get(f"/patients/{make_patient(org).id}", {"embed": "deposits"}).json()["deposits"] == []
    assert_error(outsider.api_client().get(f"/patients/{patient.id}", {"embed": "deposits"}), 404, "NOT_FOUND")


def test_merge_moves_deposits_to_the_survivor_and_erasure_deletes_them(owner, api):
    org = owner.organization
    survivor, duplicate, other = make_patient(org), make_patient(org), make_patient(org)
    moved = create_deposit(api, duplicate)
    kept = create_deposit(api, other)
    merged = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})
    assert merged.status_code == 200, merged.content
    assert api.get(url(moved)).json()["patientId"] == str(survivor.id)
    assert api.delete(f"/patients/{survivor.id}").status_code == 200
    assert_error(api.get(url(moved)), 404, "NOT_FOUND")
    assert api.get(url(kept)).status_code == 200
