"""POST /webhooks/pms/{provider}/{token}: the acknowledging path (cap, provider, token, signature, one receipt) and
emission rule 1 as the worker applies live changes (one logical event per item and revision across overlap with the
import, provider retries and queue redelivery; replays and revision-only bumps create nothing; conflicting content at
the same revision is held)."""

import json
import time

import pytest

from apps.patients.public import Patient
from apps.pms.inbound import receipt_process
from apps.pms.models import PmsAppointmentLink, PmsPatientLink, PmsReceipt, PmsSyncReview
from apps.pms.tasks import process_receipt
from tests.helpers import assert_error
from tests.pms.conftest import appointment, events_of, live, patient, signed_headers, token_of

pytestmark = pytest.mark.django_db


def receipts(owner):
    return PmsReceipt.objects.for_org(owner.organization)


def link(owner, provider_id="P1"):
    return PmsPatientLink.objects.for_org(owner.organization).get(provider_patient_id=provider_id)


# --- the acknowledging path ----------------------------------------------------------------------------------------


def test_a_new_pms_patient_is_created_and_linked_with_one_event_each(owner, deliver):
    response = deliver([live("patient", patient(9))], delivery_id="d-1")

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "duplicate": False, "state": "received", "reason": None}
    receipt = receipts(owner).get()
    assert (receipt.delivery_id, receipt.state, receipt.payload, receipt.events) == ("d-1", "processed", {}, 1)
    assert receipt.outcome == {"applied": 1, "unchanged": 0, "held": 0, "stale": 0, "skipped": 0}
    made = Patient.objects.for_org(owner.organization).get(email="anna9@example.org")
    assert link(owner, "P9").patient_id == made.id
    created, changed = events_of(owner.organization)
    assert (created.type, created.subject_id, created.idempotency_key.endswith(":patient:P9:1")) == (
        "patient.created",
        str(made.id),
        True,
    )
    assert changed.type == "pms_patient.link_changed"
    assert changed.data == {
        "connectionId": str(receipt.connection_id),
        "change": "created",
        "patientId": str(made.id),
        "previousPatientId": None,
    }
    # Ids only: no name, e-mail or phone in any event.
    assert "anna9" not in json.dumps([e.data for e in events_of(owner.organization)]).lower()


def test_a_provider_retry_of_the_same_delivery_is_a_duplicate(owner, deliver):
    deliver([live("patient", patient(9))], delivery_id="d-1")
    again = deliver([live("patient", patient(9))], delivery_id="d-1")
    assert again.status_code == 200
    assert again.json() == {"received": True, "duplicate": True, "state": "duplicate", "reason": None}
    assert receipts(owner).count() == 1
    assert len(events_of(owner.organization)) == 2


def test_the_same_item_and_revision_in_a_new_delivery_creates_nothing(owner, deliver):
    deliver([live("patient", patient(9))])
    before = events_of(owner.organization)
    again = deliver([live("patient", patient(9))])
    assert again.json()["state"] == "received"
    assert receipts(owner).order_by("created_at").last().outcome["unchanged"] == 1
    assert events_of(owner.organization) == before


def test_queue_redelivery_of_a_processed_receipt_changes_nothing(owner, deliver):
    deliver([live("patient", patient(9))])
    receipt = receipts(owner).get()
    before = events_of(owner.organization)
    assert process_receipt(str(receipt.id)) is None  # the task run again, as a redelivered message runs it
    assert events_of(owner.organization) == before


def test_a_redelivered_receipt_reapplied_keeps_one_logical_event(owner, deliver):
    """A worker lost mid-way re-runs a receipt whose events were recorded: the idempotency keys keep one event."""
    deliver([live("patient", patient(9, revision=3))])
    receipt = receipts(owner).get()
    before = [(e.id, e.type) for e in events_of(owner.organization)]
    PmsPatientLink.objects.for_org(owner.organization).filter(provider_patient_id="P9").update(revision=2)
    receipts(owner).filter(id=receipt.id).update(
        state="received", payload={"events": [live("patient", patient(9, revision=3, firstName="Anne"))]}
    )
    Patient.objects.for_org(owner.organization).filter(email="anna9@example.org").update(first_name="Anna9")
    # The link says revision 2 again, so revision 3 applies again: its logical event is the one already recorded.
    assert receipt_process(receipt.id) == "processed"
    assert Patient.objects.for_org(owner.organization).get(email="anna9@example.org").first_name == "Anne"
    assert [(e.id, e.type) for e in events_of(owner.organization)] == before
    assert receipt_process(receipt.id) is None  # processed: nothing to do


def test_overlap_with_the_import_creates_nothing(owner, connection, deliver):
    """P1 came with the import at revision 1: the same item live is not a change."""
    assert deliver([live("patient", patient(1)), live("appointment", appointment(1))]).status_code == 200
    assert events_of(owner.organization) == []
    assert receipts(owner).get().outcome == {"applied": 0, "unchanged": 2, "held": 0, "stale": 0, "skipped": 0}


