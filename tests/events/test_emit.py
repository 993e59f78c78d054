"""emit(): the transactional outbox. The catalogue, the envelope, the payload guard, size, rollback, idempotency."""

import json
import re
import threading
import uuid
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.utils import timezone

from apps.events.catalogue import EVENT_TYPE_SET, EVENT_TYPES
from apps.events.models import Event
from apps.events.services import (
    MAX_PAYLOAD_BYTES,
    Actor,
    EventRejected,
    emit,
    envelope,
    envelope_bytes,
)
from tests.helpers import run_in_threads

# The spec's catalogue, written out from "Events → Catalogue (40 names)".
SPEC_CATALOGUE = {
    "patient.created", "patient.updated", "patient.archived",
    "journey.created", "journey.updated", "journey.stage_changed", "journey.won", "journey.lost", "journey.reopened",
    "task.created", "task.updated", "task.completed", "task.reopened", "task.cancelled",
    "appointment.created", "appointment.updated", "appointment.status_changed", "appointment.rescheduled",
    "conversation.created", "conversation.updated",
    "message.received", "message.sent", "message.status_changed",
    "deposit_request.created", "deposit_request.status_changed",
    "reputation_request.status_changed", "reputation_feedback.received", "reputation_review.received",
    "reputation_review.updated", "reputation_reply.status_changed",
    "lead_ad_submission.received", "lead_ad_submission.status_changed", "lead_ad_connection.health_changed",
    "pms_connection.health_changed", "pms_patient.link_changed", "pms_sync.review_required",
    "pms_treatment_plan.updated", "pms_invoice.updated", "pms_payment.updated",
    "channel_connection.health_changed",
}  # fmt: skip

SUBJECT_ID = "0d3c2b9e-6a51-4b8e-9f0a-1c2d3e4f5a6b"


def _emit(organization, actor: Actor, **overrides) -> Event:
    fields = {
        "organization": organization,
        "type": "patient.updated",
        "subject_type": "patient",
        "subject_id": SUBJECT_ID,
        "actor": actor,
    }
    return emit(**(fields | overrides))


def _events(organization) -> list[Event]:
    return list(Event.objects.for_org(organization).order_by("created_at"))


# --- the catalogue ----------------------------------------------------------------------------------------------


def test_catalogue_is_exactly_the_spec_list():
    assert len(SPEC_CATALOGUE) == 40
    assert set(EVENT_TYPES) == SPEC_CATALOGUE
    assert len(EVENT_TYPES) == 40  # no duplicates
    assert EVENT_TYPE_SET == SPEC_CATALOGUE


def test_no_commercial_billing_events():
    assert not {name for name in EVENT_TYPE_SET if name.split(".")[0] in {"billing", "subscription", "invoice"}}


def test_every_catalogue_name_can_be_emitted(owner):
    with transaction.atomic():
        for name in sorted(SPEC_CATALOGUE):
            _emit(owner.organization, Actor.system(), type=name)

    assert sorted(e.type for e in Event.objects.for_org(owner.organization)) == sorted(SPEC_CATALOGUE)


# --- the transaction and the envelope ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_emit_outside_a_transaction_is_refused(owner):
    assert not connection.in_atomic_block

    with pytest.raises(EventRejected):
        _emit(owner.organization, Actor.user(owner.user))

    assert Event.objects.for_org(owner.organization).count() == 0


def test_emit_stores_one_event_with_the_envelope(owner):
    with transaction.atomic():
        returned = _emit(
            owner.organization,
            Actor.user(owner.user),
            data={"status": "lead"},
            action="update",
            changed_fields=["firstName", "tags"],
        )

    [stored] = _events(owner.organization)
    assert stored.id == returned.id
    body = envelope(stored)
    assert set(body) == {"version", "id", "type", "createdAt", "organizationId", "subject", "actor", "data"}
    assert body["version"] == "1"
    assert body["id"] == str(stored.id)
    assert str(uuid.UUID(body["id"])) == body["id"]
    assert body["type"] == "patient.updated"
    assert body["organizationId"] == str(owner.organization.id)
    assert body["subject"] == {"type": "patient", "id": SUBJECT_ID}
    assert body["actor"] == {"type": "user", "id": str(owner.user.id)}
    assert body["data"] == {"status": "lead", "action": "update", "changedFields": ["firstName", "tags"]}
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", body["createdAt"])
    created = datetime.fromisoformat(body["createdAt"].replace("Z", "+00:00"))
    assert created == stored.created_at
    assert abs((timezone.now() - created).total_seconds()) < 60


