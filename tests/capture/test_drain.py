"""Processing after storing: one drain per practice at a time (a Redis flag), every stored capture processed."""

import threading
import time

import pytest
from django.db import connection
from django.utils import timezone
from django_redis import get_redis_connection

from apps.capture import services, tasks
from apps.capture.models import CaptureForm, CaptureSubmission
from apps.patients.models import Patient
from tests.capture.conftest import json_post, public_post, submissions_of

LEAD = {"first_name": "Maria", "email": "maria@example.com"}


def test_a_capture_while_a_drain_is_pending_queues_no_second_one(owner, create_form):
    form = create_form()
    flag = services._drain_flag(owner.organization.id)
    get_redis_connection("default").set(flag, "1")  # a drain was asked for and has not run yet

    assert public_post(form, LEAD).status_code == 201

    submission = submissions_of(owner.organization).get()
    assert submission.status == CaptureSubmission.Status.RECEIVED  # left to the pending drain
    assert tasks.drain_practice(str(owner.organization.id)) == 1
    submission.refresh_from_db()
    assert submission.status == CaptureSubmission.Status.PROCESSED
    assert Patient.objects.for_org(owner.organization).get().email == "maria@example.com"
    assert not get_redis_connection("default").exists(flag)  # released: the next capture asks again


def test_the_flag_is_released_after_a_drain_so_the_next_capture_is_processed(owner, create_form):
    form = create_form()
    assert public_post(form, LEAD).status_code == 201
    assert public_post(form, {"first_name": "Luca", "email": "luca@example.com"}).status_code == 201
    assert set(submissions_of(owner.organization).values_list("status", flat=True)) == {"processed"}
    assert not get_redis_connection("default").exists(services._drain_flag(owner.organization.id))


def test_a_drain_leaves_other_practices_alone(owner, outsider, create_form):
    form = create_form()
    get_redis_connection("default").set(services._drain_flag(owner.organization.id), "1")
    assert public_post(form, LEAD).status_code == 201

    assert tasks.drain_practice(str(outsider.organization.id)) == 0
    assert submissions_of(owner.organization).get().status == CaptureSubmission.Status.RECEIVED


@pytest.mark.django_db(transaction=True)
def test_two_workers_processing_one_practice_at_once_make_one_patient(owner, create_form, monkeypatch):
    """The drain flag keeps one drain per practice, but the sweep and a mapping replay can run beside it: the
    practice's advisory lock serializes processing, so the second submission of one person matches the first."""
    form = create_form(confirmMapping=False)
    for name in ("First", "Second"):
        assert json_post(form, {"email": "dup@example.com", "first_name": name}).status_code == 201
    ids = list(submissions_of(owner.organization).values_list("id", flat=True))
    CaptureForm.objects.unscoped().filter(id=form["id"]).update(mapping_confirmed_at=timezone.now())
    CaptureSubmission.objects.unscoped().filter(id__in=ids).update(status=CaptureSubmission.Status.RECEIVED)
    real_match = services.patient_match

    def slow_match(**kwargs):
        found = real_match(**kwargs)
        time.sleep(0.3)  # widen the window between looking for the patient and creating it
        return found

    monkeypatch.setattr(services.processing, "patient_match", slow_match)

    def process(submission_id):
        try:
            services.submission_process(submission_id=submission_id, organization_id=owner.organization.id)
        finally:
            connection.close()

    threads = [threading.Thread(target=process, args=(submission_id,)) for submission_id in ids]
    [thread.start() for thread in threads]
    [thread.join() for thread in threads]

    assert Patient.objects.for_org(owner.organization).filter(email="dup@example.com").count() == 1
    assert set(submissions_of(owner.organization).values_list("status", flat=True)) == {"processed"}
