"""One patient's life-cycle: archive (the five-attempt reason rule), unarchive, contact attempts, merge and the
right to erasure, with their events, timeline entries and the hooks later areas register into.

Every refusal also checks that the practice's data (patients, tag links, timeline, consents, events) is unchanged.
"""

import json
import uuid

import pytest
from django.test import Client

from apps.events.models import Event
from apps.patients import hooks
from apps.patients.hooks import ErasureResult
from apps.patients.models import Activity, MarketingConsent, Patient, PatientTag, Tag
from tests.factories import PatientFactory, TagFactory
from tests.helpers import assert_error

PATIENT_MERGED = "PATIENT_MERGED"
NON_OWNER_ROLES = ["manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse"]


# --- helpers -----------------------------------------------------------------------------------------------


def assert_validation_error(response, *fields: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    for name in fields:
        assert name in body["details"]["fields"], body
    return body


def post_json(client: Client, path: str, data=None, **extra):
    return client.post(path, {} if data is None else data, content_type="application/json", **extra)


def post_raw(client: Client, path: str, raw: str):
    return client.post(path, raw, content_type="application/json")


def patch_json(client: Client, path: str, data):
    return client.patch(path, data, content_type="application/json")


def url(patient, action: str = "") -> str:
    patient_id = patient if isinstance(patient, (str, uuid.UUID)) else patient.id
    return f"/patients/{patient_id}" + (f"/{action}" if action else "")


def snapshot(organization) -> dict:
    """Everything of a practice these routes may touch."""
    return {
        "patients": list(Patient.objects.for_org(organization).order_by("id").values()),
        "tag_links": sorted(PatientTag.objects.for_org(organization).values_list("patient_id", "tag_id")),
        "tags": sorted(Tag.objects.for_org(organization).values_list("id", flat=True)),
        "activities": list(Activity.objects.for_org(organization).order_by("id").values()),
        "consents": list(MarketingConsent.objects.for_org(organization).order_by("id").values()),
        "events": list(Event.objects.for_org(organization).order_by("id").values_list("id", flat=True)),
    }


def events_of(organization, patient, type: str | None = None) -> list[Event]:
    queryset = Event.objects.for_org(organization).filter(subject_type="patient", subject_id=str(patient.id))
    if type:
        queryset = queryset.filter(type=type)
    return list(queryset.order_by("created_at", "id"))


def refreshed(patient) -> Patient:
    return Patient.objects.for_org(patient.organization_id).get(id=patient.id)


def timeline(client: Client, patient) -> list[dict]:
    response = client.get(url(patient, "timeline"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items", "nextCursor"}
    return body["items"]


def log_attempt(client: Client, patient, channel: str = "phone", outcome: str = "no_answer"):
    response = post_json(client, url(patient, "contact-attempts"), {"channel": channel, "outcome": outcome})
    assert response.status_code == 200, response.content
    return response.json()


def merge(client: Client, survivor, duplicate):
    return post_json(client, url(survivor, "merge"), {"duplicatePatientId": str(duplicate.id)})


def merged_pair(owner):
    survivor = PatientFactory(organization=owner.organization, status="patient")
    duplicate = PatientFactory(organization=owner.organization, status="lead")
    response = merge(owner.api_client(), survivor, duplicate)
    assert response.status_code == 200, response.content
    return survivor, duplicate


@pytest.fixture
def restore_hooks():
    """Test hooks registered through hooks.on_erase / hooks.on_merge are removed again afterwards."""
    erasure, merge_hooks = list(hooks._erasure_hooks), list(hooks._merge_hooks)
    yield
    hooks._erasure_hooks[:] = erasure
    hooks._merge_hooks[:] = merge_hooks


# --- archive: body ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("", id="no-body"),
        pytest.param("[]", id="empty-list"),
        pytest.param('[{"reason": "moved away"}]', id="list-of-object"),
        pytest.param('"moved away"', id="string"),
        pytest.param("null", id="null"),
    ],
)
def test_archive_needs_a_body_object(owner, api, raw):
    patient = PatientFactory(organization=owner.organization, status="patient")
    before = snapshot(owner.organization)

    response = post_raw(api, url(patient, "archive"), raw)

    assert_error(response, 400, "VALIDATION_ERROR")
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"reason": ""}, "reason"),
        ({"reason": "   "}, "reason"),
        ({"reason": ["moved"]}, "reason"),
        ({"reason": None}, "reason"),
        ({"reason": "x" * 2001}, "reason"),
        ({"reasn": "moved away"}, "reasn"),
    ],
)
def test_archive_with_a_bad_reason_is_400_naming_it(owner, api, payload, field):
    patient = PatientFactory(organization=owner.organization, status="patient")
    before = snapshot(owner.organization)

    response = post_json(api, url(patient, "archive"), payload)

    body = assert_validation_error(response, field)
    assert list(body["details"]["fields"]) == [field]
    assert snapshot(owner.organization) == before


