"""Limits and failure: the per-form token bucket, the public abuse screen, a database or file-storage outage while
storing (503, nothing kept) and after storing (201, the retry sweep finishes the job); patient erasure and merge
reach the capture rows; the OpenAPI document lists the capture and intake-review routes."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection, transaction
from django.test import Client
from django.utils import timezone

from apps.capture import services, tasks
from apps.capture.models import AttributionTouch, CaptureAttachment, CaptureSubmission, IntakeReviewItem
from apps.journeys.models import Journey
from apps.patients.models import Location, Patient
from tests.capture.conftest import capture_path, counts, public_post, signed_post, submissions_of
from tests.factories import LocationFactory, PatientFactory
from tests.helpers import assert_error

LEAD = {"first_name": "Maria", "email": "maria@example.com"}


def fail_with(exception):
    def fail(*args, **kwargs):
        raise exception

    return fail


# --- per-form bucket ----------------------------------------------------------------------------------------------


def test_per_form_bucket_refuses_with_retry_after(owner, settings, create_form):
    settings.SVC_CAPTURE_FORM_BUCKET = (3, 0.001)
    form, other = create_form(), create_form(name="Other")

    accepted = [public_post(form, {"email": f"b{n}@example.com"}).status_code for n in range(3)]
    before = counts(owner.organization)
    refused = public_post(form, {"email": "b4@example.com"})

    assert accepted == [201, 201, 201]
    body = assert_error(refused, 429, "RATE_LIMITED")
    assert int(refused["Retry-After"]) >= 1
    assert body["details"] == {"retryAfter": int(refused["Retry-After"])}
    assert counts(owner.organization) == before
    # The bucket is the form's own.
    assert public_post(other, {"email": "o@example.com"}).status_code == 201


def test_per_form_bucket_applies_to_signed_forms(owner, settings, create_form):
    settings.SVC_CAPTURE_FORM_BUCKET = (1, 0.001)
    form = create_form(deliveryMode="signed")
    assert signed_post(form, LEAD, secret=form["signingSecret"]).status_code == 201
    assert_error(signed_post(form, LEAD, secret=form["signingSecret"]), 429, "RATE_LIMITED")
    assert submissions_of(owner.organization).count() == 1


# --- public abuse screen -----------------------------------------------------------------------------------------


@pytest.fixture
def frozen(time_machine):
    """The screen counts in fixed one-minute windows: hold the clock still inside one."""
    time_machine.move_to(datetime(2025, 3, 4, 10, 0, 30, tzinfo=UTC), tick=False)


def test_public_screen_limits_a_client_address(owner, settings, create_form, frozen):
    settings.SVC_PUBLIC_SCREEN_RATE = "3/m"
    form = create_form()

    accepted = [public_post(form, {"email": f"s{n}@example.com"}, REMOTE_ADDR="203.0.113.7") for n in range(3)]
    before = counts(owner.organization)
    refused = public_post(form, {"email": "s4@example.com"}, REMOTE_ADDR="203.0.113.7")
    unknown_token = Client().post("/capture/cap_nothing", LEAD, REMOTE_ADDR="203.0.113.7")

    assert [response.status_code for response in accepted] == [201, 201, 201]
    assert_error(refused, 429, "RATE_LIMITED")
    assert int(refused["Retry-After"]) >= 1
    assert_error(unknown_token, 429, "RATE_LIMITED")
    assert counts(owner.organization) == before
    # Another address, and a request without one, pass.
    assert public_post(form, {"email": "other@example.com"}, REMOTE_ADDR="198.51.100.9").status_code == 201
    assert public_post(form, {"email": "noaddr@example.com"}, REMOTE_ADDR="").status_code == 201


# --- outage while storing ----------------------------------------------------------------------------------------


def failing_submission_insert(error: Exception):
    """The database refuses the submission's INSERT (whatever statement stores it), through Django's own hook."""

    def wrapper(execute, sql, params, many, context):
        if sql.startswith('INSERT INTO "capture_capturesubmission"'):
            raise error
        return execute(sql, params, many, context)

    return connection.execute_wrapper(wrapper)


def test_database_failure_while_storing_is_503_and_nothing_is_kept(owner, create_form):
    form = create_form()
    before = counts(owner.organization)

    with failing_submission_insert(OperationalError("connection lost")):
        response = public_post(form, LEAD)

    body = assert_error(response, 503, "CAPTURE_NOT_STORED")
    assert response["Retry-After"] == "30"
    assert body["message"]
    assert counts(owner.organization) == before


def test_failing_insert_is_503_for_a_signed_post_and_the_resend_is_stored(owner, create_form):
    form = create_form(deliveryMode="signed")
    before = counts(owner.organization)
    with failing_submission_insert(OperationalError("server closed the connection")):
        response = signed_post(form, LEAD, secret=form["signingSecret"], delivery_id="outage-1")

    assert_error(response, 503, "CAPTURE_NOT_STORED")
    assert counts(owner.organization) == before
    # The sender resends with the same delivery id once the database is back.
    resend = signed_post(form, LEAD, secret=form["signingSecret"], delivery_id="outage-1")
    assert resend.status_code == 201
    assert submissions_of(owner.organization).get().status == "processed"


def test_file_storage_failure_is_503_and_no_rows_or_files_remain(owner, create_form, media_root, monkeypatch):
    form = create_form()
    before = counts(owner.organization)
    real_save = FileSystemStorage.save
    calls = []

    def second_save_fails(self, name, content, *args, **kwargs):
        calls.append(name)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_save(self, name, content, *args, **kwargs)

    monkeypatch.setattr(FileSystemStorage, "save", second_save_fails)

    response = Client().post(
        capture_path(form),
        LEAD | {"a": SimpleUploadedFile("a.txt", b"first"), "b": SimpleUploadedFile("b.txt", b"second")},
    )

    assert_error(response, 503, "CAPTURE_NOT_STORED")
    assert response["Retry-After"] == "30"
    assert len(calls) == 2
    assert counts(owner.organization) == before
    assert CaptureAttachment.objects.for_org(owner.organization).count() == 0
    assert [path for path in media_root.rglob("*") if path.is_file()] == []  # the first file was removed again


# --- failure after storing ------------------------------------------------------------------------------------


def age(submission_id, seconds: int) -> None:
    CaptureSubmission.objects.unscoped().filter(id=submission_id).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )


@pytest.mark.parametrize(
    "exception",
    [OperationalError("connection lost"), RuntimeError("bug")],
    ids=["database", "unexpected"],
)
def test_failure_after_storing_answers_201_and_the_sweep_finishes(owner, api, create_form, monkeypatch, exception):
    form = create_form()
    before = counts(owner.organization)
    with monkeypatch.context() as patch:
        patch.setattr(services.processing, "submission_process", fail_with(exception))
        response = public_post(form, LEAD | {"utm_source": "later"})

    assert response.status_code == 201, response.content
    assert response.json() == {"ok": True}
    submission = submissions_of(owner.organization).get()
    assert submission.status == "received"
    assert counts(owner.organization) == before | {"submissions": before["submissions"] + 1}
    listed = api.get(f"/settings/capture-forms/{form['id']}/submissions").json()["items"]
    assert [item["status"] for item in listed] == ["received"]

    # Too fresh for the sweep: it might still be under way.
    assert tasks.sweep() == 0
    assert submissions_of(owner.organization).get().status == "received"

    age(submission.id, 31)
    assert tasks.sweep() == 1

    submission.refresh_from_db()
    assert submission.status == "processed"
    patient = Patient.objects.for_org(owner.organization).get()
    assert submission.patient_id == patient.id
    assert patient.email == "maria@example.com"
    assert Journey.objects.for_org(owner.organization).filter(patient=patient).count() == 1
    assert AttributionTouch.objects.for_org(owner.organization).get().utm_source == "later"
    # Idempotent: a second sweep changes nothing.
    after = counts(owner.organization)
    assert tasks.sweep() == 0
    assert counts(owner.organization) == after


def test_sweep_gives_up_after_ten_attempts(owner, create_form, monkeypatch):
    form = create_form()
    with monkeypatch.context() as patch:
        patch.setattr(services.processing, "submission_process", fail_with(OperationalError("down")))
        assert public_post(form, LEAD).status_code == 201
    submission = submissions_of(owner.organization).get()
    age(submission.id, 60)
    CaptureSubmission.objects.unscoped().filter(id=submission.id).update(attempts=services.MAX_PROCESS_ATTEMPTS)

    assert tasks.sweep() == 0
    assert submissions_of(owner.organization).get().status == "received"


def test_sweep_counts_an_attempt_when_processing_fails(owner, create_form, monkeypatch):
    form = create_form()
    with monkeypatch.context() as patch:
        patch.setattr(services.processing, "submission_process", fail_with(OperationalError("down")))
        assert public_post(form, LEAD).status_code == 201
        submission = submissions_of(owner.organization).get()
        age(submission.id, 60)
        assert tasks.sweep() == 0
    submission.refresh_from_db()
    assert (submission.status, submission.attempts) == ("received", 1)


def test_retry_of_a_stored_but_unprocessed_delivery_processes_it(owner, create_form, monkeypatch):
    form = create_form(deliveryMode="signed")
    with monkeypatch.context() as patch:
        patch.setattr(services.processing, "submission_process", fail_with(OperationalError("down")))
        first = signed_post(form, LEAD, secret=form["signingSecret"], delivery_id="r-1")
    assert first.status_code == 201
    assert Patient.objects.for_org(owner.organization).count() == 0

    again = signed_post(form, LEAD, secret=form["signingSecret"], delivery_id="r-1")

    assert again.status_code == 201
    assert submissions_of(owner.organization).get().status == "processed"
    assert Patient.objects.for_org(owner.organization).count() == 1


# --- patient erasure and merge --------------------------------------------------------------------------------


def test_erasing_a_patient_removes_their_captures(
    owner, api, create_form, media_root, django_capture_on_commit_callbacks
):
    location = LocationFactory(organization=owner.organization)
    form = create_form(locationId=str(location.id))
    Location.objects.unscoped().filter(id=location.id).update(archived_at=timezone.now())
    upload = SimpleUploadedFile("scan.txt", b"x-ray")
    assert Client().post(capture_path(form), LEAD | {"scan": upload, "utm_source": "g"}).status_code == 201
    assert public_post(form, {"email": "someone.else@example.com"}).status_code == 201
    patient = Patient.objects.for_org(owner.organization).get(email="maria@example.com")
    stored = CaptureAttachment.objects.for_org(owner.organization).get().storage_name
    assert (media_root / stored).exists()
    assert IntakeReviewItem.objects.for_org(owner.organization).filter(patient=patient).count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    assert not CaptureSubmission.objects.for_org(owner.organization).filter(patient_id=patient.id).exists()
    assert CaptureAttachment.objects.for_org(owner.organization).count() == 0
    assert AttributionTouch.objects.for_org(owner.organization).filter(patient_id=patient.id).count() == 0
    assert IntakeReviewItem.objects.for_org(owner.organization).filter(patient_id=patient.id).count() == 0
    assert not (media_root / stored).exists()
    # The other lead's capture stays.
    assert submissions_of(owner.organization).count() == 1
    assert AttributionTouch.objects.for_org(owner.organization).count() == 1


def test_erasure_also_removes_unprocessed_submissions_carrying_the_patients_contacts(owner, api, create_form):
    patient = PatientFactory(organization=owner.organization, email="maria@example.com", phone_mobile="+39 333 1")
    parked = create_form(confirmMapping=False)
    assert public_post(parked, {"correo": "MARIA@example.com"}).status_code == 201
    assert public_post(parked, {"tel": "+39 333 1"}).status_code == 201
    assert public_post(parked, {"correo": "other@example.com"}).status_code == 201

    response = api.delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    left = submissions_of(owner.organization)
    assert [row.fields for row in left] == [{"correo": "other@example.com"}]


def test_merge_repoints_touches_and_submissions_to_the_survivor(owner, api, create_form):
    form = create_form()
    survivor = PatientFactory(organization=owner.organization, email="survivor@example.com")
    assert public_post(form, {"email": "dup@example.com", "utm_source": "merged"}).status_code == 201
    duplicate = Patient.objects.for_org(owner.organization).get(email="dup@example.com")

    response = api.post(
        f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}, content_type="application/json"
    )

    assert response.status_code == 200, response.content
    assert submissions_of(owner.organization).get().patient_id == survivor.id
    assert AttributionTouch.objects.for_org(owner.organization).get().patient_id == survivor.id
    touches = api.get(f"/patients/{survivor.id}?embed=touches").json()["touches"]
    assert [touch["utmSource"] for touch in touches] == ["merged"]
    # A later capture from the duplicate's address lands on the survivor.
    assert public_post(form, {"email": "dup@example.com", "utm_source": "after"}).status_code == 201
    assert submissions_of(owner.organization).last().patient_id == survivor.id


# --- OpenAPI ----------------------------------------------------------------------------------------------------


def test_openapi_lists_the_capture_and_review_routes(db):
    schema = Client().get("/openapi.json").json()
    paths = schema["paths"]
    expected = {
        "/capture/{token}": ("post", "capture"),
        "/settings/capture-forms": ("get", "capture"),
        "/settings/capture-forms/{id}": ("patch", "capture"),
        "/settings/capture-forms/{id}/signing/rotate": ("post", "capture"),
        "/settings/capture-forms/{id}/mapping/confirm": ("post", "capture"),
        "/settings/capture-forms/{id}/submissions": ("get", "capture"),
        "/intake-review": ("get", "intake-review"),
        "/intake-review/{id}/resolve": ("post", "intake-review"),
        "/intake-review/{id}/dismiss": ("post", "intake-review"),
    }
    for path, (method, tag) in expected.items():
        assert path in paths, path
        assert paths[path][method]["tags"] == [tag], path
    capture = paths["/capture/{token}"]["post"]
    assert not capture.get("security") or capture["security"] == [{}]
    assert set(capture["requestBody"]["content"]) == {
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    }


# --- concurrency -------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_processing_locks_only_the_submission(owner, create_form, monkeypatch):
    """Processing locks its submission row alone: a form or practice row another transaction holds (a settings
    change, another capture of the same form) must neither make it skip the submission nor wait."""
    form = create_form()
    with monkeypatch.context() as patch:
        patch.setattr(services.processing, "submission_process", fail_with(OperationalError("down")))
        assert public_post(form, LEAD).status_code == 201
    submission = submissions_of(owner.organization).get()
    locked, release, failures = threading.Event(), threading.Event(), []

    def hold_shared_locks():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT id FROM capture_captureform WHERE id = %s FOR SHARE", [form["id"]])
                cursor.execute("SELECT id FROM accounts_organization WHERE id = %s FOR SHARE", [owner.organization.id])
                locked.set()
                release.wait(timeout=10)
        except Exception as exc:  # reported to the test below
            failures.append(exc)
        finally:
            locked.set()
            connection.close()

    holder = threading.Thread(target=hold_shared_locks)
    holder.start()
    try:
        assert locked.wait(timeout=10)
        result = services.submission_process(submission_id=submission.id, organization_id=owner.organization.id)
    finally:
        release.set()
        holder.join(timeout=10)

    assert failures == []
    assert result is not None
    assert result.status == "processed"
    assert Patient.objects.for_org(owner.organization).count() == 1
