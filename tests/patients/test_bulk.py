"""Bulk routes: POST /patients/bulk/tags, /bulk/location and /bulk/archive.

1 to 500 ids, at most 20 tag ids per add and per remove, ids of other practices ignored, merged records reported in
skipped, one event per changed patient, and set-based SQL: the query count does not grow with the number of ids.
"""

import json
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.events.models import Event
from apps.patients.models import Activity, Patient, PatientTag, Tag
from tests.factories import LocationFactory, PatientFactory, TagFactory
from tests.helpers import assert_error

TAGS = "/patients/bulk/tags"
LOCATION = "/patients/bulk/location"
ARCHIVE = "/patients/bulk/archive"
BULK_ROUTES = [TAGS, LOCATION, ARCHIVE]


# --- helpers -----------------------------------------------------------------------------------------------


def assert_validation_error(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    return body


def post_json(client: Client, path: str, data):
    return client.post(path, data, content_type="application/json")


def ids(patients) -> list[str]:
    return [str(p.id) for p in patients]


def make_patients(organization, count: int, **fields) -> list[Patient]:
    """Many patients in one INSERT (the factory would take a query each)."""
    rows = [
        Patient(
            organization=organization,
            first_name=f"Bulk{n}",
            last_name="Patient",
            email=f"bulk{n}.{uuid.uuid4().hex[:8]}@example.com",
            **fields,
        )
        for n in range(count)
    ]
    return Patient.objects.bulk_create(rows)


def snapshot(organization) -> dict:
    return {
        "patients": list(Patient.objects.for_org(organization).order_by("id").values()),
        "tag_links": sorted(PatientTag.objects.for_org(organization).values_list("patient_id", "tag_id")),
        "activities": list(Activity.objects.for_org(organization).order_by("id").values()),
        "events": list(Event.objects.for_org(organization).order_by("id").values_list("id", flat=True)),
    }


def links(organization) -> set[tuple]:
    return set(PatientTag.objects.for_org(organization).values_list("patient_id", "tag_id"))


def events(organization, type: str) -> list[Event]:
    return list(Event.objects.for_org(organization).filter(type=type).order_by("created_at", "id"))


def event_subjects(organization, type: str) -> list[str]:
    return sorted(e.subject_id for e in events(organization, type))


def bulk_result(response) -> dict:
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"updated", "skipped"}, body
    return body


def merged_into(owner, survivor, duplicate) -> None:
    response = post_json(
        owner.api_client(), f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}
    )
    assert response.status_code == 200, response.content


def query_count(client: Client, path: str, payload) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = post_json(client, path, payload)
    assert response.status_code == 200, response.content
    return len(captured.captured_queries)


# --- permissions common to every bulk route ---------------------------------------------------------------------