# --- archive: the reason rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("attempts", [0, 1, 4])
def test_under_called_lead_without_reason_is_409_and_nothing_changes(owner, api, attempts):
    lead = PatientFactory(organization=owner.organization, status="lead", contact_attempts=attempts)
    before = snapshot(owner.organization)

    response = post_json(api, url(lead, "archive"), {})

    assert_error(response, 409, "ARCHIVE_REASON_REQUIRED")
    assert snapshot(owner.organization) == before
    assert refreshed(lead).archived_at is None
    assert refreshed(lead).status == "lead"


def test_archive_with_a_reason_archives_and_keeps_the_reason_on_the_timeline_only(owner, api):
    lead = PatientFactory(organization=owner.organization, status="lead", contact_attempts=0)
    reason = "Booked with another practice nearby"

    response = post_json(api, url(lead, "archive"), {"reason": reason})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == str(lead.id)
    assert body["status"] == "archived"
    assert body["archivedAt"] is not None
    assert body["archivedAt"].endswith("Z")
    assert body["mergedIntoPatientId"] is None
    row = refreshed(lead)
    assert row.status == "archived"
    assert row.archived_at is not None

    entries = [entry for entry in timeline(api, lead) if entry["kind"] == "archived"]
    assert len(entries) == 1
    assert entries[0]["summary"] == reason
    assert entries[0]["actorUserId"] == str(owner.user.id)

    archived_events = events_of(owner.organization, lead, "patient.archived")
    assert len(archived_events) == 1
    event = archived_events[0]
    assert event.actor_type == "user"
    assert event.actor_id == str(owner.user.id)
    assert reason not in json.dumps(event.data)
    assert "Booked" not in json.dumps(event.data)


def test_lead_with_five_logged_attempts_archives_without_reason(owner, api):
    lead = PatientFactory(organization=owner.organization, status="lead")
    for attempt in range(1, 5):
        assert log_attempt(api, lead)["contactAttempts"] == attempt

    still_under_called = post_json(api, url(lead, "archive"), {})
    assert_error(still_under_called, 409, "ARCHIVE_REASON_REQUIRED")
    assert refreshed(lead).archived_at is None

    assert log_attempt(api, lead)["contactAttempts"] == 5
    response = post_json(api, url(lead, "archive"), {})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "archived"
    assert response.json()["archivedAt"] is not None
    entries = [entry for entry in timeline(api, lead) if entry["kind"] == "archived"]
    assert len(entries) == 1
    assert entries[0]["summary"] == ""
    assert len(events_of(owner.organization, lead, "patient.archived")) == 1


@pytest.mark.parametrize("status", ["enquiry", "patient", "inactive", "deceased"])
def test_a_non_lead_archives_without_reason(owner, api, status):
    patient = PatientFactory(organization=owner.organization, status=status, contact_attempts=0)

    response = post_json(api, url(patient, "archive"), {})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "archived"
    assert refreshed(patient).archived_at is not None
    assert refreshed(patient).status == "archived"
    assert len(events_of(owner.organization, patient, "patient.archived")) == 1


def test_repeating_archive_is_harmless(owner, api):
    patient = PatientFactory(organization=owner.organization, status="patient")
    first = post_json(api, url(patient, "archive"), {"reason": "first"})
    assert first.status_code == 200, first.content
    before = snapshot(owner.organization)

    again = post_json(api, url(patient, "archive"), {"reason": "second"})
    without_reason = post_json(api, url(patient, "archive"), {})

    for response in (again, without_reason):
        assert response.status_code == 200, response.content
        assert response.json()["status"] == "archived"
        assert response.json()["archivedAt"] == first.json()["archivedAt"]
    assert snapshot(owner.organization) == before
    assert len(events_of(owner.organization, patient, "patient.archived")) == 1
    assert [e["summary"] for e in timeline(api, patient) if e["kind"] == "archived"] == ["first"]