def test_envelope_bytes_are_the_json_envelope(owner):
    with transaction.atomic():
        event = _emit(owner.organization, Actor.system(), data={"count": 3})

    [stored] = _events(owner.organization)
    assert json.loads(envelope_bytes(stored)) == envelope(stored)
    assert envelope(stored)["actor"] == {"type": "system", "id": "service"}
    assert event.data == {"count": 3}


def test_created_at_is_utc_whatever_the_current_time_zone(owner):
    with timezone.override("America/New_York"), transaction.atomic():
        _emit(owner.organization, Actor.system())

    [stored] = _events(owner.organization)
    created = datetime.fromisoformat(envelope(stored)["createdAt"].replace("Z", "+00:00"))
    assert created.astimezone(UTC) == stored.created_at.astimezone(UTC)


def test_subject_and_actor_ids_are_strings(owner):
    subject = uuid.UUID(SUBJECT_ID)
    with transaction.atomic():
        _emit(owner.organization, Actor("patient", uuid.UUID(SUBJECT_ID)), subject_id=subject)

    [stored] = _events(owner.organization)
    assert envelope(stored)["subject"] == {"type": "patient", "id": SUBJECT_ID}
    assert envelope(stored)["actor"] == {"type": "patient", "id": SUBJECT_ID}


@pytest.mark.parametrize("name", ["patient.merged", "billing.invoice_paid", "", "PATIENT.CREATED", "patient.created "])
def test_unknown_type_is_refused(owner, name):
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, Actor.system(), type=name)

    assert _events(owner.organization) == []


@pytest.mark.parametrize("actor_type", ["admin", "User", "", "organization", "webhook"])
def test_bad_actor_type_is_refused(owner, actor_type):
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, Actor(actor_type, "x"))

    assert _events(owner.organization) == []


@pytest.mark.parametrize("actor_type", ["user", "system", "patient", "provider"])
def test_every_spec_actor_type_is_accepted(owner, actor_type):
    with transaction.atomic():
        _emit(owner.organization, Actor(actor_type, "a1"))

    assert [envelope(e)["actor"] for e in _events(owner.organization)] == [{"type": actor_type, "id": "a1"}]


# --- the payload guard ------------------------------------------------------------------------------------------

# Keys that name content the spec bars: notes, medical alerts, message/review/feedback bodies, attachments,
# raw provider payloads, credentials, OAuth data, capability-bearing URLs, tokens, secrets, payment-provider ids.
FORBIDDEN_KEYS = [
    "note",
    "notes",
    "Notes",
    "medicalAlert",
    "medical_alert",
    "medicalAlerts",
    "body",
    "message",
    "review",
    "feedback",
    "comment",
    "attachment",
    "attachments",
    "raw",
    "rawPayload",
    "payload",
    "password",
    "credentials",
    "apiKey",
    "authorization",
    "oauthState",
    "oauth",
    "token",
    "accessToken",
    "refresh_token",
    "secret",
    "signingSecret",
    "clientSecret",
    "url",
    "captureUrl",
    "redirect_uri",
    "paymentIntentId",
    "stripeCustomerId",
    "providerPaymentId",
    "connectedAccountId",
]

# The same kinds of content under a qualified name: a review body is a review body whatever its key says.
QUALIFIED_FORBIDDEN_KEYS = [
    "clinicalNote",
    "clinical_notes",
    "noteText",
    "messageBody",
    "message_text",
    "reviewText",
    "review_body",
    "feedbackText",
    "providerPayload",
]

