"""Capture fixtures: a way to create forms through the settings API, to post signed or public captures, and to
snapshot everything a capture may record (so every refusal can assert that nothing changed)."""

import json
import time
import uuid
from urllib.parse import urlencode

import pytest
from django.test import Client

from apps.capture.models import AttributionTouch, CaptureAttachment, CaptureForm, CaptureSubmission, IntakeReviewItem
from apps.core.crypto import sign_v1
from apps.events.models import Event
from apps.journeys.models import Journey, Treatment
from apps.patients.models import Activity, MarketingConsent, Patient

BASE = "/settings/capture-forms"
FORM_TYPE = "application/x-www-form-urlencoded"


@pytest.fixture
def create_form(api):
    def create(**body):
        payload = {"name": "Website enquiry", "confirmMapping": True} | body
        response = api.post(BASE, payload, content_type="application/json")
        assert response.status_code == 201, response.content
        return response.json()

    return create


@pytest.fixture
def media_root(settings, tmp_path):
    """Attachments land in a folder of this test's own."""
    settings.STORAGES = settings.STORAGES | {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": tmp_path}}
    }
    return tmp_path


def capture_path(form: dict) -> str:
    return "/capture/" + form["captureUrl"].rsplit("/", 1)[1]


def form_path(form, action: str = "") -> str:
    form_id = form["id"] if isinstance(form, dict) else form
    return f"{BASE}/{form_id}" + (f"/{action}" if action else "")


def post_json(client: Client, path: str, data=None):
    return client.post(path, {} if data is None else data, content_type="application/json")


def patch_json(client: Client, path: str, data):
    return client.patch(path, data, content_type="application/json")


def public_post(form: dict, data: dict, *, query: str = "", client: Client | None = None, **extra):
    """A browser form post (application/x-www-form-urlencoded)."""
    path = capture_path(form) + (f"?{query}" if query else "")
    return (client or Client()).post(path, urlencode(data, doseq=True), content_type=FORM_TYPE, **extra)


def json_post(form: dict, data, *, client: Client | None = None, **extra):
    raw = data if isinstance(data, (bytes, str)) else json.dumps(data)
    return (client or Client()).post(capture_path(form), raw, content_type="application/json", **extra)


def signed_post(
    form: dict,
    body: dict | bytes,
    *,
    secret: str,
    delivery_id: str | None = None,
    timestamp: int | str | None = None,
    query: str = "",
    content_type: str = "application/json",
    signature: str | None = None,
    client: Client | None = None,
    omit: tuple[str, ...] = (),
):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    delivery_id = delivery_id or str(uuid.uuid4())
    timestamp = int(time.time()) if timestamp is None else timestamp
    headers = {
        "X-Service-Delivery-Id": delivery_id,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": signature or sign_v1(secret, timestamp, delivery_id, raw),
    }
    headers = {name: value for name, value in headers.items() if name not in omit}
    path = capture_path(form) + (f"?{query}" if query else "")
    return (client or Client()).post(path, raw, content_type=content_type, headers=headers)


def counts(organization) -> dict:
    """How many rows of each kind a capture may write exist in this practice."""
    models = {
        "forms": CaptureForm,
        "submissions": CaptureSubmission,
        "attachments": CaptureAttachment,
        "touches": AttributionTouch,
        "review_items": IntakeReviewItem,
        "patients": Patient,
        "journeys": Journey,
        "events": Event,
        "activities": Activity,
        "consents": MarketingConsent,
    }
    return {name: model.objects.for_org(organization).count() for name, model in models.items()}


def submissions_of(organization, form: dict | None = None):
    queryset = CaptureSubmission.objects.for_org(organization)
    if form is not None:
        queryset = queryset.filter(form_id=form["id"])
    return queryset.order_by("created_at", "id")


def form_row(form: dict) -> CaptureForm:
    return CaptureForm.objects.unscoped().get(id=form["id"])


def make_treatment(organization, name: str = "Implants", *, active: bool = True) -> Treatment:
    return Treatment.objects.create(organization=organization, name=name, active=active)


def read_patient(client: Client, patient_id, embed: str = "touches,timeline,marketing,journeys") -> dict:
    response = client.get(f"/patients/{patient_id}?embed={embed}")
    assert response.status_code == 200, response.content
    return response.json()