def test_a_revision_only_bump_updates_the_link_and_records_nothing(owner, connection, deliver):
    deliver([live("patient", patient(1, revision=2) | {"updatedAt": "2026-11-25T08:00:00Z"})])
    assert events_of(owner.organization) == []
    assert link(owner).revision == 2


def test_a_newer_revision_applies_with_one_event(owner, connection, deliver):
    anna = link(owner).patient
    deliver([live("patient", patient(1, revision=2, lastName="Verdi", phone="+44 7700 900111"))])
    anna.refresh_from_db()
    assert (anna.last_name, anna.phone_mobile) == ("Verdi", "+44 7700 900111")
    (event,) = events_of(owner.organization)
    assert (event.type, event.subject_id, event.data["changedFields"]) == (
        "patient.updated",
        str(anna.id),
        ["lastName", "phoneMobile"],
    )
    assert event.idempotency_key == f"pms:{connection['id']}:patient:P1:2"
    # The provider sends revision 2 again under a new delivery id: nothing new.
    deliver([live("patient", patient(1, revision=2, lastName="Verdi", phone="+44 7700 900111"))])
    assert len(events_of(owner.organization)) == 1


def test_an_older_revision_is_ignored(owner, connection, deliver):
    deliver([live("patient", patient(1, revision=3, lastName="Verdi"))])
    deliver([live("patient", patient(1, revision=2, lastName="Neri"))])
    assert link(owner).patient.last_name == "Verdi" and link(owner).revision == 3
    assert receipts(owner).order_by("created_at").last().outcome["stale"] == 1


def test_different_content_at_the_same_revision_is_held(owner, connection, deliver):
    anna = link(owner).patient
    deliver([live("patient", patient(1, lastName="Verdi"))])
    anna.refresh_from_db()
    assert anna.last_name == "Rossi1"  # nothing applied
    review = PmsSyncReview.objects.for_org(owner.organization).get()
    assert (review.kind, review.provider_item_id, review.revision, review.patient_id, review.status) == (
        "patient",
        "P1",
        1,
        anna.id,
        "open",
    )
    assert "Verdi" not in review.incoming_encrypted  # encrypted at rest
    (event,) = events_of(owner.organization)
    assert event.type == "pms_sync.review_required"
    assert event.data == {"kind": "patient", "connectionId": connection["id"], "revision": 1, "patientId": str(anna.id)}
    assert link(owner).sync_state == "review"
    # The same conflicting content again: one review, one event.
    deliver([live("patient", patient(1, lastName="Verdi"))])
    assert PmsSyncReview.objects.for_org(owner.organization).count() == 1
    assert len(events_of(owner.organization)) == 1


def test_live_appointments_are_mirrored_created_then_moved(owner, connection, deliver):
    deliver([live("appointment", appointment(6, patient_id="P2"))])
    mirrored = PmsAppointmentLink.objects.for_org(owner.organization).get(provider_appointment_id="A6").appointment
    assert mirrored.patient_id == link(owner, "P2").patient_id
    deliver(
        [
            live(
                "appointment",
                appointment(
                    6,
                    patient_id="P2",
                    revision=2,
                    startsAt="2026-12-20T09:00:00+00:00",
                    endsAt="2026-12-20T09:30:00+00:00",
                    status="confirmed",
                ),
            )
        ]
    )
    mirrored.refresh_from_db()
    assert (mirrored.starts_at.isoformat(), mirrored.status) == ("2026-12-20T09:00:00+00:00", "confirmed")
    created, updated = events_of(owner.organization)
    assert (created.type, updated.type) == ("appointment.created", "appointment.updated")
    assert updated.data["changedFields"] == ["endsAt", "startsAt", "status"]
    assert created.subject_id == updated.subject_id == str(mirrored.id)


def test_a_body_names_a_new_patient_and_their_appointment(owner, connection, deliver):
    deliver([live("patient", patient(20)), live("appointment", appointment(20))])
    assert receipts(owner).get().outcome["applied"] == 2
    assert [e.type for e in events_of(owner.organization)] == [
        "patient.created",
        "pms_patient.link_changed",
        "appointment.created",
    ]


# --- refusals and terminal settling --------------------------------------------------------------------------------


def test_a_body_over_one_mebibyte_is_413_and_not_stored(owner, deliver):
    raw = json.dumps({"events": [], "pad": "x" * (1024 * 1024)}).encode()
    assert_error(deliver(raw=raw), 413, "PAYLOAD_TOO_LARGE")
    assert not receipts(owner).exists()