FORBIDDEN_VALUES = [
    "https://x/y?token=1",
    "http://example.com/capture/abc",
    "HTTPS://EXAMPLE.COM/L/abc",
    "  https://x/y",
    "svc_oat_abcdef123456",
    "svc_ort_abcdef123456",
    "svc_key_abcdef123456",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl",
    "pi_3Nabcdefgh12345",
    "cus_ABCDEFGH123",
    "ch_3Nabcdefgh12345",
    "acct_1Nabcdefgh12345",
    "whsec_abcdefgh12345",
    "sk_live_51Habcdefgh12345",
    "rk_test_51Habcdefgh12345",
]

NESTINGS = {
    "top": lambda inner: inner,
    "in-dict": lambda inner: {"patient": inner},
    "in-list": lambda inner: {"items": [{"ok": 1}, inner]},
    "deep": lambda inner: {"a": [{"b": {"c": [inner]}}]},
}


def _refused(organization, data) -> None:
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(organization, Actor.system(), data=data)

    assert _events(organization) == []


@pytest.mark.parametrize("key", FORBIDDEN_KEYS)
def test_forbidden_keys_are_refused(owner, key):
    _refused(owner.organization, {key: "x"})


@pytest.mark.parametrize("key", QUALIFIED_FORBIDDEN_KEYS)
def test_qualified_forbidden_keys_are_refused(owner, key):
    _refused(owner.organization, {key: "Thank you, the hygienist was lovely"})


@pytest.mark.parametrize("value", FORBIDDEN_VALUES)
def test_forbidden_values_are_refused(owner, value):
    _refused(owner.organization, {"ref": value})


@pytest.mark.parametrize("where", list(NESTINGS))
@pytest.mark.parametrize(
    "inner",
    [
        pytest.param({"notes": "x"}, id="notes-key"),
        pytest.param({"medicalAlert": "x"}, id="medical-alert-key"),
        pytest.param({"accessToken": "x"}, id="token-key"),
        pytest.param({"ref": "https://x/y?token=1"}, id="url-value"),
        pytest.param({"ref": "svc_oat_abcdef123456"}, id="oauth-token-value"),
        pytest.param({"ref": "pi_3Nabcdefgh12345"}, id="payment-id-value"),
        pytest.param({"refs": ["ok", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl"]}, id="jwt-in-list"),
    ],
)
def test_forbidden_content_is_refused_at_any_depth(owner, inner, where):
    _refused(owner.organization, NESTINGS[where](inner))


def test_forbidden_values_in_changed_fields_or_action_are_refused(owner):
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, Actor.system(), action="https://x/y?token=1")
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, Actor.system(), changed_fields=["svc_oat_abcdef123456"])

    assert _events(owner.organization) == []


@pytest.mark.parametrize("value", [{1, 2}, b"bytes", object(), datetime(2025, 1, 1, tzinfo=UTC)])
def test_non_json_values_are_refused(owner, value):
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, Actor.system(), data={"x": value})


def test_non_string_keys_are_refused(owner):
    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, Actor.system(), data={1: "x"})


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"status": "lead", "count": 3, "changedFields": ["note"]}, id="spec-example"),
        pytest.param({"changedFields": ["notes", "medicalAlerts", "email", "message"]}, id="field-names-are-fine"),
        pytest.param({"status": "in_progress"}, id="status-in-progress"),
        pytest.param({"previousStatus": "lead", "status": "patient", "won": True, "value": 1250.5}, id="scalars"),
        pytest.param({"tagIds": [SUBJECT_ID], "locationId": SUBJECT_ID, "stage": None}, id="ids-and-null"),
        pytest.param({"channel": "sms", "direction": "inbound", "attempt": 2}, id="message-metadata"),
        pytest.param({"rating": 4, "platform": "google"}, id="review-metadata"),
        pytest.param({}, id="empty"),
    ],
)
def test_bounded_metadata_passes(owner, data):
    with transaction.atomic():
        _emit(owner.organization, Actor.system(), data=data)

    [stored] = _events(owner.organization)
    assert stored.data == data


# --- size -------------------------------------------------------------------------------------------------------


