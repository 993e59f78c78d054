"""POST /capture/{token} in public mode: browser form posts (urlencoded, multipart with files), JSON, marketing
parameters from the query string, the optional delivery id, and every refusal (unknown / paused / archived
tokens, content types, bodies) with nothing recorded."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.capture.models import CaptureAttachment, CaptureSubmission
from apps.patients.models import Patient
from tests.capture.conftest import (
    FORM_TYPE,
    capture_path,
    counts,
    form_path,
    json_post,
    post_json,
    public_post,
    submissions_of,
)
from tests.helpers import assert_error

LEAD = {"first_name": "Maria", "last_name": "Rossi", "email": "maria@example.com"}


def only_patient(organization) -> Patient:
    return Patient.objects.for_org(organization).get()


def test_urlencoded_post_creates_the_lead(owner, create_form):
    form = create_form()

    response = public_post(form, LEAD | {"phone": "+39 333 111 2222"})

    assert response.status_code == 201, response.content
    assert response.json() == {"ok": True}
    patient = only_patient(owner.organization)
    assert (patient.first_name, patient.last_name, patient.email, patient.phone_mobile) == (
        "Maria",
        "Rossi",
        "maria@example.com",
        "+39 333 111 2222",
    )
    submission = submissions_of(owner.organization).get()
    assert submission.status == CaptureSubmission.Status.PROCESSED
    assert submission.patient_id == patient.id
    assert submission.delivery_id is None


def test_json_post_creates_the_lead(owner, create_form):
    form = create_form()

    response = json_post(form, LEAD | {"consent_ts": 1712345678, "tags": ["a", "b"]})

    assert response.status_code == 201, response.content
    patient = only_patient(owner.organization)
    assert patient.email == "maria@example.com"
    assert patient.custom_fields == {"consent_ts": 1712345678, "tags": ["a", "b"]}


def test_multipart_post_keeps_the_file(owner, create_form, media_root):
    form = create_form()
    upload = SimpleUploadedFile("smile.txt", b"before picture", content_type="text/plain")

    response = Client().post(capture_path(form), LEAD | {"picture": upload})

    assert response.status_code == 201, response.content
    attachment = CaptureAttachment.objects.for_org(owner.organization).get()
    submission = submissions_of(owner.organization).get()
    assert attachment.submission_id == submission.id
    assert (attachment.field_name, attachment.file_name, attachment.content_type, attachment.size) == (
        "picture",
        "smile.txt",
        "text/plain",
        len(b"before picture"),
    )
    assert (media_root / attachment.storage_name).read_bytes() == b"before picture"
    assert only_patient(owner.organization).email == "maria@example.com"


def test_repeated_form_fields_are_kept_as_a_list(owner, create_form):
    form = create_form()
    response = public_post(form, LEAD | {"interests": ["implants", "whitening"]})
    assert response.status_code == 201
    assert only_patient(owner.organization).custom_fields == {"interests": ["implants", "whitening"]}


def test_query_string_marketing_parameters_count(owner, api, create_form):
    form = create_form()

    response = public_post(
        form,
        LEAD | {"utm_source": "newsletter"},
        query="utm_source=ignored&utm_medium=cpc&utm_campaign=spring&gclid=G-1&other=dropped",
    )

    assert response.status_code == 201, response.content
    patient = only_patient(owner.organization)
    touch = api.get(f"/patients/{patient.id}?embed=touches").json()["touches"][0]
    # The body's own value wins over the query string's; non-marketing query parameters are not fields.
    assert touch["utmSource"] == "newsletter"
    assert touch["utmMedium"] == "cpc"
    assert touch["utmCampaign"] == "spring"
    assert (touch["clickIdType"], touch["clickId"]) == ("gclid", "G-1")
    assert "other" not in submissions_of(owner.organization).get().fields


def test_delivery_id_header_makes_public_retries_idempotent(owner, create_form):
    form = create_form()
    first = public_post(form, LEAD, HTTP_X_SERVICE_DELIVERY_ID="web-1")
    before = counts(owner.organization)

    again = public_post(form, LEAD, HTTP_X_SERVICE_DELIVERY_ID="web-1")
    changed = public_post(form, LEAD | {"first_name": "Mario"}, HTTP_X_SERVICE_DELIVERY_ID="web-1")

    assert first.status_code == 201
    assert again.status_code == 201 and again.json() == {"ok": True}
    assert_error(changed, 409, "CAPTURE_DELIVERY_CONFLICT")
    assert counts(owner.organization) == before
    assert submissions_of(owner.organization).get().delivery_id == "web-1"


def test_svc_event_id_form_field_is_the_delivery_id(owner, create_form):
    form = create_form()
    assert public_post(form, LEAD | {"_svc_event_id": "evt-9"}).status_code == 201
    before = counts(owner.organization)
    assert public_post(form, LEAD | {"_svc_event_id": "evt-9"}).status_code == 201
    assert counts(owner.organization) == before
    submission = submissions_of(owner.organization).get()
    assert submission.delivery_id == "evt-9"
    assert "_svc_event_id" not in submission.fields


def test_json_svc_event_id_must_match_the_header(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    response = json_post(form, LEAD | {"_svc": {"event_id": "a"}}, HTTP_X_SERVICE_DELIVERY_ID="b")
    assert_error(response, 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before
    assert json_post(form, LEAD | {"_svc": {"event_id": "a"}}, HTTP_X_SERVICE_DELIVERY_ID="a").status_code == 201


def test_honeypot_post_is_answered_but_not_recorded(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    response = public_post(form, LEAD | {"_svc_hp": "http://spam.example"})
    assert response.status_code == 201
    assert response.json() == {"ok": True}
    assert counts(owner.organization) == before


def test_credentials_are_ignored_on_the_public_route(owner, create_form):
    form = create_form()
    response = public_post(form, LEAD, client=Client(headers={"Authorization": "Bearer nonsense"}))
    assert response.status_code == 201, response.content


# --- tokens that do not open a form ---------------------------------------------------------------------------


def test_unknown_paused_and_archived_tokens_answer_the_same_404(owner, api, create_form):
    paused, archived = create_form(name="Paused"), create_form(name="Archived")
    assert post_json(api, form_path(paused, "pause")).status_code == 200
    assert post_json(api, form_path(archived, "archive")).status_code == 200
    before = counts(owner.organization)

    answers = [
        Client().post("/capture/cap_unknown", LEAD),
        Client().post("/capture/" + "x" * 300, LEAD),
        public_post(paused, LEAD),
        public_post(archived, LEAD),
        json_post(paused, LEAD),
    ]

    bodies = [assert_error(answer, 404, "NOT_FOUND") for answer in answers]
    assert all(body == bodies[0] for body in bodies)
    assert counts(owner.organization) == before


# --- refusals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "content_type", "status", "code"),
    [
        pytest.param("first_name=Maria", "text/plain", 415, "UNSUPPORTED_MEDIA_TYPE", id="text-plain"),
        pytest.param("<lead/>", "application/xml", 415, "UNSUPPORTED_MEDIA_TYPE", id="xml"),
        pytest.param('["maria@example.com"]', "application/json", 400, "VALIDATION_ERROR", id="json-list"),
        pytest.param('"maria@example.com"', "application/json", 400, "VALIDATION_ERROR", id="json-string"),
        pytest.param("null", "application/json", 400, "VALIDATION_ERROR", id="json-null"),
        pytest.param('{"email": ', "application/json", 400, "VALIDATION_ERROR", id="invalid-json"),
        pytest.param('{"": "x"}', "application/json", 400, "VALIDATION_ERROR", id="empty-field-name"),
        pytest.param('{"_svc": "x", "email": "a@b.it"}', "application/json", 400, "VALIDATION_ERROR", id="svc-string"),
        # Values PostgreSQL cannot store are the sender's error (400), not an outage to resend into (503).
        pytest.param('{"email": "a@b.it", "n": NaN}', "application/json", 400, "VALIDATION_ERROR", id="nan"),
        pytest.param('{"email": "a@b.it", "n": 1e400}', "application/json", 400, "VALIDATION_ERROR", id="huge-float"),
        pytest.param('{"email": "a@b.it", "x": "a\\u0000b"}', "application/json", 400, "VALIDATION_ERROR", id="nul"),
        pytest.param("email=a%40b.it&first_name=a%00b", FORM_TYPE, 400, "VALIDATION_ERROR", id="nul-in-form"),
    ],
)
def test_refused_bodies_record_nothing(owner, create_form, raw, content_type, status, code):
    form = create_form()
    before = counts(owner.organization)

    response = Client().post(capture_path(form), raw, content_type=content_type)

    assert_error(response, status, code)
    assert counts(owner.organization) == before


def test_body_over_256_kib_is_413_before_parsing(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    big = json.dumps(LEAD | {"message": "x" * (256 * 1024)})

    response = json_post(form, big)
    urlencoded = public_post(form, LEAD | {"message": "y" * (256 * 1024)})

    body = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert body["details"] == {"maxBytes": 256 * 1024}
    assert_error(urlencoded, 413, "PAYLOAD_TOO_LARGE")
    assert counts(owner.organization) == before


def test_body_just_under_the_cap_is_accepted(owner, create_form):
    form = create_form()
    filler = "x" * (256 * 1024 - 200)
    raw = json.dumps(LEAD | {"notes": filler})
    assert len(raw.encode()) <= 256 * 1024
    assert json_post(form, raw).status_code == 201


def test_too_many_fields_is_400(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    fields = LEAD | {f"f{n}": "v" for n in range(200)}
    assert_error(json_post(form, fields), 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before


def test_too_many_files_is_400(owner, create_form, media_root):
    form = create_form()
    before = counts(owner.organization)
    files = {f"file{n}": SimpleUploadedFile(f"{n}.txt", b"x") for n in range(11)}
    assert_error(Client().post(capture_path(form), LEAD | files), 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before
    assert list(media_root.rglob("*.txt")) == []
