"""End to end: a signed capture is stored by the HTTP request and turned into a lead by a real Celery worker."""

import json
import time
import uuid

from django.test import Client

from apps.capture.models import CaptureSubmission
from apps.core.crypto import sign_v1
from apps.journeys.models import Journey
from apps.patients.models import Patient
from config.celery import app as celery_app


def test_a_stored_capture_is_processed_by_a_worker(worker, owner, monkeypatch):
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)
    created = owner.api_client().post(
        "/settings/capture-forms",
        {"name": "Website", "deliveryMode": "signed", "confirmMapping": True},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    form = created.json()
    raw = json.dumps({"first_name": "Ada", "email": "ada@example.com", "utm_source": "google"}).encode()
    delivery_id, timestamp = str(uuid.uuid4()), int(time.time())
    response = Client().post(
        "/capture/" + form["captureUrl"].rsplit("/", 1)[1],
        raw,
        content_type="application/json",
        headers={
            "X-Service-Delivery-Id": delivery_id,
            "X-Service-Timestamp": str(timestamp),
            "X-Service-Signature": sign_v1(form["signingSecret"], timestamp, delivery_id, raw),
        },
    )
    assert response.status_code == 201, response.content

    submissions = CaptureSubmission.objects.for_org(owner.organization)
    deadline = time.monotonic() + 120
    while not submissions.filter(status=CaptureSubmission.Status.PROCESSED).exists():
        assert worker.poll() is None, worker.log()
        assert time.monotonic() < deadline, f"not processed within 120 s; worker log: {worker.log()}"
        time.sleep(0.1)
    patient = Patient.objects.for_org(owner.organization).get(email="ada@example.com")
    assert submissions.get().patient_id == patient.id
    assert Journey.objects.for_org(owner.organization).filter(patient=patient).count() == 1