def test_archiving_a_merged_patient_is_409_patient_merged(owner, api):
    survivor, duplicate = merged_pair(owner)
    before = snapshot(owner.organization)

    response = post_json(api, url(duplicate, "archive"), {"reason": "duplicate"})

    body = assert_error(response, 409, PATIENT_MERGED)
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert snapshot(owner.organization) == before


def test_archive_of_another_practices_patient_is_404(owner, outsider, api):
    theirs = PatientFactory(organization=outsider.organization, status="patient")
    before = snapshot(outsider.organization)

    response = post_json(api, url(theirs, "archive"), {"reason": "not mine"})

    assert_error(response, 404, "NOT_FOUND")
    assert snapshot(outsider.organization) == before


def test_archive_is_refused_to_clinical_roles(owner, member_factory):
    dentist = member_factory(role="dentist", organization=owner.organization)
    patient = PatientFactory(organization=owner.organization, status="patient")
    before = snapshot(owner.organization)

    response = post_json(dentist.api_client(), url(patient, "archive"), {"reason": "x"})

    assert_error(response, 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


# --- unarchive -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["lead", "enquiry", "patient", "inactive", "deceased"])
def test_unarchive_restores_the_previous_status(owner, api, status):
    patient = PatientFactory(organization=owner.organization, status=status)
    archived = post_json(api, url(patient, "archive"), {"reason": "paused"})
    assert archived.status_code == 200, archived.content

    response = post_json(api, url(patient, "unarchive"), {})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == status
    assert body["archivedAt"] is None
    row = refreshed(patient)
    assert row.status == status
    assert row.archived_at is None

    updates = events_of(owner.organization, patient, "patient.updated")
    assert len(updates) == 1
    assert updates[0].data["action"] == "unarchived"
    assert set(updates[0].data["changedFields"]) == {"status", "archivedAt"}
    assert [e["kind"] for e in timeline(api, patient)][:2] == ["unarchived", "archived"]


def test_unarchive_then_archive_again_works(owner, api):
    patient = PatientFactory(organization=owner.organization, status="patient")
    assert post_json(api, url(patient, "archive"), {}).status_code == 200
    assert post_json(api, url(patient, "unarchive")).status_code == 200

    again = post_json(api, url(patient, "archive"), {})

    assert again.status_code == 200, again.content
    assert again.json()["status"] == "archived"
    assert len(events_of(owner.organization, patient, "patient.archived")) == 2


def test_unarchive_of_an_unarchived_patient_is_harmless(owner, api):
    patient = PatientFactory(organization=owner.organization, status="patient")
    before = snapshot(owner.organization)

    response = post_json(api, url(patient, "unarchive"))

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "patient"
    assert response.json()["archivedAt"] is None
    assert snapshot(owner.organization) == before


def test_unarchive_of_a_merged_patient_is_409(owner, api):
    survivor, duplicate = merged_pair(owner)
    before = snapshot(owner.organization)

    response = post_json(api, url(duplicate, "unarchive"))

    body = assert_error(response, 409, PATIENT_MERGED)
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert snapshot(owner.organization) == before


def test_unarchive_of_another_practices_patient_is_404(owner, outsider, api):
    theirs = PatientFactory(organization=outsider.organization, status="patient")
    post_json(outsider.api_client(), url(theirs, "archive"), {})
    before = snapshot(outsider.organization)

    response = post_json(api, url(theirs, "unarchive"))

    assert_error(response, 404, "NOT_FOUND")
    assert snapshot(outsider.organization) == before


# --- contact attempts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("channel", "outcome", "kind"),
    [
        ("phone", "no_answer", "call"),
        ("phone", "voicemail", "call"),
        ("sms", "sent", "message"),
        ("email", "sent", "message"),
        ("whatsapp", "reached", "message"),
    ],
)
def test_contact_attempt_counts_and_lands_on_the_timeline(owner, api, channel, outcome, kind):
    patient = PatientFactory(organization=owner.organization, status="lead", contact_attempts=2)

    body = log_attempt(api, patient, channel, outcome)

    assert body["contactAttempts"] == 3
    assert refreshed(patient).contact_attempts == 3
    entry = timeline(api, patient)[0]
    assert entry["kind"] == kind
    assert entry["data"]["channel"] == channel
    assert entry["data"]["outcome"] == outcome
    updates = events_of(owner.organization, patient, "patient.updated")
    assert len(updates) == 1
    assert updates[0].data["changedFields"] == ["contactAttempts"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"channel": "pigeon", "outcome": "no_answer"}, "channel"),
        ({"channel": "phone", "outcome": "maybe"}, "outcome"),
        ({"channel": "PHONE", "outcome": "no_answer"}, "channel"),
        ({"outcome": "no_answer"}, "channel"),
        ({"channel": "phone"}, "outcome"),
        ({"channel": None, "outcome": "no_answer"}, "channel"),
    ],
)
def test_contact_attempt_with_bad_channel_or_outcome_is_400(owner, api, payload, field):
    patient = PatientFactory(organization=owner.organization, status="lead")
    before = snapshot(owner.organization)

    response = post_json(api, url(patient, "contact-attempts"), payload)

    assert_validation_error(response, field)
    assert snapshot(owner.organization) == before


