"""POST /capture/{token} in signed mode: the v1 HMAC over "timestamp.deliveryId.rawBody", the timestamp window,
the delivery id (idempotent retries, conflicts), and every refusal with nothing recorded."""

import json
import time

import pytest
from django.test import Client

from apps.capture.models import CaptureSubmission
from apps.core.crypto import sign_v1
from apps.events.models import Event
from apps.journeys.models import Journey
from apps.patients.models import Patient
from tests.capture.conftest import capture_path, counts, signed_post, submissions_of
from tests.helpers import assert_error

LEAD = {"first_name": "Luca", "phone": "+39 333 123 4567"}


@pytest.fixture
def form(create_form):
    return create_form(name="Signed", deliveryMode="signed")


@pytest.fixture
def secret(form):
    return form["signingSecret"]


def test_signed_post_creates_the_lead(owner, form, secret):
    response = signed_post(form, LEAD, secret=secret, delivery_id="d-1")

    assert response.status_code == 201, response.content
    assert response.json() == {"ok": True}
    submission = submissions_of(owner.organization).get()
    assert submission.delivery_id == "d-1"
    assert submission.status == CaptureSubmission.Status.PROCESSED
    assert Patient.objects.for_org(owner.organization).get().phone_mobile == "+39 333 123 4567"


def test_uppercase_hex_and_several_signatures_are_accepted(owner, form, secret):
    raw = json.dumps(LEAD).encode()
    now = int(time.time())
    upper = "v1=" + sign_v1(secret, now, "up-1", raw)[3:].upper()
    assert signed_post(form, raw, secret=secret, delivery_id="up-1", timestamp=now, signature=upper).status_code == 201
    several = f"v1={'0' * 64}, {sign_v1(secret, now, 'up-2', raw)}"
    response = signed_post(form, raw, secret=secret, delivery_id="up-2", timestamp=now, signature=several)
    assert response.status_code == 201, response.content
    assert submissions_of(owner.organization).count() == 2


def test_identical_retry_answers_201_and_records_nothing_new(owner, form, secret):
    now = int(time.time())
    assert signed_post(form, LEAD, secret=secret, delivery_id="retry-1", timestamp=now).status_code == 201
    before = counts(owner.organization)
    assert before["submissions"] == before["patients"] == before["journeys"] == 1
    assert before["events"] >= 2

    # Same bytes, even with a later timestamp (and so a different signature).
    again = signed_post(form, LEAD, secret=secret, delivery_id="retry-1", timestamp=now + 5)

    assert again.status_code == 201
    assert again.json() == {"ok": True}
    assert counts(owner.organization) == before
    assert Event.objects.for_org(owner.organization).count() == before["events"]
    assert Journey.objects.for_org(owner.organization).count() == 1


def test_reused_delivery_id_with_other_content_is_409(owner, form, secret):
    assert signed_post(form, LEAD, secret=secret, delivery_id="d-1").status_code == 201
    before = counts(owner.organization)

    response = signed_post(form, LEAD | {"first_name": "Marco"}, secret=secret, delivery_id="d-1")

    assert_error(response, 409, "CAPTURE_DELIVERY_CONFLICT")
    assert counts(owner.organization) == before


def test_delivery_ids_are_unique_per_form(owner, create_form, form, secret):
    other = create_form(name="Other", deliveryMode="signed")
    assert signed_post(form, LEAD, secret=secret, delivery_id="same").status_code == 201
    assert signed_post(other, LEAD, secret=other["signingSecret"], delivery_id="same").status_code == 201
    assert submissions_of(owner.organization).count() == 2


def test_svc_event_id_equal_to_the_delivery_id_is_accepted(owner, form, secret):
    response = signed_post(form, LEAD | {"_svc": {"event_id": "e-1"}}, secret=secret, delivery_id="e-1")
    assert response.status_code == 201, response.content
    assert "_svc" not in submissions_of(owner.organization).get().fields


def test_delivery_id_of_200_characters_is_accepted(owner, form, secret):
    assert signed_post(form, LEAD, secret=secret, delivery_id="d" * 200).status_code == 201


# --- refusals: nothing recorded ------------------------------------------------------------------------------------


