"""Capture-form settings (/settings/capture-forms): create and its validation, list paging and filters, read,
PATCH, the pause / resume / archive life-cycle, token regeneration, signing (enable, disable, rotate,
revoke-previous) with secrets shown once and stored encrypted, the submissions list, role permissions and tenancy."""

import hashlib
import uuid
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.capture.models import CaptureForm
from apps.core import crypto
from tests.capture.conftest import (
    BASE,
    capture_path,
    counts,
    form_path,
    form_row,
    make_treatment,
    patch_json,
    post_json,
    public_post,
    signed_post,
    submissions_of,
)
from tests.factories import LeadSourceFactory, LocationFactory
from tests.helpers import assert_error

FORM_KEYS = {
    "id",
    "name",
    "kind",
    "deliveryMode",
    "status",
    "captureUrl",
    "formPageUrl",
    "defaultTreatmentId",
    "leadSourceId",
    "locationId",
    "fieldMapping",
    "mappingConfirmedAt",
    "parkedSubmissions",
    "unmappedFields",
    "signing",
    "archivedAt",
    "createdAt",
    "updatedAt",
}
ACTIONS = (
    "pause",
    "resume",
    "archive",
    "token/regenerate",
    "signing/enable",
    "signing/disable",
    "signing/rotate",
    "signing/revoke-previous",
    "mapping/confirm",
)
LEAD = {"first_name": "Anna", "email": "anna@example.com"}