def _padding_for_envelope_of(size: int, organization, actor: Actor) -> dict:
    """data={"padding": "x" * n} such that the envelope is exactly `size` bytes."""
    probe = Event(
        id=uuid.uuid4(),
        organization_id=organization.id,
        type="patient.updated",
        subject_type="patient",
        subject_id=SUBJECT_ID,
        actor_type=actor.type,
        actor_id=actor.id,
        data={"padding": ""},
        created_at=timezone.now(),
    )
    base = len(envelope_bytes(probe))
    data = {"padding": "x" * (size - base)}
    probe.data = data
    assert len(envelope_bytes(probe)) == size
    return data


def test_envelope_of_exactly_64_kib_passes(owner):
    assert MAX_PAYLOAD_BYTES == 64 * 1024
    actor = Actor.user(owner.user)
    data = _padding_for_envelope_of(64 * 1024, owner.organization, actor)

    with transaction.atomic():
        _emit(owner.organization, actor, data=data)

    [stored] = _events(owner.organization)
    assert len(envelope_bytes(stored)) == 64 * 1024


def test_envelope_over_64_kib_is_refused(owner):
    actor = Actor.user(owner.user)
    data = _padding_for_envelope_of(64 * 1024 + 1, owner.organization, actor)

    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, actor, data=data)

    assert _events(owner.organization) == []


def test_size_counts_utf8_bytes_not_characters(owner):
    actor = Actor.user(owner.user)
    ascii_data = _padding_for_envelope_of(64 * 1024, owner.organization, actor)
    # Same character count, but "é" is escaped by json.dumps as \u00e9 (6 bytes) — either way more bytes.
    data = {"padding": "é" + ascii_data["padding"][1:]}

    with pytest.raises(EventRejected), transaction.atomic():
        _emit(owner.organization, actor, data=data)


# --- the transaction --------------------------------------------------------------------------------------------


def test_rollback_leaves_no_event(owner):
    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        _emit(owner.organization, Actor.system())
        raise Boom

    assert _events(owner.organization) == []
    assert Event.objects.unscoped().count() == 0


def test_refused_event_does_not_break_the_surrounding_transaction(owner):
    with transaction.atomic():
        with pytest.raises(EventRejected):
            _emit(owner.organization, Actor.system(), data={"note": "x"})
        _emit(owner.organization, Actor.system(), data={"status": "lead"})

    assert [e.data for e in _events(owner.organization)] == [{"status": "lead"}]


# --- idempotency ------------------------------------------------------------------------------------------------


def test_same_idempotency_key_in_one_practice_is_one_event(owner):
    with transaction.atomic():
        first = _emit(owner.organization, Actor.system(), idempotency_key="pms:item-1:rev-3")
    with transaction.atomic():
        second = _emit(owner.organization, Actor.system(), idempotency_key="pms:item-1:rev-3")

    assert second.id == first.id
    assert [e.id for e in _events(owner.organization)] == [first.id]


def test_same_idempotency_key_in_another_practice_is_another_event(owner, outsider):
    with transaction.atomic():
        mine = _emit(owner.organization, Actor.system(), idempotency_key="pms:item-1:rev-3")
        theirs = _emit(outsider.organization, Actor.system(), idempotency_key="pms:item-1:rev-3")

    assert mine.id != theirs.id
    assert [e.id for e in _events(owner.organization)] == [mine.id]
    assert [e.id for e in _events(outsider.organization)] == [theirs.id]


def test_different_idempotency_keys_are_different_events(owner):
    with transaction.atomic():
        first = _emit(owner.organization, Actor.system(), idempotency_key="k1")
        second = _emit(owner.organization, Actor.system(), idempotency_key="k2")
        third = _emit(owner.organization, Actor.system())
        fourth = _emit(owner.organization, Actor.system())

    assert len({first.id, second.id, third.id, fourth.id}) == 4
    assert len(_events(owner.organization)) == 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_emits_with_one_key_make_one_event(owner):
    barrier = threading.Barrier(2)
    results: list[uuid.UUID] = []

    def worker():
        with transaction.atomic():
            barrier.wait(timeout=5)
            event = _emit(owner.organization, Actor.system(), idempotency_key="provider:msg-42")
        results.append(event.id)

    errors = run_in_threads(worker, timeout=20)

    assert errors == []
    assert len(results) == 2
    assert results[0] == results[1]
    assert [e.id for e in _events(owner.organization)] == [results[0]]