# --- merge -------------------------------------------------------------------------------------------------------


def test_merge_keeps_the_survivors_values_and_fills_the_gaps(owner, api):
    org = owner.organization
    shared_tag, survivor_tag, duplicate_tag = (TagFactory(organization=org) for _ in range(3))
    survivor = PatientFactory(
        organization=org,
        first_name="Anna",
        last_name="Rossi",
        email="anna@example.com",
        phone_mobile=None,
        city="",
        postal_code=None,
        note=None,
        status="patient",
        contact_attempts=2,
        email_opt_out=True,
        sms_opt_out=False,
        whatsapp_opt_out=False,
        custom_fields={"insurer": "A"},
        tags=[shared_tag, survivor_tag],
    )
    duplicate = PatientFactory(
        organization=org,
        first_name="Ana",
        last_name="Rosi",
        email="anna.rossi@example.org",
        phone_mobile="+39 333 1234567",
        city="Milano",
        postal_code="20100",
        note="prefers mornings",
        status="lead",
        contact_attempts=3,
        email_opt_out=False,
        sms_opt_out=True,
        whatsapp_opt_out=False,
        custom_fields={"insurer": "B", "source": "fair"},
        tags=[shared_tag, duplicate_tag],
    )

    response = merge(api, survivor, duplicate)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == str(survivor.id)
    assert body["mergedIntoPatientId"] is None
    # Its own non-empty values stay.
    assert body["firstName"] == "Anna"
    assert body["lastName"] == "Rossi"
    assert body["email"] == "anna@example.com"
    assert body["status"] == "patient"
    # Gaps are filled from the duplicate.
    assert body["phoneMobile"] == "+39 333 1234567"
    assert body["city"] == "Milano"
    assert body["postalCode"] == "20100"
    assert body["note"] == "prefers mornings"
    assert body["customFields"] == {"insurer": "A", "source": "fair"}
    # Tags unioned, attempts summed, an opt-out on either stands.
    assert {t["id"] for t in body["tags"]} == {str(shared_tag.id), str(survivor_tag.id), str(duplicate_tag.id)}
    assert body["contactAttempts"] == 5
    assert body["emailOptOut"] is True
    assert body["smsOptOut"] is True
    assert body["whatsappOptOut"] is False

    row = refreshed(survivor)
    assert row.email == "anna@example.com"
    assert row.phone_mobile == "+39 333 1234567"
    assert row.contact_attempts == 5
    assert row.merged_into_id is None
    assert PatientTag.objects.for_org(org).filter(patient=survivor).count() == 3
    assert refreshed(duplicate).merged_into_id == survivor.id


