"""The patient timeline as other areas and people write it: notes (POST /patients/{id}/notes), contact attempts by
role, the public timeline_record helper (appointment kinds reserved for the appointments area), and the OpenAPI
description of the entries."""

import uuid

import pytest
from django.db import transaction

from apps.events.models import Event
from apps.patients.models import Activity, Patient
from apps.patients.services import timeline_record
from tests.factories import PatientFactory
from tests.helpers import assert_error

JSON = "application/json"
ENTRY_FIELDS = {"id", "kind", "summary", "data", "actorUserId", "createdAt"}
WRITERS = {"owner", "manager", "front_desk", "telesales"}
ROLES = ("owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse")


def add_note(client, patient, body):
    return client.post(f"/patients/{patient.id}/notes", body, content_type=JSON)


def timeline(client, patient) -> list[dict]:
    response = client.get(f"/patients/{patient.id}/timeline")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def state(organization) -> dict:
    return {
        "activities": sorted(Activity.objects.for_org(organization).values_list("id", "kind", "summary")),
        "events": sorted(Event.objects.for_org(organization).values_list("id", flat=True)),
        "patients": sorted(Patient.objects.for_org(organization).values_list("id", "updated_at", "contact_attempts")),
    }


# --- notes ---------------------------------------------------------------------------------------------------------


def test_a_note_is_a_timeline_entry_newest_first_and_no_event(owner, api):
    patient = PatientFactory(organization=owner.organization)
    events_before = Event.objects.for_org(owner.organization).count()

    first = add_note(api, patient, {"body": "Asked about implants, call back Friday"})
    second = add_note(api, patient, {"body": "  Prefers mornings  "})

    assert first.status_code == 201, first.content
    entry = first.json()
    assert set(entry) == ENTRY_FIELDS
    assert entry["kind"] == "note" and entry["summary"] == "Asked about implants, call back Friday"
    assert entry["data"] == {} and entry["actorUserId"] == str(owner.user.id)
    assert second.json()["summary"] == "Prefers mornings"
    assert [(e["kind"], e["id"]) for e in timeline(api, patient)] == [
        ("note", second.json()["id"]),
        ("note", entry["id"]),
    ]
    embedded = api.get(f"/patients/{patient.id}", {"embed": "timeline"}).json()["timeline"]["items"]
    assert [e["summary"] for e in embedded] == ["Prefers mornings", "Asked about implants, call back Friday"]
    assert Event.objects.for_org(owner.organization).count() == events_before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"body": ""}, "body"),
        ({"body": "   "}, "body"),
        ({"body": None}, "body"),
        ({"body": ["a note"]}, "body"),
        ({"body": "x" * 10001}, "body"),
        ({"body": "ok", "kind": "call"}, "kind"),
        ({"text": "a note"}, "text"),
    ],
)
def test_bad_note_bodies_are_400_naming_the_field_and_change_nothing(owner, api, body, field):
    patient = PatientFactory(organization=owner.organization)
    before = state(owner.organization)

    response = add_note(api, patient, body)

    details = assert_error(response, 400, "VALIDATION_ERROR")["details"]
    assert field in details["fields"], details
    assert state(owner.organization) == before


def test_an_empty_request_body_is_400(owner, api):
    patient = PatientFactory(organization=owner.organization)
    response = api.post(f"/patients/{patient.id}/notes", "", content_type=JSON)
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"] == {
        "fields": {"body": ["a JSON object is required"]}
    }


def test_a_note_on_a_merged_record_is_409_and_lands_nowhere(owner, api):
    survivor, duplicate = (
        PatientFactory(organization=owner.organization),
        PatientFactory(organization=owner.organization),
    )
    merged = api.post(f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}, content_type=JSON)
    assert merged.status_code == 200, merged.content
    before = state(owner.organization)

    assert_error(add_note(api, duplicate, {"body": "lost?"}), 409, "PATIENT_MERGED")
    assert state(owner.organization) == before


def test_another_practices_patient_is_404_and_unknown_ids_are_404(owner, api, outsider):
    theirs = PatientFactory(organization=outsider.organization)
    mine = PatientFactory(organization=owner.organization)
    before = (state(owner.organization), state(outsider.organization))

    assert_error(add_note(api, theirs, {"body": "peek"}), 404, "NOT_FOUND")
    assert_error(add_note(outsider.api_client(), mine, {"body": "peek"}), 404, "NOT_FOUND")
    unknown = api.post(f"/patients/{uuid.uuid4()}/notes", {"body": "x"}, content_type=JSON)
    assert_error(unknown, 404, "NOT_FOUND")
    assert_error(outsider.api_client().get(f"/patients/{mine.id}/timeline"), 404, "NOT_FOUND")
    assert (state(owner.organization), state(outsider.organization)) == before


