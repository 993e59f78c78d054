"""Intake review: a capture whose form default (location, treatment, lead source) was archived after the form was
made keeps its lead and opens an item; the queue's list, filters, resolve and dismiss, permissions and tenancy."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.capture.models import IntakeReviewItem
from apps.journeys.models import GENERAL_ENQUIRY, Journey, Treatment
from apps.patients.models import LeadSource, Location, Patient
from tests.capture.conftest import make_treatment, post_json, public_post, submissions_of
from tests.factories import LeadSourceFactory, LocationFactory, PatientFactory
from tests.helpers import assert_error

ITEM_KEYS = {
    "id",
    "status",
    "reasons",
    "patientId",
    "formId",
    "submissionId",
    "submittedFields",
    "resolutionNote",
    "resolvedAt",
    "resolvedByUserId",
    "createdAt",
}


@pytest.fixture
def defaults(owner):
    return {
        "location": LocationFactory(organization=owner.organization),
        "lead_source": LeadSourceFactory(organization=owner.organization),
        "treatment": make_treatment(owner.organization, "Implants"),
    }


@pytest.fixture
def form(create_form, defaults):
    return create_form(
        locationId=str(defaults["location"].id),
        leadSourceId=str(defaults["lead_source"].id),
        defaultTreatmentId=str(defaults["treatment"].id),
    )


def archive_defaults(defaults, *which: str) -> None:
    now = timezone.now()
    if "location" in which:
        Location.objects.unscoped().filter(id=defaults["location"].id).update(archived_at=now)
    if "lead_source" in which:
        LeadSource.objects.unscoped().filter(id=defaults["lead_source"].id).update(archived_at=now)
    if "treatment" in which:
        Treatment.objects.unscoped().filter(id=defaults["treatment"].id).update(active=False)


def review_item(owner, form, email: str) -> dict:
    """Post a lead to the form; returns the review item it opened (through the API)."""
    assert public_post(form, {"email": email}).status_code == 201
    patient = Patient.objects.for_org(owner.organization).get(email=email)
    items = owner.api_client().get(f"/intake-review?patientId={patient.id}").json()["items"]
    assert len(items) == 1
    return items[0]


def close(client, item, action: str, body=None):
    return post_json(client, f"/intake-review/{item['id']}/{action}", body)


def test_usable_defaults_open_no_item(owner, api, form, defaults):
    assert public_post(form, {"email": "a@example.com"}).status_code == 201
    patient = Patient.objects.for_org(owner.organization).get()
    assert (patient.location_id, patient.lead_source_id) == (defaults["location"].id, defaults["lead_source"].id)
    assert IntakeReviewItem.objects.for_org(owner.organization).count() == 0
    assert api.get("/intake-review").json()["total"] == 0


def test_archived_defaults_keep_the_lead_and_open_an_item(owner, api, form, defaults):
    archive_defaults(defaults, "location", "lead_source", "treatment")

    response = public_post(form, {"first_name": "Kept", "email": "kept@example.com"})

    assert response.status_code == 201
    patient = Patient.objects.for_org(owner.organization).get()
    assert patient.first_name == "Kept"
    assert (patient.location_id, patient.lead_source_id) == (None, None)
    journey = Journey.objects.for_org(owner.organization).get(patient=patient)
    assert journey.treatment.name == GENERAL_ENQUIRY
    listed = api.get("/intake-review")
    assert listed.status_code == 200, listed.content
    body = listed.json()
    assert (body["total"], body["limit"], body["offset"]) == (1, 25, 0)
    item = body["items"][0]
    assert set(item) == ITEM_KEYS
    submission = submissions_of(owner.organization).get()
    assert item | {"id": None, "createdAt": None} == {
        "id": None,
        "status": "open",
        "reasons": ["location_archived", "lead_source_archived", "treatment_archived"],
        "patientId": str(patient.id),
        "formId": form["id"],
        "submissionId": str(submission.id),
        "submittedFields": None,  # the lead's data is on the patient
        "resolutionNote": "",
        "resolvedAt": None,
        "resolvedByUserId": None,
        "createdAt": None,
    }


@pytest.mark.parametrize(
    ("which", "reason"),
    [
        ("location", "location_archived"),
        ("lead_source", "lead_source_archived"),
        ("treatment", "treatment_archived"),
    ],
)
def test_each_archived_default_is_its_own_reason(owner, form, defaults, which, reason):
    archive_defaults(defaults, which)
    assert review_item(owner, form, "one@example.com")["reasons"] == [reason]


def test_an_unknown_named_location_or_treatment_does_not_hide_an_archived_default(owner, form, defaults):
    archive_defaults(defaults, "location", "treatment")
    assert (
        public_post(form, {"email": "n@example.com", "location": "Nowhere", "treatment": "Nothing"}).status_code == 201
    )
    item = IntakeReviewItem.objects.for_org(owner.organization).get()
    assert item.reasons == ["location_archived", "treatment_archived"]


def test_a_named_location_and_treatment_replace_archived_defaults(owner, form, defaults):
    archive_defaults(defaults, "location", "treatment")
    other = LocationFactory(organization=owner.organization, name="Roma")
    whitening = make_treatment(owner.organization, "Whitening")

    assert (
        public_post(form, {"email": "n@example.com", "location": "roma", "treatment": "Whitening"}).status_code == 201
    )

    patient = Patient.objects.for_org(owner.organization).get()
    assert patient.location_id == other.id
    assert Journey.objects.for_org(owner.organization).get(patient=patient).treatment_id == whitening.id
    assert IntakeReviewItem.objects.for_org(owner.organization).count() == 0


def test_matching_an_archived_patient_opens_an_item(owner, create_form):
    PatientFactory(organization=owner.organization, email="gone@example.com", archived_at=timezone.now())
    form = create_form()
    assert review_item(owner, form, "gone@example.com")["reasons"] == ["patient_archived"]


# --- list ---------------------------------------------------------------------------------------------------------


def test_list_filters_by_status_and_patient(owner, api, form, defaults):
    archive_defaults(defaults, "location")
    first = review_item(owner, form, "first@example.com")
    second = review_item(owner, form, "second@example.com")
    assert close(api, first, "resolve", {"note": "Set the location by hand"}).status_code == 200

    open_items = api.get("/intake-review").json()
    resolved = api.get("/intake-review?status=resolved").json()
    dismissed = api.get("/intake-review?status=dismissed").json()
    of_second = api.get(f"/intake-review?patientId={second['patientId']}&status=open").json()
    of_first_open = api.get(f"/intake-review?patientId={first['patientId']}").json()
    paged = api.get("/intake-review?status=open&limit=1&offset=1").json()

    assert [item["id"] for item in open_items["items"]] == [second["id"]]
    assert [item["id"] for item in resolved["items"]] == [first["id"]]
    assert dismissed == {"items": [], "total": 0, "limit": 25, "offset": 0}
    assert [item["id"] for item in of_second["items"]] == [second["id"]]
    assert of_first_open["total"] == 0
    assert paged["items"] == [] and paged["total"] == 1


@pytest.mark.parametrize(
    ("query", "field"),
    [("status=closed", "status"), ("patientId=nope", "patientId"), ("limit=500", "limit")],
)
def test_list_query_validation(api, query, field):
    body = assert_error(api.get(f"/intake-review?{query}"), 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"]


# --- resolve and dismiss ----------------------------------------------------------------------------------------


def test_resolve_with_a_note_then_a_second_close_is_409(owner, api, form, defaults):
    archive_defaults(defaults, "treatment")
    item = review_item(owner, form, "r@example.com")

    response = close(api, item, "resolve", {"note": "Booked on implants by phone"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "resolved"
    assert body["resolutionNote"] == "Booked on implants by phone"
    assert body["resolvedByUserId"] == str(owner.user.id)
    assert body["resolvedAt"] is not None
    row = IntakeReviewItem.objects.for_org(owner.organization).get(id=item["id"])
    assert (row.status, row.resolved_by_id) == ("resolved", owner.user.id)
    assert_error(close(api, item, "resolve", {}), 409, "INTAKE_REVIEW_ITEM_CLOSED")
    assert_error(close(api, item, "dismiss", {}), 409, "INTAKE_REVIEW_ITEM_CLOSED")
    row.refresh_from_db()
    assert (row.status, row.resolution_note) == ("resolved", "Booked on implants by phone")


def test_dismiss_without_a_note(owner, api, form, defaults):
    archive_defaults(defaults, "lead_source")
    item = review_item(owner, form, "d@example.com")

    response = close(api, item, "dismiss", {})

    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["resolutionNote"]) == ("dismissed", "")
    assert_error(close(api, item, "dismiss", {}), 409, "INTAKE_REVIEW_ITEM_CLOSED")


@pytest.mark.parametrize(
    "body",
    [{"note": "x" * 1001}, {"note": None}, {"reason": "x"}],
    ids=["long-note", "null-note", "unknown-key"],
)
def test_close_validation_changes_nothing(owner, api, form, defaults, body):
    archive_defaults(defaults, "location")
    item = review_item(owner, form, "v@example.com")
    assert_error(close(api, item, "resolve", body), 400, "VALIDATION_ERROR")
    assert IntakeReviewItem.objects.for_org(owner.organization).get(id=item["id"]).status == "open"


def test_unknown_item_is_404(api):
    assert_error(post_json(api, f"/intake-review/{uuid.uuid4()}/resolve", {}), 404, "NOT_FOUND")


# --- permissions and tenancy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_are_refused(owner, member_factory, form, defaults, role):
    archive_defaults(defaults, "location")
    item = review_item(owner, form, "p@example.com")
    client = member_factory(role=role, organization=owner.organization).api_client()

    assert_error(client.get("/intake-review"), 403, "PERMISSION_DENIED")
    assert_error(close(client, item, "resolve", {}), 403, "PERMISSION_DENIED")
    assert_error(close(client, item, "dismiss", {}), 403, "PERMISSION_DENIED")
    assert IntakeReviewItem.objects.for_org(owner.organization).get(id=item["id"]).status == "open"


def test_analyst_reads_but_cannot_close(owner, member_factory, form, defaults):
    archive_defaults(defaults, "location")
    item = review_item(owner, form, "p@example.com")
    client = member_factory(role="analyst", organization=owner.organization).api_client()

    assert client.get("/intake-review").json()["total"] == 1
    assert_error(close(client, item, "resolve", {}), 403, "PERMISSION_DENIED")
    assert IntakeReviewItem.objects.for_org(owner.organization).get(id=item["id"]).status == "open"


@pytest.mark.parametrize("role", ["front_desk", "telesales"])
def test_front_office_can_close(owner, member_factory, form, defaults, role):
    archive_defaults(defaults, "location")
    item = review_item(owner, form, "p@example.com")
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert close(client, item, "resolve", {}).status_code == 200


def test_another_practices_item_is_404_and_not_listed(owner, outsider, form, defaults):
    archive_defaults(defaults, "location")
    item = review_item(owner, form, "t@example.com")
    theirs = outsider.api_client()

    assert_error(close(theirs, item, "resolve", {"note": "mine"}), 404, "NOT_FOUND")
    assert_error(close(theirs, item, "dismiss", {}), 404, "NOT_FOUND")
    assert theirs.get("/intake-review").json()["total"] == 0
    assert theirs.get(f"/intake-review?patientId={item['patientId']}").json()["total"] == 0
    row = IntakeReviewItem.objects.for_org(owner.organization).get(id=item["id"])
    assert (row.status, row.resolution_note) == ("open", "")


def test_list_queries_do_not_grow(owner, api, form, defaults, django_assert_max_num_queries):
    archive_defaults(defaults, "location")
    review_item(owner, form, "q0@example.com")
    assert api.get("/intake-review").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/intake-review").status_code == 200
    baseline = len(queries)  # read now: the next request resets the connection's query log
    for n in range(1, 8):
        review_item(owner, form, f"q{n}@example.com")

    with django_assert_max_num_queries(baseline):
        response = api.get("/intake-review")

    assert response.json()["total"] == 8
