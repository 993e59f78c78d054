"""Clinical notes through HTTP: writing, reading, cursor paging, append-only (405), amendments, signing with fresh
re-authentication, and the clinical route rules (workspace, transport, permission, another practice)."""

import logging
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.records.models import ClinicalNote, NoteAmendment
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.records.conftest import EVIDENCE, evidence, link, post
from tests.today.helpers import make_appointment

TEXT = "Caries distal 36, restored with composite under local anaesthetic."


def events_mentioning(marker: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM events_event WHERE data::text LIKE %s", [f"%{marker}%"])
        return cursor.fetchone()[0]


def notes_url(patient) -> str:
    return f"/clinical/patients/{patient.id}/notes"


def write(client, patient, text=TEXT, **fields):
    response = post(client, notes_url(patient), {"text": text, **fields})
    assert response.status_code == 201, response.content
    return response.json()


def test_a_dentist_writes_and_reads_a_note(session, dentist, practitioner, patient):
    appointment = make_appointment(dentist.organization, starts_at=patient.created_at, patient=patient)

    note = write(session, patient, appointmentId=str(appointment.id))

    assert note["text"] == TEXT
    assert note["authorId"] == str(dentist.user.id)
    assert note["practitionerId"] == str(practitioner.id)
    assert note["appointmentId"] == str(appointment.id)
    assert note["signedAt"] is None and note["amendments"] == []
    read = session.get(f"/clinical/notes/{note['id']}")
    assert read.status_code == 200 and read.json() == note
    stored = ClinicalNote.objects.for_org(dentist.organization).get()
    assert TEXT not in stored.text_encrypted  # encrypted at rest


def test_an_unlinked_author_writes_a_note_without_practitioner(same_practice, patient):
    nurse = same_practice("nurse")

    note = write(nurse.session_client(), patient)

    assert note["practitionerId"] is None and note["authorId"] == str(nurse.user.id)


def test_notes_list_newest_first_with_cursor_paging(session, patient):
    ids = [write(session, patient, f"note {n}")["id"] for n in range(3)]

    first = session.get(notes_url(patient), {"limit": 2})
    assert first.status_code == 200, first.content
    body = first.json()
    assert [n["id"] for n in body["items"]] == ids[::-1][:2] and body["nextCursor"]
    rest = session.get(notes_url(patient), {"limit": 2, "cursor": body["nextCursor"]}).json()
    assert [n["id"] for n in rest["items"]] == [ids[0]] and rest["nextCursor"] is None
    assert_error(session.get(notes_url(patient), {"cursor": "nonsense"}), 400, "VALIDATION_ERROR")
    assert_error(session.get(notes_url(patient), {"limit": 0}), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "body"), ({"text": ""}, "text"), ({"text": "x", "colour": "red"}, "colour"), ({"text": 5}, "text")],
)
def test_bad_note_input_names_the_field(session, patient, body, field):
    response = (
        post(session, notes_url(patient), body)
        if body
        else session.post(notes_url(patient), "", content_type="application/json")
    )

    fields = assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert field in fields
    assert not ClinicalNote.objects.for_org(patient.organization).exists()


def test_the_appointment_must_be_this_patients(session, dentist, patient, clinical_outsider):
    other = make_appointment(dentist.organization, starts_at=patient.created_at)
    foreign = make_appointment(clinical_outsider.organization, starts_at=patient.created_at)

    for appointment in (other, foreign):
        response = post(session, notes_url(patient), {"text": TEXT, "appointmentId": str(appointment.id)})
        assert "appointmentId" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not ClinicalNote.objects.for_org(dentist.organization).exists()


def test_another_practices_patient_and_note_are_404(session, clinical_outsider):
    theirs = PatientFactory(organization=clinical_outsider.organization)
    their_note = write(clinical_outsider.session_client(), theirs)

    assert_error(session.get(notes_url(theirs)), 404, "NOT_FOUND")
    assert_error(post(session, notes_url(theirs), {"text": TEXT}), 404, "NOT_FOUND")
    assert_error(session.get(f"/clinical/notes/{their_note['id']}"), 404, "NOT_FOUND")
    assert_error(
        post(session, f"/clinical/notes/{their_note['id']}/amendments", {"text": "x", "reason": "y"}), 404, "NOT_FOUND"
    )
    assert_error(
        post(session, f"/clinical/notes/{their_note['id']}/sign", **{EVIDENCE: evidence(session)}), 404, "NOT_FOUND"
    )
    assert ClinicalNote.objects.for_org(clinical_outsider.organization).count() == 1
    assert not NoteAmendment.objects.for_org(clinical_outsider.organization).exists()