def assert_validation_error(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    return body


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def form_snapshot(form_id) -> dict:
    return CaptureForm.objects.unscoped().filter(id=form_id).values().get()


# --- create ---------------------------------------------------------------------------------------------------


def test_create_public_form_answers_the_form_without_a_secret(owner, api):
    response = post_json(api, BASE, {"name": "Website enquiry"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == FORM_KEYS | {"signingSecret"}
    assert body["signingSecret"] is None
    assert body["name"] == "Website enquiry"
    assert body["kind"] == "form_submissions"
    assert body["deliveryMode"] == "public"
    assert body["status"] == "active"
    assert body["captureUrl"].startswith(f"{settings.SVC_BASE_URL}/capture/cap_")
    token = body["captureUrl"].rsplit("/", 1)[1]
    assert body["formPageUrl"] == f"{settings.SVC_BASE_URL}/form-page/{token}"
    assert body["mappingConfirmedAt"] is None
    assert body["parkedSubmissions"] == 0
    assert body["unmappedFields"] == []
    assert body["fieldMapping"] == {}
    assert body["signing"] == {"enabled": False, "previousSecretExpiresAt": None}
    row = form_row(body)
    assert row.organization_id == owner.organization.id
    assert row.created_by_id == owner.user.id
    # The routing token is looked up by digest and kept only encrypted.
    assert row.token_digest == hashlib.sha256(token.encode()).hexdigest()
    assert token not in row.token_encrypted
    assert crypto.decrypt(row.token_encrypted) == token


def test_create_with_defaults_and_confirmed_mapping(owner, api):
    treatment = make_treatment(owner.organization)
    location = LocationFactory(organization=owner.organization)
    source = LeadSourceFactory(organization=owner.organization)

    response = post_json(
        api,
        BASE,
        {
            "name": "Call tracking",
            "kind": "incoming_calls",
            "defaultTreatmentId": str(treatment.id),
            "locationId": str(location.id),
            "leadSourceId": str(source.id),
            "fieldMapping": {"nome": "first_name", "extra": "custom:notes", "junk": "ignore"},
            "confirmMapping": True,
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "incoming_calls"
    assert body["formPageUrl"] is None  # only public form submissions have a hosted page
    assert body["defaultTreatmentId"] == str(treatment.id)
    assert body["locationId"] == str(location.id)
    assert body["leadSourceId"] == str(source.id)
    assert body["fieldMapping"] == {"nome": "first_name", "extra": "custom:notes", "junk": "ignore"}
    assert body["mappingConfirmedAt"] is not None


def test_mapping_keys_are_kept_verbatim(api):
    """Mapping keys are the sender's own field names: not camelized, not snake_cased."""
    mapping = {"your_email": "email", "firstName": "first_name", "Phone Number": "phone"}
    response = post_json(api, BASE, {"name": "Form", "fieldMapping": mapping})

    assert response.status_code == 201, response.content
    assert response.json()["fieldMapping"] == mapping
    assert form_row(response.json()).field_mapping == mapping
    assert api.get(form_path(response.json())).json()["fieldMapping"] == mapping


def test_signed_form_secret_is_shown_once_and_stored_encrypted(owner, api):
    response = post_json(api, BASE, {"name": "Signed", "deliveryMode": "signed", "confirmMapping": True})

    assert response.status_code == 201, response.content
    created = response.json()
    secret = created["signingSecret"]
    assert secret.startswith("capsec_")
    assert created["signing"] == {"enabled": True, "previousSecretExpiresAt": None}
    row = form_row(created)
    assert secret not in row.secret_encrypted
    assert crypto.decrypt(row.secret_encrypted) == secret
    # Reads never carry it again.
    read = api.get(form_path(created))
    listed = api.get(BASE)
    assert "signingSecret" not in read.json()
    assert secret not in read.content.decode()
    assert all("signingSecret" not in item for item in listed.json()["items"])
    assert secret not in listed.content.decode()
    # And it signs.
    assert signed_post(created, {"email": "a@example.com"}, secret=secret).status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"name": "x", "colour": "red"}, "colour", id="unknown-key"),
        pytest.param({}, "name", id="no-name"),
        pytest.param({"name": ""}, "name", id="empty-name"),
        pytest.param({"name": "x" * 201}, "name", id="long-name"),
        pytest.param({"name": "x", "kind": "outgoing_calls"}, "kind", id="bad-kind"),
        pytest.param({"name": "x", "deliveryMode": "secret"}, "deliveryMode", id="bad-mode"),
        pytest.param({"name": "x", "locationId": "not-a-uuid"}, "locationId", id="bad-uuid-location"),
        pytest.param({"name": "x", "leadSourceId": 12}, "leadSourceId", id="bad-uuid-source"),
        pytest.param({"name": "x", "defaultTreatmentId": "1234"}, "defaultTreatmentId", id="bad-uuid-treatment"),
        pytest.param({"name": "x", "locationId": str(uuid.uuid4())}, "locationId", id="unknown-location"),
        pytest.param({"name": "x", "fieldMapping": {"a": "surname"}}, "fieldMapping", id="bad-target"),
        pytest.param({"name": "x", "fieldMapping": {"a": "custom:"}}, "fieldMapping", id="empty-custom-key"),
        pytest.param({"name": "x", "fieldMapping": ["email"]}, "fieldMapping", id="mapping-not-object"),
        pytest.param({"name": "x", "fieldMapping": {"a": 5}}, "fieldMapping", id="target-not-string"),
        pytest.param({"name": "x", "confirmMapping": "perhaps"}, "confirmMapping", id="bad-boolean"),
    ],
)
def test_create_validation(owner, api, body, field):
    response = post_json(api, BASE, body)

    assert_validation_error(response, field)
    assert CaptureForm.objects.for_org(owner.organization).count() == 0


def test_create_refuses_an_empty_or_non_object_body(owner, api):
    assert_error(api.post(BASE, "", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(api.post(BASE, "[]", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(api.post(BASE, "{bad", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert CaptureForm.objects.for_org(owner.organization).count() == 0


@pytest.mark.parametrize("field", ["defaultTreatmentId", "locationId", "leadSourceId"])
def test_create_refuses_another_practices_records(owner, outsider, api, field):
    theirs = {
        "defaultTreatmentId": lambda: make_treatment(outsider.organization),
        "locationId": lambda: LocationFactory(organization=outsider.organization),
        "leadSourceId": lambda: LeadSourceFactory(organization=outsider.organization),
    }[field]()

    response = post_json(api, BASE, {"name": "x", field: str(theirs.id)})

    body = assert_validation_error(response, field)
    assert body["details"]["fields"][field] == ["does not exist in this practice"]
    assert CaptureForm.objects.for_org(owner.organization).count() == 0


@pytest.mark.parametrize("field", ["defaultTreatmentId", "locationId", "leadSourceId"])
def test_create_refuses_archived_or_inactive_defaults(owner, api, field):
    record = {
        "defaultTreatmentId": lambda: make_treatment(owner.organization, active=False),
        "locationId": lambda: LocationFactory(organization=owner.organization, archived_at=timezone.now()),
        "leadSourceId": lambda: LeadSourceFactory(organization=owner.organization, archived_at=timezone.now()),
    }[field]()

    response = post_json(api, BASE, {"name": "x", field: str(record.id)})

    body = assert_validation_error(response, field)
    assert body["details"]["fields"][field] == ["is archived"]
    assert CaptureForm.objects.for_org(owner.organization).count() == 0


# --- list and read -------------------------------------------------------------------------------------------


def test_list_pages_newest_first_and_leaves_archived_out(api, create_form):
    forms = [create_form(name=f"Form {n}") for n in range(4)]
    archived = create_form(name="Old")
    assert post_json(api, form_path(archived, "archive")).status_code == 200
    paused = forms[0]
    assert post_json(api, form_path(paused, "pause")).status_code == 200

    everything = api.get(BASE)
    page = api.get(f"{BASE}?limit=2&offset=1")
    with_archived = api.get(f"{BASE}?includeArchived=true")
    only_archived = api.get(f"{BASE}?status=archived")
    only_paused = api.get(f"{BASE}?status=paused")

    assert everything.status_code == 200
    body = everything.json()
    assert set(body) == {"items", "total", "limit", "offset"}
    assert [item["name"] for item in body["items"]] == ["Form 3", "Form 2", "Form 1", "Form 0"]
    assert (body["total"], body["limit"], body["offset"]) == (4, 25, 0)
    assert all(set(item) == FORM_KEYS for item in body["items"])
    assert page.json() | {"items": None} == {"items": None, "total": 4, "limit": 2, "offset": 1}
    assert [item["name"] for item in page.json()["items"]] == ["Form 2", "Form 1"]
    assert with_archived.json()["total"] == 5
    assert [item["id"] for item in only_archived.json()["items"]] == [archived["id"]]
    assert [item["id"] for item in only_paused.json()["items"]] == [paused["id"]]


@pytest.mark.parametrize(
    ("query", "field"),
    [("status=deleted", "status"), ("limit=0", "limit"), ("limit=101", "limit"), ("offset=-1", "offset")],
)
def test_list_query_validation(api, query, field):
    assert_validation_error(api.get(f"{BASE}?{query}"), field)


def test_list_unknown_query_parameter_is_refused(api):
    assert_error(api.get(f"{BASE}?colour=red"), 400, "VALIDATION_ERROR")


def test_read_one_form(api, create_form):
    form = create_form(name="Landing page")
    response = api.get(form_path(form))

    assert response.status_code == 200
    assert set(response.json()) == FORM_KEYS
    assert {key: response.json()[key] for key in ("id", "name", "captureUrl")} == {
        key: form[key] for key in ("id", "name", "captureUrl")
    }


def test_read_unknown_and_bad_ids(api):
    assert_error(api.get(form_path(uuid.uuid4())), 404, "NOT_FOUND")
    assert_validation_error(api.get(f"{BASE}/not-a-uuid"), "id")


def test_unauthenticated_requests_answer_401(create_form):
    form = create_form()
    anonymous = Client()
    assert_error(anonymous.get(BASE), 401, "UNAUTHENTICATED")
    assert_error(anonymous.get(form_path(form)), 401, "UNAUTHENTICATED")
    assert_error(post_json(anonymous, form_path(form, "archive")), 401, "UNAUTHENTICATED")
    assert form_row(form).status == "active"


# --- PATCH ------------------------------------------------------------------------------------------------------


def test_patch_updates_name_kind_defaults_and_mapping(owner, api, create_form):
    form = create_form()
    treatment = make_treatment(owner.organization)
    location = LocationFactory(organization=owner.organization)

    response = patch_json(
        api,
        form_path(form),
        {
            "name": "Renamed",
            "kind": "incoming_calls",
            "defaultTreatmentId": str(treatment.id),
            "locationId": str(location.id),
            "fieldMapping": {"tel": "phone"},
        },
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "Renamed"
    assert body["kind"] == "incoming_calls"
    assert body["defaultTreatmentId"] == str(treatment.id)
    assert body["locationId"] == str(location.id)
    assert body["fieldMapping"] == {"tel": "phone"}
    assert body["captureUrl"] == form["captureUrl"]
    row = form_row(form)
    assert (row.name, row.kind, row.default_treatment_id, row.location_id) == (
        "Renamed",
        "incoming_calls",
        treatment.id,
        location.id,
    )
    # A partial PATCH leaves the rest alone, and null clears a default.
    cleared = patch_json(api, form_path(form), {"locationId": None})
    assert cleared.status_code == 200
    assert cleared.json()["locationId"] is None
    assert cleared.json()["name"] == "Renamed"
    assert cleared.json()["kind"] == "incoming_calls"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"deliveryMode": "signed"}, "deliveryMode", id="mode-goes-through-signing-routes"),
        pytest.param({"confirmMapping": True}, "confirmMapping", id="confirm-goes-through-its-route"),
        pytest.param({"status": "paused"}, "status", id="status-goes-through-actions"),
        pytest.param({"kind": "sms"}, "kind", id="bad-kind"),
        pytest.param({"name": ""}, "name", id="empty-name"),
        pytest.param({"fieldMapping": {"x": "nonsense"}}, "fieldMapping", id="bad-target"),
        pytest.param({"defaultTreatmentId": "nope"}, "defaultTreatmentId", id="bad-uuid"),
    ],
)
def test_patch_validation_changes_nothing(api, create_form, body, field):
    form = create_form()
    before = form_snapshot(form["id"])

    assert_validation_error(patch_json(api, form_path(form), body), field)
    assert form_snapshot(form["id"]) == before


def test_patch_refuses_archived_defaults_and_other_practices_records(owner, outsider, api, create_form):
    form = create_form()
    before = form_snapshot(form["id"])
    archived_source = LeadSourceFactory(organization=owner.organization, archived_at=timezone.now())
    their_location = LocationFactory(organization=outsider.organization)
    inactive = make_treatment(owner.organization, "Whitening", active=False)

    assert_validation_error(patch_json(api, form_path(form), {"leadSourceId": str(archived_source.id)}), "leadSourceId")
    assert_validation_error(patch_json(api, form_path(form), {"locationId": str(their_location.id)}), "locationId")
    assert_validation_error(
        patch_json(api, form_path(form), {"defaultTreatmentId": str(inactive.id)}), "defaultTreatmentId"
    )
    assert form_snapshot(form["id"]) == before


# --- life-cycle ------------------------------------------------------------------------------------------------


def test_pause_and_resume(owner, api, create_form):
    form = create_form()

    paused = post_json(api, form_path(form, "pause"))
    assert paused.status_code == 200, paused.content
    assert paused.json()["status"] == "paused"
    before = counts(owner.organization)
    refused = public_post(form, LEAD)
    assert_error(refused, 404, "NOT_FOUND")
    assert counts(owner.organization) == before

    resumed = post_json(api, form_path(form, "resume"))
    assert resumed.status_code == 200
    assert resumed.json()["status"] == "active"
    assert resumed.json()["archivedAt"] is None
    assert public_post(form, LEAD).status_code == 201


def test_archive_is_final(owner, api, create_form):
    form = create_form()

    archived = post_json(api, form_path(form, "archive"))
    assert archived.status_code == 200
    assert archived.json()["status"] == "archived"
    assert archived.json()["archivedAt"] is not None
    before_form = form_snapshot(form["id"])
    before = counts(owner.organization)

    assert_error(patch_json(api, form_path(form), {"name": "Again"}), 409, "CAPTURE_FORM_ARCHIVED")
    for action in ("pause", "resume", "archive", "token/regenerate", "signing/enable", "signing/disable"):
        assert_error(post_json(api, form_path(form, action)), 409, "CAPTURE_FORM_ARCHIVED")
    assert_error(public_post(form, LEAD), 404, "NOT_FOUND")
    assert form_snapshot(form["id"]) == before_form
    assert counts(owner.organization) == before
    # Still readable.
    assert api.get(form_path(form)).json()["status"] == "archived"


def test_an_archived_forms_parked_leads_can_still_be_confirmed_and_replayed(
    owner, api, create_form, django_capture_on_commit_callbacks
):
    form = create_form(confirmMapping=False)
    assert public_post(form, LEAD).status_code == 201
    assert post_json(api, form_path(form, "archive")).status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        confirmed = post_json(api, form_path(form, "mapping/confirm"), {})

    assert confirmed.status_code == 200, confirmed.content
    assert confirmed.json()["replaying"] == 1
    assert submissions_of(owner.organization).get().status == "processed"
    assert confirmed.json()["form"]["status"] == "archived"


def test_regenerated_token_replaces_the_old_url_at_once(owner, api, create_form):
    form = create_form()
    old_digest = form_row(form).token_digest

    response = post_json(api, form_path(form, "token/regenerate"))

    assert response.status_code == 200, response.content
    renewed = response.json()
    assert renewed["captureUrl"] != form["captureUrl"]
    assert "signingSecret" not in renewed
    assert form_row(form).token_digest != old_digest
    before = counts(owner.organization)
    assert_error(public_post(form, LEAD), 404, "NOT_FOUND")
    assert counts(owner.organization) == before
    assert public_post(renewed, LEAD).status_code == 201
    assert api.get(form_path(form)).json()["captureUrl"] == renewed["captureUrl"]


# --- signing ---------------------------------------------------------------------------------------------------


def test_enable_signing_shows_a_secret_once_and_stops_unsigned_posts(owner, api, create_form):
    form = create_form()
    assert public_post(form, LEAD).status_code == 201

    response = post_json(api, form_path(form, "signing/enable"))

    assert response.status_code == 200, response.content
    body = response.json()
    secret = body["signingSecret"]
    assert secret.startswith("capsec_")
    assert body["deliveryMode"] == "signed"
    assert body["signing"] == {"enabled": True, "previousSecretExpiresAt": None}
    assert body["formPageUrl"] is None
    assert secret not in form_row(form).secret_encrypted
    assert crypto.decrypt(form_row(form).secret_encrypted) == secret
    assert "signingSecret" not in api.get(form_path(form)).json()

    before = counts(owner.organization)
    assert_error(public_post(form, LEAD), 415, "UNSUPPORTED_MEDIA_TYPE")
    unsigned_json = Client().post(capture_path(form), LEAD, content_type="application/json")
    assert_error(unsigned_json, 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before
    assert signed_post(form, LEAD | {"email": "b@example.com"}, secret=secret).status_code == 201


def test_enabling_again_replaces_the_secret_without_overlap(api, create_form):
    form = create_form(deliveryMode="signed")
    first = form["signingSecret"]

    second = post_json(api, form_path(form, "signing/enable")).json()["signingSecret"]

    assert second != first
    assert_error(signed_post(form, LEAD, secret=first), 401, "CAPTURE_SIGNATURE_INVALID")
    assert signed_post(form, LEAD, secret=second).status_code == 201


def test_disable_signing_returns_to_public_mode(owner, api, create_form):
    form = create_form(deliveryMode="signed")

    response = post_json(api, form_path(form, "signing/disable"))

    assert response.status_code == 200, response.content
    assert response.json()["deliveryMode"] == "public"
    assert response.json()["signing"] == {"enabled": False, "previousSecretExpiresAt": None}
    assert "signingSecret" not in response.json()
    row = form_row(form)
    assert (row.secret_encrypted, row.previous_secret_encrypted, row.previous_secret_expires_at) == ("", "", None)
    assert public_post(form, LEAD).status_code == 201
    assert_error(post_json(api, form_path(form, "signing/rotate")), 409, "CAPTURE_SIGNING_NOT_ENABLED")


def test_rotate_on_a_public_form_is_409(api, create_form):
    form = create_form()
    before = form_snapshot(form["id"])
    assert_error(post_json(api, form_path(form, "signing/rotate")), 409, "CAPTURE_SIGNING_NOT_ENABLED")
    assert form_snapshot(form["id"]) == before


def test_rotate_keeps_the_previous_secret_for_24_hours_until_revoked(owner, api, create_form):
    form = create_form(deliveryMode="signed")
    old = form["signingSecret"]

    response = post_json(api, form_path(form, "signing/rotate"))

    assert response.status_code == 200, response.content
    body = response.json()
    new = body["signingSecret"]
    assert new != old
    expires = parse_time(body["signing"]["previousSecretExpiresAt"])
    assert timedelta(hours=23, minutes=59) < expires - timezone.now() <= timedelta(hours=24)
    row = form_row(form)
    assert old not in row.previous_secret_encrypted and new not in row.secret_encrypted
    assert crypto.decrypt(row.previous_secret_encrypted) == old
    read = api.get(form_path(form)).json()
    assert "signingSecret" not in read
    assert read["signing"]["previousSecretExpiresAt"] == body["signing"]["previousSecretExpiresAt"]
    assert signed_post(form, {"email": "old@example.com"}, secret=old).status_code == 201
    assert signed_post(form, {"email": "new@example.com"}, secret=new).status_code == 201

    revoked = post_json(api, form_path(form, "signing/revoke-previous"))

    assert revoked.status_code == 200, revoked.content
    assert revoked.json()["signing"] == {"enabled": True, "previousSecretExpiresAt": None}
    assert "signingSecret" not in revoked.json()
    before = counts(owner.organization)
    assert_error(signed_post(form, {"email": "late@example.com"}, secret=old), 401, "CAPTURE_SIGNATURE_INVALID")
    assert counts(owner.organization) == before
    assert signed_post(form, {"email": "new2@example.com"}, secret=new).status_code == 201
    assert_error(post_json(api, form_path(form, "signing/revoke-previous")), 409, "CAPTURE_NO_PREVIOUS_SECRET")


def test_previous_secret_stops_when_its_overlap_ends(owner, api, create_form):
    form = create_form(deliveryMode="signed")
    old = form["signingSecret"]
    new = post_json(api, form_path(form, "signing/rotate")).json()["signingSecret"]
    CaptureForm.objects.unscoped().filter(id=form["id"]).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )

    before = counts(owner.organization)
    assert_error(signed_post(form, {"email": "old@example.com"}, secret=old), 401, "CAPTURE_SIGNATURE_INVALID")
    assert counts(owner.organization) == before
    assert signed_post(form, {"email": "new@example.com"}, secret=new).status_code == 201
    assert_error(post_json(api, form_path(form, "signing/revoke-previous")), 409, "CAPTURE_NO_PREVIOUS_SECRET")


def test_revoke_previous_without_one_is_409(api, create_form):
    form = create_form(deliveryMode="signed")
    before = form_snapshot(form["id"])
    assert_error(post_json(api, form_path(form, "signing/revoke-previous")), 409, "CAPTURE_NO_PREVIOUS_SECRET")
    assert form_snapshot(form["id"]) == before


# --- submissions list -----------------------------------------------------------------------------------------


def test_submissions_list_shows_field_names_and_outcomes_not_values(owner, api, create_form):
    form = create_form()
    assert public_post(form, {"first_name": "Eva", "email": "eva@example.com", "pet": "cat"}).status_code == 201
    assert public_post(form, {"first_name": "Nobody"}).status_code == 201
    other = create_form(name="Other")
    assert public_post(other, {"email": "other@example.com"}).status_code == 201

    response = api.get(form_path(form, "submissions"))

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["total"], body["limit"], body["offset"]) == (2, 25, 0)
    rejected, processed = body["items"]  # newest first
    assert set(processed) == {
        "id",
        "deliveryId",
        "status",
        "fieldNames",
        "patientId",
        "patientCreated",
        "journeyId",
        "problem",
        "attempts",
        "createdAt",
        "processedAt",
    }
    assert processed["status"] == "processed"
    assert processed["fieldNames"] == ["email", "first_name", "pet"]
    assert processed["patientId"] is not None and processed["patientCreated"] is True
    assert processed["journeyId"] is not None
    assert "eva@example.com" not in response.content.decode()
    assert rejected["status"] == "rejected"
    assert rejected["patientId"] is None
    assert rejected["problem"]
    only_rejected = api.get(form_path(form, "submissions") + "?status=rejected").json()
    assert [item["id"] for item in only_rejected["items"]] == [rejected["id"]]
    assert_validation_error(api.get(form_path(form, "submissions") + "?status=lost"), "status")


# --- permissions -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_settings_readers_read_but_cannot_write(owner, member_factory, create_form, role):
    form = create_form()
    client = member_factory(role=role, organization=owner.organization).api_client()
    before_form = form_snapshot(form["id"])
    before = counts(owner.organization)

    assert client.get(BASE).status_code == 200
    assert client.get(form_path(form)).status_code == 200
    assert client.get(form_path(form, "submissions")).status_code == 200
    assert_error(post_json(client, BASE, {"name": "Mine"}), 403, "PERMISSION_DENIED")
    assert_error(patch_json(client, form_path(form), {"name": "Mine"}), 403, "PERMISSION_DENIED")
    for action in ACTIONS:
        assert_error(post_json(client, form_path(form, action)), 403, "PERMISSION_DENIED")

    assert form_snapshot(form["id"]) == before_form
    assert counts(owner.organization) == before


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_cannot_even_read(owner, member_factory, create_form, role):
    form = create_form()
    client = member_factory(role=role, organization=owner.organization).api_client()

    assert_error(client.get(BASE), 403, "PERMISSION_DENIED")
    assert_error(client.get(form_path(form)), 403, "PERMISSION_DENIED")
    assert_error(client.get(form_path(form, "submissions")), 403, "PERMISSION_DENIED")


def test_manager_can_write(owner, member_factory, create_form):
    form = create_form()
    client = member_factory(role="manager", organization=owner.organization).api_client()
    assert post_json(client, BASE, {"name": "Manager's"}).status_code == 201
    assert post_json(client, form_path(form, "pause")).status_code == 200


# --- tenancy -------------------------------------------------------------------------------------------------------


def test_another_practices_form_is_404_on_every_route(owner, outsider, create_form):
    form = create_form(deliveryMode="signed")
    assert public_post(form, LEAD).status_code == 415  # signed: just proving the form exists and answers
    theirs = outsider.api_client()
    before_form = form_snapshot(form["id"])
    before = counts(owner.organization)

    assert_error(theirs.get(form_path(form)), 404, "NOT_FOUND")
    assert_error(theirs.get(form_path(form, "submissions")), 404, "NOT_FOUND")
    assert_error(patch_json(theirs, form_path(form), {"name": "Stolen"}), 404, "NOT_FOUND")
    for action in ACTIONS:
        assert_error(post_json(theirs, form_path(form, action)), 404, "NOT_FOUND")
    assert_error(post_json(theirs, form_path(form, "mapping/confirm"), {"fieldMapping": {}}), 404, "NOT_FOUND")
    listed = theirs.get(f"{BASE}?includeArchived=true").json()
    assert listed["total"] == 0 and listed["items"] == []

    assert form_snapshot(form["id"]) == before_form
    assert counts(owner.organization) == before


# --- query counts -------------------------------------------------------------------------------------------------


def queries_of(client, path: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(queries)


def test_list_queries_do_not_grow_with_forms_or_parked_submissions(
    owner, api, create_form, django_assert_max_num_queries
):
    form = create_form(confirmMapping=False)
    assert public_post(form, {"nome": "A"}).status_code == 201
    assert api.get(BASE).status_code == 200  # warm the credential's once-a-while writes
    one = queries_of(api, BASE)
    for n in range(6):
        more = create_form(name=f"Form {n}", confirmMapping=False)
        for m in range(3):
            assert public_post(more, {f"field{m}": "x", "email": f"{n}.{m}@example.com"}).status_code == 201

    with django_assert_max_num_queries(one):
        response = api.get(BASE)

    assert response.json()["total"] == 7
    assert sum(item["parkedSubmissions"] for item in response.json()["items"]) == 19


def test_submissions_list_queries_do_not_grow(owner, api, create_form, django_assert_max_num_queries):
    form = create_form()
    assert public_post(form, {"email": "first@example.com"}).status_code == 201
    path = form_path(form, "submissions")
    assert api.get(path).status_code == 200
    one = queries_of(api, path)
    for n in range(8):
        assert public_post(form, {"email": f"s{n}@example.com"}).status_code == 201

    with django_assert_max_num_queries(one):
        response = api.get(path)

    assert response.json()["total"] == 9