def test_merge_moves_timeline_and_consents_to_the_survivor(owner, api):
    org = owner.organization
    survivor = PatientFactory(organization=org, status="patient")
    duplicate = PatientFactory(organization=org, status="lead")
    log_attempt(api, duplicate, "phone", "voicemail")
    consent = post_json(
        api,
        url(duplicate, "marketing-consent"),
        {"channel": "email", "status": "granted", "source": "form", "evidence": "ticked the box"},
    )
    assert consent.status_code == 201, consent.content
    duplicate_activity_ids = set(Activity.objects.for_org(org).filter(patient=duplicate).values_list("id", flat=True))
    assert duplicate_activity_ids

    response = merge(api, survivor, duplicate)

    assert response.status_code == 200, response.content
    assert not Activity.objects.for_org(org).filter(patient=duplicate).exists()
    assert not MarketingConsent.objects.for_org(org).filter(patient=duplicate).exists()
    moved = MarketingConsent.objects.for_org(org).get(id=consent.json()["id"])
    assert moved.patient_id == survivor.id
    survivor_entries = timeline(api, survivor)
    assert duplicate_activity_ids <= {uuid.UUID(e["id"]) for e in survivor_entries}
    assert "call" in [e["kind"] for e in survivor_entries]
    merged_entries = [e for e in survivor_entries if e["kind"] == "merged"]
    assert len(merged_entries) == 1
    assert merged_entries[0]["data"] == {"duplicatePatientId": str(duplicate.id)}
    history = api.get(url(survivor, "marketing-consent")).json()["history"]
    assert [c["id"] for c in history] == [consent.json()["id"]]


def test_merge_records_an_update_event_for_both_records(owner, api):
    org = owner.organization
    survivor = PatientFactory(organization=org, phone_other=None)
    duplicate = PatientFactory(organization=org, phone_other="+39 02 555 0101")

    response = merge(api, survivor, duplicate)

    assert response.status_code == 200, response.content
    (survivor_event,) = events_of(org, survivor, "patient.updated")
    assert survivor_event.data["action"] == "merged"
    assert "phoneOther" in survivor_event.data["changedFields"]
    (duplicate_event,) = events_of(org, duplicate, "patient.updated")
    assert duplicate_event.data["action"] == "merged_into"
    assert duplicate_event.data["changedFields"] == ["mergedIntoPatientId"]
    assert survivor_event.actor_id == duplicate_event.actor_id == str(owner.user.id)


def test_the_merged_record_reports_its_survivor(owner, api):
    survivor, duplicate = merged_pair(owner)

    response = api.get(url(duplicate))

    assert response.status_code == 200, response.content
    assert response.json()["id"] == str(duplicate.id)
    assert response.json()["mergedIntoPatientId"] == str(survivor.id)


@pytest.mark.parametrize(
    ("method", "action", "payload"),
    [
        ("patch", "", {"status": "patient"}),
        ("patch", "", {"firstName": "Renamed"}),
        ("post", "archive", {"reason": "dup"}),
        ("post", "archive", {}),
        ("post", "unarchive", {}),
        ("post", "contact-attempts", {"channel": "phone", "outcome": "no_answer"}),
        ("post", "marketing-consent", {"channel": "sms", "status": "withdrawn", "source": "phone"}),
    ],
)
def test_the_merged_record_refuses_changes_with_409(owner, api, method, action, payload):
    survivor, duplicate = merged_pair(owner)
    before = snapshot(owner.organization)

    send = patch_json if method == "patch" else post_json
    response = send(api, url(duplicate, action), payload)

    body = assert_error(response, 409, PATIENT_MERGED)
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert snapshot(owner.organization) == before


def test_the_merged_record_can_neither_absorb_nor_be_absorbed_again(owner, api):
    survivor, duplicate = merged_pair(owner)
    other = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    as_survivor = merge(api, duplicate, other)
    as_duplicate = merge(api, other, duplicate)

    for response in (as_survivor, as_duplicate):
        body = assert_error(response, 409, PATIENT_MERGED)
        assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert snapshot(owner.organization) == before


def test_merging_a_patient_into_itself_is_409_merge_not_allowed(owner, api):
    patient = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = merge(api, patient, patient)

    assert_error(response, 409, "MERGE_NOT_ALLOWED")
    assert snapshot(owner.organization) == before