def test_unknown_provider_or_token_is_404(owner, client, connection, deliver):
    raw = json.dumps({"events": [live("patient", patient(9))]}).encode()
    assert_error(deliver(raw=raw, path=f"/webhooks/pms/otherpms/{token_of(connection)}"), 404, "NOT_FOUND")
    assert_error(deliver(raw=raw, path="/webhooks/pms/pmsconnect/not-a-token"), 404, "NOT_FOUND")
    assert not receipts(owner).exists()


def test_a_bad_signature_or_stale_timestamp_is_401_and_stores_nothing(owner, client, connection, deliver):
    raw = json.dumps({"events": [live("patient", patient(9))]}).encode()
    assert_error(deliver(raw=raw, secret="pmswhsec_not-the-secret"), 401, "PMS_SIGNATURE_INVALID")
    assert_error(deliver(raw=raw, timestamp=int(time.time()) - 301), 401, "PMS_TIMESTAMP_OUT_OF_RANGE")
    headers = signed_headers(connection["signingSecret"], raw)
    tampered = client.post(
        f"/webhooks/pms/pmsconnect/{token_of(connection)}",
        raw.replace(b"anna9", b"anna8"),
        content_type="application/json",
        headers=headers,
    )
    assert_error(tampered, 401, "PMS_SIGNATURE_INVALID")
    unsigned = client.post(f"/webhooks/pms/pmsconnect/{token_of(connection)}", raw, content_type="application/json")
    assert_error(unsigned, 401, "PMS_SIGNATURE_INVALID")
    assert not receipts(owner).exists()
    assert not Patient.objects.for_org(owner.organization).filter(email="anna9@example.org").exists()


def test_another_content_type_is_415(owner, client, connection):
    raw = b"events=1"
    response = client.post(
        f"/webhooks/pms/pmsconnect/{token_of(connection)}",
        raw,
        content_type="application/x-www-form-urlencoded",
        headers=signed_headers(connection["signingSecret"], raw),
    )
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"{not json", "malformed_json", id="not-json"),
        pytest.param(b'["events"]', "malformed_shape", id="not-an-object"),
        pytest.param(
            b'{"events": [{"kind": "invoice", "id": "1", "revision": 1, "data": {}}]}',
            "malformed_shape",
            id="unknown-kind",
        ),
        pytest.param(
            b'{"events": [{"kind": "patient", "id": "P1", "revision": "2", "data": {}}]}',
            "malformed_revision_invalid",
            id="bad-revision",
        ),
        pytest.param(b'{"events": []}', "no_events", id="empty"),
    ],
)
def test_a_malformed_body_settles_terminally(owner, connection, deliver, raw, reason):
    response = deliver(raw=raw, delivery_id="bad-1")
    assert response.status_code == 200
    assert response.json() == {"received": True, "duplicate": False, "state": "rejected", "reason": reason}
    receipt = receipts(owner).get()
    assert (receipt.state, receipt.reason, receipt.payload) == ("rejected", reason, {})
    assert receipt_process(receipt.id) is None  # never processed
    assert deliver(raw=raw, delivery_id="bad-1").json()["duplicate"] is True


def test_a_body_of_101_events_settles_terminally_and_100_are_accepted(owner, connection, deliver):
    events = [live("patient", patient(n)) for n in range(100, 201)]
    response = deliver(events, delivery_id="big")
    assert response.json() == {"received": True, "duplicate": False, "state": "rejected", "reason": "too_many_events"}
    assert receipts(owner).get().state == "rejected"
    assert not PmsPatientLink.objects.for_org(owner.organization).filter(provider_patient_id="P100").exists()
    assert deliver(events[:100], delivery_id="hundred").json()["state"] == "received"
    assert (
        PmsPatientLink.objects.for_org(owner.organization).filter(provider_patient_id__startswith="P1").count() >= 100
    )


def test_a_disconnected_connection_answers_404(owner, api, connection, deliver):
    assert api.delete(f"/settings/pms/connections/{connection['id']}").status_code == 200
    raw = json.dumps({"events": [live("patient", patient(9))]}).encode()
    assert_error(deliver(raw=raw), 404, "NOT_FOUND")


def test_another_practices_token_reaches_only_its_own_connection(owner, outsider, pms, deliver, connection):
    """The signature of one practice's secret does not verify at another practice's URL."""
    from tests.pms.conftest import connect

    other = connect(outsider.api_client(), pms, lambda execute: _no_capture())
    raw = json.dumps({"events": [live("patient", patient(9))]}).encode()
    refused = deliver(raw=raw, path=f"/webhooks/pms/pmsconnect/{token_of(other)}")
    assert_error(refused, 401, "PMS_SIGNATURE_INVALID")
    assert not PmsReceipt.objects.for_org(outsider.organization).exists()


class _no_capture:
    def __enter__(self):
        return []

    def __exit__(self, *exc):
        return False