def test_roles_without_the_permission_are_refused(same_practice, patient, session):
    note = write(session, patient)
    front_desk = same_practice("front_desk").session_client()
    owner = same_practice("owner").session_client()

    assert_error(front_desk.get(notes_url(patient)), 403, "PERMISSION_DENIED")
    assert_error(front_desk.get(f"/clinical/notes/{note['id']}"), 403, "PERMISSION_DENIED")
    assert owner.get(notes_url(patient)).status_code == 200  # owners read the practice's records
    assert_error(post(owner, notes_url(patient), {"text": TEXT}), 403, "PERMISSION_DENIED")
    assert_error(
        post(owner, f"/clinical/notes/{note['id']}/amendments", {"text": "x", "reason": "y"}), 403, "PERMISSION_DENIED"
    )
    assert ClinicalNote.objects.for_org(patient.organization).count() == 1


def test_without_the_clinical_workspace_every_route_is_closed(member_factory):
    dentist = member_factory(role="dentist")  # clinical_workspace_available is False
    patient = PatientFactory(organization=dentist.organization)
    client = dentist.session_client()

    assert_error(client.get(notes_url(patient)), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert_error(post(client, notes_url(patient), {"text": TEXT}), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert_error(dentist.api_client().get(notes_url(patient)), 403, "PMS_WORKSPACE_UNAVAILABLE")


def test_machine_credentials_are_refused(dentist, patient, session):
    note = write(session, patient)
    raw, _ = mint(dentist, "read write")

    for client in (dentist.api_client(), bearer(raw)):
        assert_error(client.get(notes_url(patient)), 403, "transport_not_allowed")
        assert_error(post(client, notes_url(patient), {"text": TEXT}), 403, "transport_not_allowed")
        assert_error(client.get(f"/clinical/notes/{note['id']}"), 403, "transport_not_allowed")
        assert_error(post(client, f"/clinical/notes/{note['id']}/sign"), 403, "transport_not_allowed")
    assert ClinicalNote.objects.for_org(dentist.organization).count() == 1


def test_notes_are_append_only(session, patient):
    note = write(session, patient)

    for method in ("patch", "put", "delete"):
        response = getattr(session, method)(
            f"/clinical/notes/{note['id']}", {"text": "x"}, content_type="application/json"
        )
        assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert_error(session.delete(notes_url(patient)), 405, "METHOD_NOT_ALLOWED")
    assert session.get(f"/clinical/notes/{note['id']}").json()["text"] == TEXT


def test_amendments_keep_the_original(session, dentist, practitioner, patient, same_practice):
    note = write(session, patient)
    nurse = same_practice("nurse")

    first = post(
        session, f"/clinical/notes/{note['id']}/amendments", {"text": "Tooth 37, not 36.", "reason": "Wrong tooth"}
    )
    second = post(
        nurse.session_client(),
        f"/clinical/notes/{note['id']}/amendments",
        {"text": "Patient tolerated well.", "reason": "Addition"},
    )

    assert first.status_code == 201 and second.status_code == 201, (first.content, second.content)
    body = second.json()
    assert body["text"] == TEXT
    assert [(a["text"], a["reason"], a["authorId"]) for a in body["amendments"]] == [
        ("Tooth 37, not 36.", "Wrong tooth", str(dentist.user.id)),
        ("Patient tolerated well.", "Addition", str(nurse.user.id)),
    ]
    assert body["amendments"][0]["practitionerId"] == str(practitioner.id)
    assert body["amendments"][1]["practitionerId"] is None


@pytest.mark.parametrize(
    ("body", "field"), [({"text": "x"}, "reason"), ({"reason": "y"}, "text"), ({"text": "x", "reason": ""}, "reason")]
)
def test_an_amendment_needs_text_and_reason(session, patient, body, field):
    note = write(session, patient)

    response = post(session, f"/clinical/notes/{note['id']}/amendments", body)

    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not NoteAmendment.objects.for_org(patient.organization).exists()


# --- signing ------------------------------------------------------------------------------------------------------


def sign(client, note_id, token=None):
    extra = {EVIDENCE: token} if token is not None else {}
    return post(client, f"/clinical/notes/{note_id}/sign", **extra)


def test_the_author_signs_with_fresh_evidence_and_the_note_is_sealed(session, dentist, practitioner, patient):
    note = write(session, patient)

    response = sign(session, note["id"], evidence(session))

    assert response.status_code == 200, response.content
    signed = response.json()
    assert signed["signedAt"] and signed["signedById"] == str(dentist.user.id)
    assert_error(sign(session, note["id"], evidence(session)), 409, "NOTE_ALREADY_SIGNED")
    # Sealed: the text never changes; corrections are amendments, signed the same way.
    amended = post(session, f"/clinical/notes/{note['id']}/amendments", {"text": "Add: 37 too.", "reason": "Omitted"})
    assert amended.status_code == 201
    amendment = amended.json()["amendments"][0]
    url = f"/clinical/notes/{note['id']}/amendments/{amendment['id']}/sign"
    assert_error(post(session, url), 403, "FRESH_AUTHENTICATION_REQUIRED")
    done = post(session, url, **{EVIDENCE: evidence(session)})
    assert done.status_code == 200, done.content
    assert done.json()["amendments"][0]["signedAt"] and done.json()["text"] == TEXT
    assert_error(post(session, url, **{EVIDENCE: evidence(session)}), 409, "NOTE_ALREADY_SIGNED")


def test_missing_evidence_is_refused(session, practitioner, patient):
    note = write(session, patient)

    assert_error(sign(session, note["id"]), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert_error(sign(session, note["id"], ""), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert ClinicalNote.objects.for_org(patient.organization).get().signed_at is None


def test_expired_evidence_is_refused(session, practitioner, patient, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    note = write(session, patient)
    token = evidence(session)

    time_machine.shift(timedelta(minutes=5, seconds=1))

    assert_error(sign(session, note["id"], token), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert ClinicalNote.objects.for_org(patient.organization).get().signed_at is None


@pytest.mark.parametrize(
    "tamper",
    [lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"), lambda t: t + "x", lambda t: "not-a-token"],
    ids=["signature", "suffix", "garbage"],
)
def test_tampered_evidence_is_refused(session, practitioner, patient, tamper):
    note = write(session, patient)

    assert_error(sign(session, note["id"], tamper(evidence(session))), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert ClinicalNote.objects.for_org(patient.organization).get().signed_at is None


def test_borrowed_evidence_is_refused(dentist, session, practitioner, patient, same_practice):
    note = write(session, patient)
    colleague = same_practice("hygienist")
    link(colleague)
    other_session = dentist.session_client()

    assert_error(sign(session, note["id"], evidence(colleague.session_client())), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert_error(sign(session, note["id"], evidence(other_session)), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert ClinicalNote.objects.for_org(patient.organization).get().signed_at is None
    assert sign(other_session, note["id"], evidence(other_session)).status_code == 200


def test_only_the_linked_author_signs(session, patient, same_practice):
    note = write(session, patient)  # the dentist is not linked yet
    colleague = same_practice("hygienist")
    link(colleague)
    colleague_session = colleague.session_client()
    nurse = same_practice("nurse").session_client()

    assert_error(sign(session, note["id"], evidence(session)), 403, "NOTE_SIGN_NOT_ALLOWED")
    assert_error(sign(colleague_session, note["id"], evidence(colleague_session)), 403, "NOTE_SIGN_NOT_ALLOWED")
    assert_error(sign(nurse, note["id"], evidence(nurse)), 403, "PERMISSION_DENIED")  # no clinical:sign
    assert ClinicalNote.objects.for_org(patient.organization).get().signed_at is None


def test_clinical_text_stays_out_of_events_and_logs(session, practitioner, patient, caplog):
    caplog.set_level(logging.DEBUG)
    note = write(session, patient, "Secret clinical wording 4711")
    post(session, f"/clinical/notes/{note['id']}/amendments", {"text": "Amended wording 4712", "reason": "Reason 4713"})
    sign(session, note["id"], evidence(session))

    for marker in ("4711", "4712", "4713"):
        assert marker not in caplog.text
        assert not events_mentioning(marker)
    assert "clinical note" in caplog.text  # the app does log: ids only