def test_merging_another_practices_patient_is_404_and_changes_nothing(owner, outsider, api):
    mine = PatientFactory(organization=owner.organization, phone_other=None)
    theirs = PatientFactory(organization=outsider.organization, phone_other="+39 06 555 0199")
    mine_before, theirs_before = snapshot(owner.organization), snapshot(outsider.organization)

    into_mine = merge(api, mine, theirs)
    into_theirs = merge(api, theirs, mine)

    assert_error(into_mine, 404, "NOT_FOUND")
    assert_error(into_theirs, 404, "NOT_FOUND")
    assert snapshot(owner.organization) == mine_before
    assert snapshot(outsider.organization) == theirs_before


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "duplicatePatientId"),
        ({"duplicatePatientId": "not-a-uuid"}, "duplicatePatientId"),
        ({"duplicatePatientId": None}, "duplicatePatientId"),
        ({"duplicatePatientId": 42}, "duplicatePatientId"),
    ],
)
def test_merge_with_a_bad_body_is_400(owner, api, payload, field):
    patient = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = post_json(api, url(patient, "merge"), payload)

    assert_validation_error(response, field)
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "dentist"])
def test_merge_needs_the_patient_delete_permission(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    survivor = PatientFactory(organization=owner.organization)
    duplicate = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = merge(member.api_client(), survivor, duplicate)

    assert_error(response, 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


def test_a_manager_may_merge(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    survivor = PatientFactory(organization=owner.organization)
    duplicate = PatientFactory(organization=owner.organization)

    response = merge(manager.api_client(), survivor, duplicate)

    assert response.status_code == 200, response.content
    assert refreshed(duplicate).merged_into_id == survivor.id


def test_merge_hook_is_called_once_with_survivor_and_duplicate(owner, api, restore_hooks):
    calls = []

    @hooks.on_merge
    def record(*, organization, survivor, duplicate):
        calls.append((organization.pk, survivor.id, duplicate.id))

    survivor = PatientFactory(organization=owner.organization)
    duplicate = PatientFactory(organization=owner.organization)

    response = merge(api, survivor, duplicate)

    assert response.status_code == 200, response.content
    assert calls == [(owner.organization.pk, survivor.id, duplicate.id)]


def test_a_failing_merge_hook_rolls_the_whole_merge_back(owner, api, restore_hooks):
    org = owner.organization
    tag = TagFactory(organization=org)
    survivor = PatientFactory(organization=org, phone_other=None, contact_attempts=1)
    duplicate = PatientFactory(organization=org, phone_other="+39 02 555 0123", contact_attempts=2, tags=[tag])
    log_attempt(api, duplicate)

    @hooks.on_merge
    def broken(*, organization, survivor, duplicate):
        raise RuntimeError("journeys could not be re-pointed")

    before = snapshot(org)

    response = merge(api, survivor, duplicate)

    assert response.status_code == 500, response.content
    body = response.json()
    assert body["code"] == "INTERNAL_ERROR"
    assert body["details"]["errorId"]
    assert snapshot(org) == before
    assert refreshed(duplicate).merged_into_id is None
    assert Activity.objects.for_org(org).filter(patient=duplicate).exists()


# --- erasure ------------------------------------------------------------------------------------------------------


def _erasure_world(owner, api):
    """A patient with tags, timeline, consents, a duplicate merged into it and a patient it referred."""
    org = owner.organization
    tag = TagFactory(organization=org)
    patient = PatientFactory(organization=org, status="patient", tags=[tag])
    duplicate = PatientFactory(organization=org, tags=[tag])
    log_attempt(api, duplicate)
    assert merge(api, patient, duplicate).status_code == 200
    log_attempt(api, patient, "sms", "sent")
    consent = post_json(
        api, url(patient, "marketing-consent"), {"channel": "sms", "status": "granted", "source": "in_person"}
    )
    assert consent.status_code == 201, consent.content
    referred = PatientFactory(organization=org, referred_by_patient=patient)
    bystander = PatientFactory(organization=org, tags=[tag])
    log_attempt(api, bystander)
    return patient, duplicate, referred, bystander, tag


def test_owner_erases_the_patient_and_everything_hanging_off_it(owner, api):
    org = owner.organization
    patient, duplicate, referred, bystander, tag = _erasure_world(owner, api)
    bystander_activities = Activity.objects.for_org(org).filter(patient=bystander).count()

    response = api.delete(url(patient))

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True, "recordingsScheduled": 0}
    gone = [patient.id, duplicate.id]
    assert not Patient.objects.for_org(org).filter(id__in=gone).exists()
    assert not PatientTag.objects.for_org(org).filter(patient_id__in=gone).exists()
    assert not Activity.objects.for_org(org).filter(patient_id__in=gone).exists()
    assert not MarketingConsent.objects.for_org(org).filter(patient_id__in=gone).exists()
    assert refreshed(referred).referred_by_patient_id is None
    # Others are untouched: the tag itself, the bystander, its links and timeline.
    assert Tag.objects.for_org(org).filter(id=tag.id).exists()
    assert PatientTag.objects.for_org(org).filter(patient=bystander, tag=tag).exists()
    assert Activity.objects.for_org(org).filter(patient=bystander).count() == bystander_activities
    assert_error(api.get(url(patient)), 404, "NOT_FOUND")
    assert_error(api.get(url(duplicate)), 404, "NOT_FOUND")


def test_erasing_a_patient_leaves_the_referral_of_others_cleared_not_deleted(owner, api):
    org = owner.organization
    referrer = PatientFactory(organization=org)
    referred = PatientFactory(organization=org, referred_by_patient=referrer)

    response = api.delete(url(referrer))

    assert response.status_code == 200, response.content
    body = api.get(url(referred))
    assert body.status_code == 200, body.content
    assert body.json()["referredByPatientId"] is None


@pytest.mark.parametrize("role", NON_OWNER_ROLES)
def test_erasure_is_the_owners_alone(owner, api, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    patient, *_ = _erasure_world(owner, api)
    before = snapshot(owner.organization)

    response = member.api_client().delete(url(patient))

    assert_error(response, 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


def test_erasing_another_practices_patient_is_404(owner, outsider, api):
    theirs = PatientFactory(organization=outsider.organization)
    before = snapshot(outsider.organization)

    response = api.delete(url(theirs))

    assert_error(response, 404, "NOT_FOUND")
    assert snapshot(outsider.organization) == before


def test_erasing_an_unknown_patient_is_404(owner, api):
    before = snapshot(owner.organization)

    response = api.delete(url(uuid.uuid4()))

    assert_error(response, 404, "NOT_FOUND")
    assert snapshot(owner.organization) == before


def test_erasure_hook_reports_recordings_scheduled(owner, api, restore_hooks):
    calls = []

    @hooks.on_erase
    def recordings(*, organization, patient_ids):
        calls.append((organization.pk, sorted(patient_ids)))
        return ErasureResult(recordings_scheduled=2)

    @hooks.on_erase
    def nothing_to_do(*, organization, patient_ids):
        return None

    patient, duplicate, *_ = _erasure_world(owner, api)

    response = api.delete(url(patient))

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True, "recordingsScheduled": 2}
    assert calls == [(owner.organization.pk, sorted([patient.id, duplicate.id]))]
    assert not Patient.objects.for_org(owner.organization).filter(id=patient.id).exists()


def test_a_failing_erasure_hook_rolls_the_whole_erasure_back(owner, api, restore_hooks):
    org = owner.organization

    @hooks.on_erase
    def erase_timeline(*, organization, patient_ids):
        # A well-behaved area deletes its rows first ...
        Activity.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
        return ErasureResult(recordings_scheduled=1)

    @hooks.on_erase
    def broken(*, organization, patient_ids):
        # ... and a later one fails: nothing of the erasure may remain.
        raise RuntimeError("recording storage unavailable")

    patient, duplicate, referred, *_ = _erasure_world(owner, api)
    before = snapshot(org)
    assert Activity.objects.for_org(org).filter(patient=patient).exists()

    response = api.delete(url(patient))

    assert response.status_code == 500, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == "INTERNAL_ERROR"
    assert body["details"]["errorId"]
    assert snapshot(org) == before
    assert Patient.objects.for_org(org).filter(id=patient.id).exists()
    assert refreshed(duplicate).merged_into_id == patient.id
    assert refreshed(referred).referred_by_patient_id == patient.id
    assert api.get(url(patient)).status_code == 200