@pytest.mark.parametrize("role", ROLES)
def test_notes_and_contact_attempts_need_patient_update(owner, member_factory, role):
    patient = PatientFactory(organization=owner.organization, status="lead")
    client = member_factory(role=role, organization=owner.organization).api_client()
    before = state(owner.organization)

    note = add_note(client, patient, {"body": "Spoke to the patient"})
    attempt = client.post(
        f"/patients/{patient.id}/contact-attempts", {"channel": "phone", "outcome": "no_answer"}, content_type=JSON
    )

    if role in WRITERS:
        assert (note.status_code, attempt.status_code) == (201, 200)
        assert [e["kind"] for e in timeline(client, patient)] == ["call", "note"]
    else:
        assert_error(note, 403, "PERMISSION_DENIED")
        assert_error(attempt, 403, "PERMISSION_DENIED")
        assert state(owner.organization) == before


def test_five_logged_attempts_let_a_lead_be_archived_without_a_reason(owner, api):
    lead = PatientFactory(organization=owner.organization, status="lead")
    for channel, outcome in [("phone", "no_answer"), ("sms", "sent"), ("phone", "voicemail"), ("email", "sent")]:
        api.post(f"/patients/{lead.id}/contact-attempts", {"channel": channel, "outcome": outcome}, content_type=JSON)
    assert_error(api.post(f"/patients/{lead.id}/archive", {}, content_type=JSON), 409, "ARCHIVE_REASON_REQUIRED")

    fifth = api.post(
        f"/patients/{lead.id}/contact-attempts", {"channel": "whatsapp", "outcome": "reached"}, content_type=JSON
    )
    assert fifth.json()["contactAttempts"] == 5
    archived = api.post(f"/patients/{lead.id}/archive", {}, content_type=JSON)

    assert archived.status_code == 200, archived.content
    assert archived.json()["status"] == "archived"
    kinds = [e["kind"] for e in timeline(api, lead)]
    assert kinds == ["archived", "message", "message", "call", "message", "call"]
    assert [e["data"]["attempt"] for e in timeline(api, lead)[1:]] == [5, 4, 3, 2, 1]


# --- the public helper other areas write through ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    ["appointment_booked", "appointment_rescheduled", "appointment_status_changed", "appointment_cancelled"],
)
def test_timeline_record_writes_the_reserved_appointment_kinds(owner, api, kind):
    patient = PatientFactory(organization=owner.organization)
    appointment_id = str(uuid.uuid4())
    with transaction.atomic():
        entry = timeline_record(
            organization=owner.organization,
            user=owner.user,
            patient_id=patient.id,
            kind=kind,
            data={"appointmentId": appointment_id},
        )

    (shown,) = timeline(api, patient)
    assert shown["id"] == str(entry.id) and shown["kind"] == kind
    assert shown["data"] == {"appointmentId": appointment_id} and shown["actorUserId"] == str(owner.user.id)


def test_timeline_record_refuses_an_unknown_kind_and_writes_nothing(owner):
    patient = PatientFactory(organization=owner.organization)
    with pytest.raises(ValueError, match="unknown timeline kind"):
        timeline_record(organization=owner.organization, user=None, patient_id=patient.id, kind="telepathy")
    assert not Activity.objects.for_org(owner.organization).exists()


def test_erasing_a_patient_removes_their_notes(owner, api):
    patient, other = PatientFactory(organization=owner.organization), PatientFactory(organization=owner.organization)
    add_note(api, patient, {"body": "Private detail"})
    kept = add_note(api, other, {"body": "Someone else"}).json()

    assert api.delete(f"/patients/{patient.id}").status_code == 200

    assert list(Activity.objects.for_org(owner.organization).values_list("id", flat=True)) == [uuid.UUID(kept["id"])]


# --- OpenAPI -------------------------------------------------------------------------------------------------------


def test_openapi_documents_notes_and_every_timeline_kind(api):
    schema = api.get("/openapi.json").json()
    operation = schema["paths"]["/patients/{id}/notes"]["post"]
    assert operation["tags"] == ["patients"]
    assert operation["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TimelineEntry"
    }
    assert {"403", "404", "409"} <= set(operation["responses"])
    components = schema["components"]["schemas"]
    kind = components["TimelineEntry"]["properties"]["kind"]
    enum_ref = (kind.get("allOf") or [kind])[0]["$ref"].rsplit("/", 1)[1]
    assert set(components[enum_ref]["enum"]) == set(Activity.Kind.values)
    assert {"journey_stage_changed", "task_completed", "appointment_booked"} <= set(components[enum_ref]["enum"])
    assert components["PatientDetail"]["properties"]["journeys"]["items"] == {"$ref": "#/components/schemas/Journey"}
    assert "/patients/{id}/contact-attempts" in schema["paths"]