def _payload_for(route: str, organization) -> dict:
    patient = PatientFactory(organization=organization, status="patient")
    if route == TAGS:
        return {"patientIds": [str(patient.id)], "addTagIds": [str(TagFactory(organization=organization).id)]}
    if route == LOCATION:
        return {"patientIds": [str(patient.id)], "locationId": str(LocationFactory(organization=organization).id)}
    return {"patientIds": [str(patient.id)], "reason": "tidy up"}


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
@pytest.mark.parametrize("route", BULK_ROUTES)
def test_clinical_roles_get_403_on_every_bulk_route(owner, member_factory, route, role):
    member = member_factory(role=role, organization=owner.organization)
    payload = _payload_for(route, owner.organization)
    before = snapshot(owner.organization)

    response = post_json(member.api_client(), route, payload)

    assert_error(response, 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("route", BULK_ROUTES)
def test_analyst_cannot_write_in_bulk(owner, member_factory, route):
    analyst = member_factory(role="analyst", organization=owner.organization)
    payload = _payload_for(route, owner.organization)
    before = snapshot(owner.organization)

    response = post_json(analyst.api_client(), route, payload)

    assert_error(response, 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("route", [TAGS, LOCATION])
@pytest.mark.parametrize("role", ["manager", "front_desk", "telesales"])
def test_crm_roles_may_tag_and_relocate_in_bulk(owner, member_factory, route, role):
    member = member_factory(role=role, organization=owner.organization)
    payload = _payload_for(route, owner.organization)

    body = bulk_result(post_json(member.api_client(), route, payload))

    assert body == {"updated": 1, "skipped": []}


@pytest.mark.parametrize("route", BULK_ROUTES)
@pytest.mark.parametrize(
    ("patient_ids", "why"),
    [
        ([], "empty"),
        (None, "null"),
        ("not-a-list", "string"),
        (["not-a-uuid"], "bad-uuid"),
        ([str(uuid.uuid4())[:35]], "35-chars"),
        ([42], "number"),
    ],
)
def test_bad_patient_ids_are_400_on_every_bulk_route(owner, api, route, patient_ids, why):
    payload = _payload_for(route, owner.organization)
    payload["patientIds"] = patient_ids
    before = snapshot(owner.organization)

    response = post_json(api, route, payload)

    assert_validation_error(response, "patientIds")
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("route", BULK_ROUTES)
def test_patient_ids_are_required_on_every_bulk_route(owner, api, route):
    payload = _payload_for(route, owner.organization)
    del payload["patientIds"]

    response = post_json(api, route, payload)

    assert_validation_error(response, "patientIds")


@pytest.mark.parametrize("route", BULK_ROUTES)
def test_more_than_500_patient_ids_is_400_and_500_is_accepted(owner, api, route):
    patients = make_patients(owner.organization, 500, status="patient")
    payload = _payload_for(route, owner.organization)
    before = snapshot(owner.organization)

    too_many = post_json(api, route, {**payload, "patientIds": [*ids(patients), str(uuid.uuid4())]})

    assert_validation_error(too_many, "patientIds")
    assert snapshot(owner.organization) == before

    accepted = post_json(api, route, {**payload, "patientIds": ids(patients)})
    assert bulk_result(accepted)["updated"] == 500


@pytest.mark.parametrize("route", BULK_ROUTES)
@pytest.mark.parametrize("raw", ["", "[]", "null", '"x"', "{not json"])
def test_a_body_that_is_not_an_object_is_400(owner, api, route, raw):
    before = snapshot(owner.organization)

    response = api.post(route, raw, content_type="application/json")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert snapshot(owner.organization) == before


# --- bulk tags ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload_extra", "field"),
    [
        ({}, "addTagIds"),
        ({"addTagIds": [], "removeTagIds": []}, "addTagIds"),
        ({"addTagIds": None}, "addTagIds"),
        ({"addTagIds": ["not-a-uuid"]}, "addTagIds"),
        ({"removeTagIds": ["not-a-uuid"]}, "removeTagIds"),
        ({"addTagIds": "not-a-list"}, "addTagIds"),
        ({"addTagIds": [str(uuid.uuid4())], "tagIds": []}, "tagIds"),
    ],
)
def test_bulk_tags_with_bad_tag_ids_is_400(owner, api, payload_extra, field):
    patient = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = post_json(api, TAGS, {"patientIds": [str(patient.id)], **payload_extra})

    assert_validation_error(response, field)
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("field", ["addTagIds", "removeTagIds"])
def test_bulk_tags_allows_20_tag_ids_per_side_and_refuses_21(owner, api, field):
    org = owner.organization
    patient = PatientFactory(organization=org)
    tags = [TagFactory(organization=org) for _ in range(21)]
    before = snapshot(org)

    too_many = post_json(api, TAGS, {"patientIds": [str(patient.id)], field: [str(t.id) for t in tags]})

    assert_validation_error(too_many, field)
    assert snapshot(org) == before
    accepted = post_json(api, TAGS, {"patientIds": [str(patient.id)], field: [str(t.id) for t in tags[:20]]})
    assert accepted.status_code == 200, accepted.content


@pytest.mark.parametrize("field", ["addTagIds", "removeTagIds"])
def test_a_tag_of_another_practice_is_400_naming_the_field_and_nothing_changes(owner, outsider, api, field):
    org = owner.organization
    mine = TagFactory(organization=org)
    theirs = TagFactory(organization=outsider.organization)
    patients = [PatientFactory(organization=org) for _ in range(2)]
    before, theirs_before = snapshot(org), snapshot(outsider.organization)

    response = post_json(api, TAGS, {"patientIds": ids(patients), field: [str(mine.id), str(theirs.id)]})

    body = assert_validation_error(response, field)
    assert list(body["details"]["fields"]) == [field]
    assert str(mine.id) not in json.dumps(body["details"])
    assert snapshot(org) == before
    assert snapshot(outsider.organization) == theirs_before


def test_an_unknown_tag_id_is_400(owner, api):
    patient = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = post_json(api, TAGS, {"patientIds": [str(patient.id)], "addTagIds": [str(uuid.uuid4())]})

    assert_validation_error(response, "addTagIds")
    assert snapshot(owner.organization) == before


def test_bulk_tags_adds_and_emits_one_event_per_changed_patient(owner, api):
    org = owner.organization
    red, blue = TagFactory(organization=org), TagFactory(organization=org)
    already = PatientFactory(organization=org, tags=[red, blue])
    fresh = [PatientFactory(organization=org) for _ in range(3)]
    partly = PatientFactory(organization=org, tags=[red])
    targets = [already, *fresh, partly]

    body = bulk_result(post_json(api, TAGS, {"patientIds": ids(targets), "addTagIds": [str(red.id), str(blue.id)]}))

    assert body == {"updated": 4, "skipped": []}
    assert links(org) == {(p.id, t.id) for p in targets for t in (red, blue)}
    updates = events(org, "patient.updated")
    assert sorted(e.subject_id for e in updates) == sorted(ids([*fresh, partly]))
    for event in updates:
        assert event.data["changedFields"] == ["tags"]
        assert event.actor_type == "user"
        assert event.actor_id == str(owner.user.id)


def test_bulk_tags_removes(owner, api):
    org = owner.organization
    red, blue = TagFactory(organization=org), TagFactory(organization=org)
    both = PatientFactory(organization=org, tags=[red, blue])
    red_only = PatientFactory(organization=org, tags=[red])
    untagged = PatientFactory(organization=org)

    body = bulk_result(
        post_json(api, TAGS, {"patientIds": ids([both, red_only, untagged]), "removeTagIds": [str(red.id)]})
    )

    assert body == {"updated": 2, "skipped": []}
    assert links(org) == {(both.id, blue.id)}
    assert event_subjects(org, "patient.updated") == sorted(ids([both, red_only]))
    assert Tag.objects.for_org(org).filter(id=red.id).exists()


def test_bulk_tags_adds_and_removes_in_one_call(owner, api):
    org = owner.organization
    old, new = TagFactory(organization=org), TagFactory(organization=org)
    patients = [PatientFactory(organization=org, tags=[old]) for _ in range(2)]

    body = bulk_result(
        post_json(api, TAGS, {"patientIds": ids(patients), "addTagIds": [str(new.id)], "removeTagIds": [str(old.id)]})
    )

    assert body == {"updated": 2, "skipped": []}
    assert links(org) == {(p.id, new.id) for p in patients}
    assert len(events(org, "patient.updated")) == 2


def test_bulk_tags_is_idempotent(owner, api):
    org = owner.organization
    tag = TagFactory(organization=org)
    patients = [PatientFactory(organization=org) for _ in range(3)]
    payload = {"patientIds": ids(patients), "addTagIds": [str(tag.id)]}
    assert bulk_result(post_json(api, TAGS, payload))["updated"] == 3
    before = snapshot(org)

    again = bulk_result(post_json(api, TAGS, payload))

    assert again == {"updated": 0, "skipped": []}
    assert snapshot(org) == before
    assert PatientTag.objects.for_org(org).count() == 3
    assert len(events(org, "patient.updated")) == 3

    removal = {"patientIds": ids(patients), "removeTagIds": [str(tag.id)]}
    assert bulk_result(post_json(api, TAGS, removal))["updated"] == 3
    assert bulk_result(post_json(api, TAGS, removal)) == {"updated": 0, "skipped": []}
    assert len(events(org, "patient.updated")) == 6


def test_repeated_ids_in_one_call_count_once(owner, api):
    org = owner.organization
    tag = TagFactory(organization=org)
    patient = PatientFactory(organization=org)

    body = bulk_result(post_json(api, TAGS, {"patientIds": [str(patient.id)] * 3, "addTagIds": [str(tag.id)] * 2}))

    assert body == {"updated": 1, "skipped": []}
    assert PatientTag.objects.for_org(org).filter(patient=patient).count() == 1
    assert len(events(org, "patient.updated")) == 1


def test_bulk_tags_ignores_ids_outside_the_organization(owner, outsider, api):
    org = owner.organization
    tag = TagFactory(organization=org)
    mine = PatientFactory(organization=org)
    theirs = PatientFactory(organization=outsider.organization)
    theirs_before = snapshot(outsider.organization)

    body = bulk_result(
        post_json(
            api, TAGS, {"patientIds": [str(mine.id), str(theirs.id), str(uuid.uuid4())], "addTagIds": [str(tag.id)]}
        )
    )

    assert body == {"updated": 1, "skipped": []}
    assert links(org) == {(mine.id, tag.id)}
    assert snapshot(outsider.organization) == theirs_before
    assert not PatientTag.objects.unscoped().filter(patient=theirs).exists()


def test_bulk_tags_only_outside_ids_updates_nothing(owner, outsider, api):
    tag = TagFactory(organization=owner.organization)
    theirs = PatientFactory(organization=outsider.organization)
    before, theirs_before = snapshot(owner.organization), snapshot(outsider.organization)

    body = bulk_result(post_json(api, TAGS, {"patientIds": [str(theirs.id)], "addTagIds": [str(tag.id)]}))

    assert body == {"updated": 0, "skipped": []}
    assert snapshot(owner.organization) == before
    assert snapshot(outsider.organization) == theirs_before


def test_bulk_tags_skips_merged_patients_and_leaves_them_untouched(owner, api):
    org = owner.organization
    tag = TagFactory(organization=org)
    survivor = PatientFactory(organization=org)
    duplicate = PatientFactory(organization=org)
    merged_into(owner, survivor, duplicate)
    other = PatientFactory(organization=org)
    duplicate_before = Patient.objects.for_org(org).filter(id=duplicate.id).values().get()

    body = bulk_result(post_json(api, TAGS, {"patientIds": ids([duplicate, other]), "addTagIds": [str(tag.id)]}))

    assert body == {
        "updated": 1,
        "skipped": [{"patientId": str(duplicate.id), "mergedIntoPatientId": str(survivor.id)}],
    }
    assert links(org) == {(other.id, tag.id)}
    assert Patient.objects.for_org(org).filter(id=duplicate.id).values().get() == duplicate_before
    assert [e.subject_id for e in events(org, "patient.updated") if e.data.get("changedFields") == ["tags"]] == [
        str(other.id)
    ]


def test_bulk_tags_query_count_does_not_grow_with_the_number_of_ids(owner, api, django_assert_max_num_queries):
    org = owner.organization
    tags = [TagFactory(organization=org) for _ in range(20)]
    few = make_patients(org, 5)
    many = make_patients(org, 500)
    tag_ids = [str(t.id) for t in tags]

    few_queries = query_count(api, TAGS, {"patientIds": ids(few), "addTagIds": tag_ids})
    with django_assert_max_num_queries(12):
        response = post_json(api, TAGS, {"patientIds": ids(many), "addTagIds": tag_ids})

    assert bulk_result(response) == {"updated": 500, "skipped": []}
    assert PatientTag.objects.for_org(org).count() == 505 * 20
    assert len(events(org, "patient.updated")) == 505
    many_queries = query_count(api, TAGS, {"patientIds": ids(many), "removeTagIds": tag_ids})
    assert many_queries <= few_queries + 1
    assert PatientTag.objects.for_org(org).count() == 5 * 20


# --- bulk location --------------------------------------------------------------------------------------------------


def test_bulk_location_sets_and_counts_only_changed_patients(owner, api):
    org = owner.organization
    location = LocationFactory(organization=org)
    elsewhere = LocationFactory(organization=org)
    already = PatientFactory(organization=org, location=location)
    moved = PatientFactory(organization=org, location=elsewhere)
    unset = PatientFactory(organization=org, location=None)

    body = bulk_result(
        post_json(api, LOCATION, {"patientIds": ids([already, moved, unset]), "locationId": str(location.id)})
    )

    assert body == {"updated": 2, "skipped": []}
    assert set(
        Patient.objects.for_org(org)
        .filter(id__in=[already.id, moved.id, unset.id])
        .values_list("location_id", flat=True)
    ) == {location.id}
    updates = events(org, "patient.updated")
    assert sorted(e.subject_id for e in updates) == sorted(ids([moved, unset]))
    for event in updates:
        assert event.data["changedFields"] == ["locationId"]
    assert api.get(f"/patients/{unset.id}").json()["locationId"] == str(location.id)


def test_bulk_location_null_clears(owner, api):
    org = owner.organization
    location = LocationFactory(organization=org)
    placed = [PatientFactory(organization=org, location=location) for _ in range(2)]
    unplaced = PatientFactory(organization=org, location=None)

    body = bulk_result(post_json(api, LOCATION, {"patientIds": ids([*placed, unplaced]), "locationId": None}))

    assert body == {"updated": 2, "skipped": []}
    assert not Patient.objects.for_org(org).filter(location__isnull=False).exists()
    assert event_subjects(org, "patient.updated") == sorted(ids(placed))


def test_bulk_location_repeated_changes_nothing(owner, api):
    org = owner.organization
    location = LocationFactory(organization=org)
    patients = [PatientFactory(organization=org) for _ in range(3)]
    payload = {"patientIds": ids(patients), "locationId": str(location.id)}
    assert bulk_result(post_json(api, LOCATION, payload))["updated"] == 3
    before = snapshot(org)

    assert bulk_result(post_json(api, LOCATION, payload)) == {"updated": 0, "skipped": []}
    assert snapshot(org) == before


@pytest.mark.parametrize("whose", ["unknown", "foreign"])
def test_bulk_location_with_an_unknown_or_foreign_location_is_404(owner, outsider, api, whose):
    org = owner.organization
    current = LocationFactory(organization=org)
    patients = [PatientFactory(organization=org, location=current) for _ in range(2)]
    location_id = uuid.uuid4() if whose == "unknown" else LocationFactory(organization=outsider.organization).id
    before, theirs_before = snapshot(org), snapshot(outsider.organization)

    response = post_json(api, LOCATION, {"patientIds": ids(patients), "locationId": str(location_id)})

    assert_error(response, 404, "NOT_FOUND")
    assert snapshot(org) == before
    assert snapshot(outsider.organization) == theirs_before


@pytest.mark.parametrize(
    ("payload_extra", "field"),
    [({}, "locationId"), ({"locationId": "nope"}, "locationId"), ({"locationId": 7}, "locationId")],
)
def test_bulk_location_needs_a_location_id_or_null(owner, api, payload_extra, field):
    patient = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = post_json(api, LOCATION, {"patientIds": [str(patient.id)], **payload_extra})

    assert_validation_error(response, field)
    assert snapshot(owner.organization) == before


def test_bulk_location_ignores_outside_ids_and_skips_merged(owner, outsider, api):
    org = owner.organization
    location = LocationFactory(organization=org)
    survivor = PatientFactory(organization=org)
    duplicate = PatientFactory(organization=org)
    merged_into(owner, survivor, duplicate)
    mine = PatientFactory(organization=org)
    theirs = PatientFactory(organization=outsider.organization)
    theirs_before = snapshot(outsider.organization)

    body = bulk_result(
        post_json(api, LOCATION, {"patientIds": ids([mine, duplicate, theirs]), "locationId": str(location.id)})
    )

    assert body == {
        "updated": 1,
        "skipped": [{"patientId": str(duplicate.id), "mergedIntoPatientId": str(survivor.id)}],
    }
    assert Patient.objects.for_org(org).get(id=mine.id).location_id == location.id
    assert Patient.objects.for_org(org).get(id=duplicate.id).location_id is None
    assert snapshot(outsider.organization) == theirs_before


def test_bulk_location_query_count_does_not_grow_with_the_number_of_ids(owner, api, django_assert_max_num_queries):
    org = owner.organization
    location = LocationFactory(organization=org)
    few = make_patients(org, 5)
    many = make_patients(org, 500)

    few_queries = query_count(api, LOCATION, {"patientIds": ids(few), "locationId": str(location.id)})
    with CaptureQueriesContext(connection) as captured, django_assert_max_num_queries(12):
        response = post_json(api, LOCATION, {"patientIds": ids(many), "locationId": str(location.id)})

    assert bulk_result(response) == {"updated": 500, "skipped": []}
    assert len(captured.captured_queries) <= few_queries + 1
    assert len(events(org, "patient.updated")) == 505


# --- bulk archive ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "dentist"])
def test_bulk_archive_needs_the_patient_delete_permission(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    patients = [PatientFactory(organization=owner.organization, status="patient") for _ in range(2)]
    before = snapshot(owner.organization)

    response = post_json(member.api_client(), ARCHIVE, {"patientIds": ids(patients), "reason": "cleanup"})

    assert_error(response, 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


def test_a_manager_may_archive_in_bulk(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    patients = [PatientFactory(organization=owner.organization, status="patient") for _ in range(2)]

    body = bulk_result(post_json(manager.api_client(), ARCHIVE, {"patientIds": ids(patients)}))

    assert body == {"updated": 2, "skipped": []}
    assert Patient.objects.for_org(owner.organization).filter(status="archived").count() == 2


def test_bulk_archive_archives_the_listed_patients(owner, api):
    org = owner.organization
    statuses = ["enquiry", "patient", "inactive", "deceased"]
    listed = [PatientFactory(organization=org, status=s) for s in statuses]
    well_called = PatientFactory(organization=org, status="lead", contact_attempts=5)
    listed.append(well_called)
    unlisted = PatientFactory(organization=org, status="patient")

    body = bulk_result(post_json(api, ARCHIVE, {"patientIds": ids(listed)}))

    assert body == {"updated": 5, "skipped": []}
    rows = Patient.objects.for_org(org).filter(id__in=[p.id for p in listed])
    assert {row.status for row in rows} == {"archived"}
    assert all(row.archived_at is not None for row in rows)
    assert Patient.objects.for_org(org).get(id=unlisted.id).archived_at is None
    archived = events(org, "patient.archived")
    assert sorted(e.subject_id for e in archived) == sorted(ids(listed))
    assert Activity.objects.for_org(org).filter(kind="archived").count() == 5

    # The status each had is restored on unarchive.
    for patient, status in zip(listed, [*statuses, "lead"], strict=True):
        response = post_json(api, f"/patients/{patient.id}/unarchive", {})
        assert response.status_code == 200, response.content
        assert response.json()["status"] == status


def test_under_called_leads_without_reason_is_409_and_nothing_is_archived(owner, api):
    org = owner.organization
    under_called = [
        PatientFactory(organization=org, status="lead", contact_attempts=0),
        PatientFactory(organization=org, status="lead", contact_attempts=4),
    ]
    well_called = PatientFactory(organization=org, status="lead", contact_attempts=5)
    patient = PatientFactory(organization=org, status="patient")
    already = PatientFactory(organization=org, status="patient")
    assert post_json(api, f"/patients/{already.id}/archive", {}).status_code == 200
    before = snapshot(org)

    response = post_json(api, ARCHIVE, {"patientIds": ids([*under_called, well_called, patient, already])})

    body = assert_error(response, 409, "ARCHIVE_REASON_REQUIRED")
    assert sorted(body["details"]["underCalledLeads"]) == sorted(ids(under_called))
    assert len(body["details"]["underCalledLeads"]) == 2
    assert snapshot(org) == before
    assert Patient.objects.for_org(org).filter(status="archived").count() == 1


def test_under_called_leads_are_listed_only_from_the_selection(owner, outsider, api):
    org = owner.organization
    listed = PatientFactory(organization=org, status="lead")
    PatientFactory(organization=org, status="lead")  # under-called but not listed
    theirs = PatientFactory(organization=outsider.organization, status="lead")

    response = post_json(api, ARCHIVE, {"patientIds": ids([listed, theirs])})

    body = assert_error(response, 409, "ARCHIVE_REASON_REQUIRED")
    assert body["details"]["underCalledLeads"] == [str(listed.id)]


def test_bulk_archive_with_a_reason_archives_everyone(owner, api):
    org = owner.organization
    reason = "Campaign list cleanup 2024"
    leads = [PatientFactory(organization=org, status="lead", contact_attempts=n) for n in range(3)]
    others = [PatientFactory(organization=org, status="patient")]

    body = bulk_result(post_json(api, ARCHIVE, {"patientIds": ids([*leads, *others]), "reason": reason}))

    assert body == {"updated": 4, "skipped": []}
    assert Patient.objects.for_org(org).filter(status="archived", archived_at__isnull=False).count() == 4
    archived = events(org, "patient.archived")
    assert sorted(e.subject_id for e in archived) == sorted(ids([*leads, *others]))
    for event in archived:
        assert reason not in json.dumps(event.data)
        assert event.actor_id == str(owner.user.id)
    for patient in [*leads, *others]:
        entries = [e for e in api.get(f"/patients/{patient.id}/timeline").json()["items"] if e["kind"] == "archived"]
        assert [e["summary"] for e in entries] == [reason]


def test_bulk_archive_does_not_count_already_archived_ones(owner, api):
    org = owner.organization
    already = PatientFactory(organization=org, status="lead", contact_attempts=0)
    assert post_json(api, f"/patients/{already.id}/archive", {"reason": "earlier"}).status_code == 200
    fresh = PatientFactory(organization=org, status="patient")
    already_before = Patient.objects.for_org(org).filter(id=already.id).values().get()

    body = bulk_result(post_json(api, ARCHIVE, {"patientIds": ids([already, fresh])}))

    assert body == {"updated": 1, "skipped": []}
    assert Patient.objects.for_org(org).filter(id=already.id).values().get() == already_before
    assert event_subjects(org, "patient.archived") == sorted(ids([already, fresh]))
    assert len(events(org, "patient.archived")) == 2
    assert Activity.objects.for_org(org).filter(patient=already, kind="archived").count() == 1

    again = bulk_result(post_json(api, ARCHIVE, {"patientIds": ids([already, fresh])}))
    assert again == {"updated": 0, "skipped": []}
    assert len(events(org, "patient.archived")) == 2


def test_bulk_archive_skips_merged_and_ignores_outside_ids(owner, outsider, api):
    org = owner.organization
    survivor = PatientFactory(organization=org, status="patient")
    duplicate = PatientFactory(organization=org, status="lead")
    merged_into(owner, survivor, duplicate)
    mine = PatientFactory(organization=org, status="patient")
    theirs = PatientFactory(organization=outsider.organization, status="patient")
    theirs_before = snapshot(outsider.organization)
    duplicate_before = Patient.objects.for_org(org).filter(id=duplicate.id).values().get()

    body = bulk_result(post_json(api, ARCHIVE, {"patientIds": ids([mine, duplicate, theirs])}))

    assert body == {
        "updated": 1,
        "skipped": [{"patientId": str(duplicate.id), "mergedIntoPatientId": str(survivor.id)}],
    }
    assert Patient.objects.for_org(org).filter(id=duplicate.id).values().get() == duplicate_before
    assert Patient.objects.for_org(org).get(id=survivor.id).archived_at is None
    assert event_subjects(org, "patient.archived") == [str(mine.id)]
    assert snapshot(outsider.organization) == theirs_before


@pytest.mark.parametrize(("reason", "field"), [("", "reason"), (None, "reason"), ("x" * 2001, "reason")])
def test_bulk_archive_with_a_bad_reason_is_400(owner, api, reason, field):
    patient = PatientFactory(organization=owner.organization, status="patient")
    before = snapshot(owner.organization)

    response = post_json(api, ARCHIVE, {"patientIds": [str(patient.id)], "reason": reason})

    assert_validation_error(response, field)
    assert snapshot(owner.organization) == before


def test_bulk_archive_query_count_does_not_grow_with_the_number_of_ids(owner, api, django_assert_max_num_queries):
    org = owner.organization
    few = make_patients(org, 5, status="lead")
    many = make_patients(org, 500, status="lead")

    few_queries = query_count(api, ARCHIVE, {"patientIds": ids(few), "reason": "cleanup"})
    with CaptureQueriesContext(connection) as captured, django_assert_max_num_queries(12):
        response = post_json(api, ARCHIVE, {"patientIds": ids(many), "reason": "cleanup"})

    assert bulk_result(response) == {"updated": 500, "skipped": []}
    assert len(captured.captured_queries) <= few_queries + 1
    assert len(events(org, "patient.archived")) == 505
    assert Activity.objects.for_org(org).filter(kind="archived").count() == 505


def test_bulk_archive_409_check_is_set_based_too(owner, api, django_assert_max_num_queries):
    org = owner.organization
    many = make_patients(org, 500, status="lead")
    before_count = Patient.objects.for_org(org).filter(archived_at__isnull=False).count()

    with django_assert_max_num_queries(12):
        response = post_json(api, ARCHIVE, {"patientIds": ids(many)})

    body = assert_error(response, 409, "ARCHIVE_REASON_REQUIRED")
    assert sorted(body["details"]["underCalledLeads"]) == sorted(ids(many))
    assert Patient.objects.for_org(org).filter(archived_at__isnull=False).count() == before_count