def refusals(form, secret):
    now = int(time.time())
    raw = json.dumps(LEAD).encode()
    return {
        "bad-signature": (signed_post(form, LEAD, secret="capsec_wrong"), 401, "CAPTURE_SIGNATURE_INVALID"),
        "signature-over-other-body": (
            signed_post(form, raw, secret=secret, signature=sign_v1(secret, now, "x", b"{}"), timestamp=now),
            401,
            "CAPTURE_SIGNATURE_INVALID",
        ),
        "signature-without-v1": (
            signed_post(
                form, raw, secret=secret, delivery_id="v", timestamp=now, signature=sign_v1(secret, now, "v", raw)[3:]
            ),
            401,
            "CAPTURE_SIGNATURE_INVALID",
        ),
        "missing-signature": (
            signed_post(form, LEAD, secret=secret, omit=("X-Service-Signature",)),
            401,
            "CAPTURE_SIGNATURE_INVALID",
        ),
        "stale-timestamp": (
            signed_post(form, LEAD, secret=secret, timestamp=now - 360),
            401,
            "CAPTURE_TIMESTAMP_OUT_OF_RANGE",
        ),
        "future-timestamp": (
            signed_post(form, LEAD, secret=secret, timestamp=now + 360),
            401,
            "CAPTURE_TIMESTAMP_OUT_OF_RANGE",
        ),
        "non-numeric-timestamp": (signed_post(form, LEAD, secret=secret, timestamp="soon"), 400, "VALIDATION_ERROR"),
        "negative-timestamp": (signed_post(form, LEAD, secret=secret, timestamp="-5"), 400, "VALIDATION_ERROR"),
        "fractional-timestamp": (
            signed_post(form, LEAD, secret=secret, timestamp=f"{now}.5"),
            400,
            "VALIDATION_ERROR",
        ),
        "missing-timestamp": (
            signed_post(form, LEAD, secret=secret, omit=("X-Service-Timestamp",)),
            400,
            "VALIDATION_ERROR",
        ),
        "missing-delivery-id": (
            signed_post(form, LEAD, secret=secret, omit=("X-Service-Delivery-Id",)),
            400,
            "VALIDATION_ERROR",
        ),
        "long-delivery-id": (signed_post(form, LEAD, secret=secret, delivery_id="d" * 201), 400, "VALIDATION_ERROR"),
        "blank-delivery-id": (signed_post(form, LEAD, secret=secret, delivery_id="   "), 400, "VALIDATION_ERROR"),
        "query-parameter": (signed_post(form, LEAD, secret=secret, query="utm_source=x"), 400, "VALIDATION_ERROR"),
        "non-object-json": (signed_post(form, b'["a"]', secret=secret), 400, "VALIDATION_ERROR"),
        "invalid-json": (signed_post(form, b'{"email":', secret=secret), 400, "VALIDATION_ERROR"),
        "nan": (signed_post(form, b'{"phone": "3331234567", "n": NaN}', secret=secret), 400, "VALIDATION_ERROR"),
        "nul": (signed_post(form, LEAD | {"first_name": "a\x00b"}, secret=secret), 400, "VALIDATION_ERROR"),
        "event-id-mismatch": (
            signed_post(form, LEAD | {"_svc": {"event_id": "other"}}, secret=secret, delivery_id="mine"),
            400,
            "VALIDATION_ERROR",
        ),
        "event-id-not-string": (
            signed_post(form, LEAD | {"_svc": {"event_id": 7}}, secret=secret),
            400,
            "VALIDATION_ERROR",
        ),
        "form-urlencoded": (
            signed_post(
                form,
                b"first_name=Luca&phone=3331234567",
                secret=secret,
                content_type="application/x-www-form-urlencoded",
            ),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        "text-plain": (
            signed_post(form, LEAD, secret=secret, content_type="text/plain"),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        "too-large": (
            signed_post(form, LEAD | {"message": "x" * (256 * 1024)}, secret=secret),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    }


def test_every_refusal_records_nothing(owner, form, secret):
    before = counts(owner.organization)

    for name, (response, status, code) in refusals(form, secret).items():
        assert response.status_code == status, (name, response.content)
        assert_error(response, status, code)

    assert counts(owner.organization) == before


@pytest.mark.parametrize("skew", [-240, 240])
def test_timestamps_within_five_minutes_are_accepted(owner, form, secret, skew):
    response = signed_post(form, LEAD, secret=secret, timestamp=int(time.time()) + skew)
    assert response.status_code == 201, response.content


def test_signature_is_checked_before_the_body_is_read(owner, form):
    """An unsigned sender learns nothing about the body's validity: a bad signature on invalid JSON is 401."""
    response = signed_post(form, b"not json", secret="capsec_wrong")
    assert_error(response, 401, "CAPTURE_SIGNATURE_INVALID")


def test_public_form_accepts_no_signature_as_a_check(owner, create_form):
    """A public form ignores the signing headers: a wrong signature is not a reason to refuse there."""
    form = create_form()
    response = signed_post(form, LEAD, secret="anything")
    assert response.status_code == 201, response.content


def test_unsigned_json_to_a_signed_form_is_refused(owner, form):
    before = counts(owner.organization)
    response = Client().post(capture_path(form), LEAD, content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before


# --- the request path: one INSERT and one enqueue ------------------------------------------------------------------


@pytest.fixture
def broker_queue():
    """Celery publishing to the test Redis for real (not eager), so the enqueue is observable as a queued
    message; the eager default is restored afterwards."""
    from celery import current_app
    from django_redis import get_redis_connection

    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    redis = get_redis_connection("default")
    queue = current_app.conf.task_default_queue
    redis.delete(queue)
    yield lambda: redis.llen(queue)
    current_app.conf.task_always_eager = eager
    redis.delete(queue)


def test_a_signed_capture_is_one_insert_and_one_enqueue(owner, form, secret, broker_queue):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as first:
        assert signed_post(form, LEAD, secret=secret, delivery_id="q-1").status_code == 201
    # The first post in this process reads the form; later ones use the snapshot its INSERT confirms.
    assert [q["sql"].split()[0] for q in first.captured_queries] == ["SELECT", "INSERT"]
    assert broker_queue() == 1  # one drain asked for

    with CaptureQueriesContext(connection) as warm:
        response = signed_post(form, LEAD | {"first_name": "Marta"}, secret=secret, delivery_id="q-2")
    assert response.status_code == 201, response.content
    assert len(warm.captured_queries) == 1, [q["sql"] for q in warm.captured_queries]
    assert warm.captured_queries[0]["sql"].startswith('INSERT INTO "capture_capturesubmission"')
    assert broker_queue() == 1  # the pending drain covers it: no second message
    stored = submissions_of(owner.organization).order_by("created_at")
    assert [(s.delivery_id, s.status) for s in stored] == [("q-1", "received"), ("q-2", "received")]


def test_a_remembered_form_is_checked_by_the_insert(owner, api, form, secret):
    """Changes after this process remembered the form take effect at once: pause (404), rotation (new secret
    accepted, 401 for a forged one), signing disabled (public JSON accepted)."""
    from tests.capture.conftest import form_path, post_json

    assert signed_post(form, LEAD, secret=secret, delivery_id="r-1").status_code == 201
    assert post_json(api, form_path(form, "pause")).status_code == 200
    assert_error(signed_post(form, LEAD, secret=secret, delivery_id="r-2"), 404, "NOT_FOUND")
    assert post_json(api, form_path(form, "resume")).status_code == 200
    assert signed_post(form, LEAD, secret=secret, delivery_id="r-3").status_code == 201
    rotated = post_json(api, form_path(form, "signing/rotate"))
    assert rotated.status_code == 200, rotated.content
    new_secret = rotated.json()["signingSecret"]
    assert signed_post(form, LEAD | {"first_name": "N"}, secret=new_secret, delivery_id="r-4").status_code == 201
    assert_error(
        signed_post(form, LEAD, secret="svc_whsec_forged", delivery_id="r-5"), 401, "CAPTURE_SIGNATURE_INVALID"
    )
    assert sorted(submissions_of(owner.organization).values_list("delivery_id", flat=True)) == ["r-1", "r-3", "r-4"]
