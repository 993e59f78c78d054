"""Inputs PostgreSQL could never store are the sender's error (400), not an outage (503) or a crash (500);
storage failures of any backend are 503; consent only on the channels a submission gave; parked posts that raced
the mapping's confirmation are not left behind."""

import json
from datetime import timedelta

import pytest
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from apps.capture import services, tasks
from apps.capture.models import CaptureSubmission
from apps.patients.models import MarketingConsent
from tests.capture.conftest import capture_path, counts, form_row, json_post, public_post, signed_post
from tests.factories import PatientFactory
from tests.helpers import assert_error

LEAD = {"first_name": "Maria", "email": "maria@example.com"}


def _nested_body(depth: int) -> bytes:
    """A lead whose "extra" field nests `depth` objects deep, written out directly (json.dumps would itself
    recurse too deeply)."""
    prefix = json.dumps(LEAD)[:-1]
    return (prefix + ', "extra": ' + '{"a": ' * depth + '"x"' + "}" * depth + "}").encode()


@pytest.mark.parametrize("depth", [40, 2000], ids=["over-the-cap", "past-the-recursion-limit"])
def test_deeply_nested_bodies_are_400_in_both_modes(owner, create_form, depth):
    public, signed = create_form(), create_form(deliveryMode="signed")
    before = counts(owner.organization)
    body = _nested_body(depth)

    assert_error(json_post(public, body), 400, "VALIDATION_ERROR")
    assert_error(signed_post(signed, body, secret=signed["signingSecret"]), 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before


def test_a_lone_surrogate_is_400_not_a_crash_or_an_outage(owner, create_form):
    public, signed = create_form(), create_form(deliveryMode="signed")
    before = counts(owner.organization)
    raw = json.dumps(LEAD | {"note": "\ud800"}).encode()  # json.dumps escapes it as \ud800: valid JSON text

    assert_error(json_post(public, raw), 400, "VALIDATION_ERROR")
    assert_error(signed_post(signed, raw, secret=signed["signingSecret"]), 400, "VALIDATION_ERROR")
    event_id = json.dumps(LEAD | {"_svc": {"event_id": "\ud800"}}).encode()
    assert_error(signed_post(signed, event_id, secret=signed["signingSecret"]), 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before


def test_a_timestamp_of_non_ascii_digits_is_400(owner, create_form):
    form = create_form(deliveryMode="signed")
    response = signed_post(form, LEAD, secret=form["signingSecret"], timestamp="²")
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert "X-Service-Timestamp" in body["details"]["fields"]


def test_any_storage_backend_failure_is_503_with_nothing_kept(owner, create_form, media_root, monkeypatch):
    form = create_form()
    before = counts(owner.organization)

    def unreachable(self, name, content, *args, **kwargs):
        raise RuntimeError("EndpointConnectionError")  # what an S3 client raises is not an OSError

    monkeypatch.setattr(FileSystemStorage, "save", unreachable)
    response = Client().post(capture_path(form), LEAD | {"file": SimpleUploadedFile("a.txt", b"x")})

    assert_error(response, 503, "CAPTURE_NOT_STORED")
    assert counts(owner.organization) == before


def test_consent_is_granted_only_on_the_channels_the_submission_gave(owner, create_form):
    patient = PatientFactory(
        organization=owner.organization, email="known@example.com", phone_mobile="+39 333 123 4567"
    )
    form = create_form()

    response = public_post(form, {"first_name": "Maria", "phone": "+39 333 123 4567", "marketing_consent": "yes"})

    assert response.status_code == 201
    consents = MarketingConsent.objects.for_org(owner.organization).filter(patient=patient)
    assert list(consents.values_list("channel", flat=True)) == [MarketingConsent.Channel.SMS]


def test_a_parked_post_that_raced_the_confirmation_is_processed_by_the_sweep(owner, create_form, api):
    form = create_form(confirmMapping=False)
    assert public_post(form, LEAD).status_code == 201
    # The race: the confirmation committed after this post read the form, and its replay ran before the row was
    # stored, so the row is still parked on a confirmed form.
    form_row(form).__class__.objects.for_org(owner.organization).filter(id=form["id"]).update(
        mapping_confirmed_at=timezone.now()
    )
    submission = CaptureSubmission.objects.for_org(owner.organization).get()
    assert submission.status == CaptureSubmission.Status.PARKED
    CaptureSubmission.objects.unscoped().filter(id=submission.id).update(
        created_at=timezone.now() - timedelta(seconds=31)
    )

    assert tasks.sweep() == 1

    submission.refresh_from_db()
    assert submission.status == CaptureSubmission.Status.PROCESSED
    assert services.unpark_confirmed() == 0


def test_every_json_route_answers_400_to_a_body_nested_past_the_recursion_limit(api):
    raw = '{"firstName": "Ada", "email": "ada@example.com", "customFields": ' + '{"a": ' * 5000 + "1" + "}" * 5001
    response = api.post("/patients", raw, content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR")


def test_the_settings_routes_answer_400_to_a_body_nested_past_the_recursion_limit(api):
    raw = '{"name": "Deep", "fieldMapping": ' + '{"a": ' * 5000 + '"x"' + "}" * 5001
    response = api.post("/settings/capture-forms", raw, content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR")
