"""The historical import through the real httpx client against a local PMS: patients then appointments page by
page, matched or created and linked, appointments mirrored, no per-record events, resumable after a failure."""

import pytest

from apps.appointments.public import Appointment
from apps.patients.public import Patient, Practitioner
from apps.pms.models import PmsAppointmentLink, PmsImport, PmsPatientLink
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.pms.conftest import appointment, connect, events_of, patient, post_json

pytestmark = pytest.mark.django_db


def test_the_import_pulls_every_page_and_mirrors_patients_and_appointments(
    owner, api, pms, django_capture_on_commit_callbacks
):
    created = connect(api, pms, django_capture_on_commit_callbacks)

    run = PmsImport.objects.for_org(owner.organization).get()
    answer = api.get(f"/settings/pms/imports/{run.id}").json()
    assert answer["state"] == "completed" and answer["phase"] == "done"
    assert answer["position"] == {"phase": "done", "cursor": None}
    assert answer["pages"] == 6  # 3 pages of patients, 3 of appointments (2 a page)
    assert answer["counts"] == {
        "patients": {"created": 5, "matched": 0, "updated": 0, "unchanged": 0},
        "appointments": {"created": 5, "updated": 0, "unchanged": 0},
        "practitionersCreated": 1,
        "skipped": 0,
    }
    assert [r["cursor"] for r in pms.pages("patient")] == [None, "2", "4"]
    patients = {p.email: p for p in Patient.objects.for_org(owner.organization)}
    assert set(patients) == {f"anna{n}@example.org" for n in range(1, 6)}
    anna = patients["anna1@example.org"]
    assert (anna.first_name, anna.last_name, anna.phone_mobile, str(anna.date_of_birth)) == (
        "Anna1",
        "Rossi1",
        "+44 7700 900001",
        "1980-05-17",
    )
    links = PmsPatientLink.objects.for_org(owner.organization)
    assert {(link.provider_patient_id, link.patient_id) for link in links} == {
        (f"P{n}", patients[f"anna{n}@example.org"].id) for n in range(1, 6)
    }
    practitioner = Practitioner.objects.for_org(owner.organization).get()
    assert practitioner.name == "Dr Bianchi"
    first = PmsAppointmentLink.objects.for_org(owner.organization).get(provider_appointment_id="A1").appointment
    assert (first.patient_id, first.practitioner_id, first.status) == (anna.id, practitioner.id, "booked")
    assert first.starts_at.isoformat() == "2026-12-02T09:00:00+00:00"
    assert Appointment.objects.for_org(owner.organization).count() == 5
    # The connection is active once the import completes, and the import recorded no event at all.
    assert api.get(f"/settings/pms/connections/{created['id']}").json()["status"] == "active"
    assert events_of(owner.organization) == []


def test_patients_already_in_the_crm_are_matched_by_email_or_phone(owner, api, pms, django_capture_on_commit_callbacks):
    by_email = PatientFactory(organization=owner.organization, email="ANNA1@example.org", phone_mobile=None)
    by_phone = PatientFactory(organization=owner.organization, email=None, phone_mobile="00447700900002")
    before = len(events_of(owner.organization))

    connect(api, pms, django_capture_on_commit_callbacks)

    links = {link.provider_patient_id: link.patient_id for link in PmsPatientLink.objects.for_org(owner.organization)}
    assert links["P1"] == by_email.id and links["P2"] == by_phone.id
    assert Patient.objects.for_org(owner.organization).count() == 5  # 3 created, 2 matched
    by_email.refresh_from_db()
    by_phone.refresh_from_db()
    assert by_email.phone_mobile == "+44 7700 900001"  # only the fields it lacked are filled
    assert by_email.email == "ANNA1@example.org"
    assert by_phone.email == "anna2@example.org"
    run = api.get("/settings/pms/imports").json()["items"][0]
    assert run["counts"]["patients"] == {"created": 3, "matched": 2, "updated": 0, "unchanged": 0}
    assert len(events_of(owner.organization)) == before


def test_a_failed_page_stops_the_run_and_resuming_finishes_it_without_duplicates(
    owner, api, pms, django_capture_on_commit_callbacks
):
    pms.patients = [patient(n) for n in range(1, 8)]  # 4 pages of patients
    pms.fail_at[("patient", 3)] = 503

    created = connect(api, pms, django_capture_on_commit_callbacks)

    run = api.get("/settings/pms/imports").json()["items"][0]
    assert run["state"] == "failed" and run["failures"] == 1
    assert run["position"] == {"phase": "patients", "cursor": "4"}  # pages 1 and 2 were saved
    assert run["counts"]["patients"]["created"] == 4
    assert [(e["phase"], e["code"]) for e in run["errors"]] == [("patients", "pms_http_503")]
    connection = api.get(f"/settings/pms/connections/{created['id']}").json()
    assert (connection["status"], connection["health"], connection["healthReason"]) == (
        "importing",
        "degraded",
        "pms_http_503",
    )
    assert [e.type for e in events_of(owner.organization)] == ["pms_connection.health_changed"]

    del pms.fail_at[("patient", 3)]
    with django_capture_on_commit_callbacks(execute=True):
        resumed = post_json(api, f"/settings/pms/imports/{run['id']}/resume")
    assert resumed.status_code == 200, resumed.content

    done = api.get(f"/settings/pms/imports/{run['id']}").json()
    assert done["state"] == "completed"
    assert done["counts"]["patients"]["created"] == 7 and done["counts"]["appointments"]["created"] == 5
    # The resumed run asked for page 3 again, not page 1.
    assert [r["cursor"] for r in pms.pages("patient")] == [None, "2", "4", "4", "6"]
    assert Patient.objects.for_org(owner.organization).count() == 7
    assert PmsPatientLink.objects.for_org(owner.organization).count() == 7
    connection = api.get(f"/settings/pms/connections/{created['id']}").json()
    assert (connection["status"], connection["health"]) == ("active", "healthy")
    assert [e.type for e in events_of(owner.organization)] == ["pms_connection.health_changed"] * 2


def test_a_run_that_crashed_mid_way_resumes_from_its_cursor(owner, api, pms, django_capture_on_commit_callbacks):
    """A worker that died after two pages: the saved cursor is where the next runner starts."""
    from apps.pms.imports import run_import

    pms.patients = [patient(n) for n in range(1, 8)]
    with django_capture_on_commit_callbacks(execute=False):  # the task is not run: the test drives it
        created = post_json(
            api,
            "/settings/pms/connections",
            {"name": "PMS", "baseUrl": pms.base_url, "apiKey": "pms-api-key-0123456789"},
        )
    assert created.status_code == 201
    run = PmsImport.objects.for_org(owner.organization).get()
    assert run_import(run.id, max_pages=2) == "running"
    run.refresh_from_db()
    assert (run.phase, run.cursor, run.patients_created) == ("patients", "4", 4)

    assert run_import(run.id) == "completed"
    assert Patient.objects.for_org(owner.organization).count() == 7
    assert [r["cursor"] for r in pms.pages("patient")] == [None, "2", "4", "6"]


def test_starting_twice_does_not_duplicate(owner, api, pms, connection, django_capture_on_commit_callbacks):
    first = PmsImport.objects.for_org(owner.organization).get()
    with django_capture_on_commit_callbacks(execute=True):
        again = post_json(api, f"/settings/pms/connections/{connection['id']}/imports")
    assert again.status_code == 201  # the first completed: a new run, which changes nothing
    second = again.json()
    assert second["id"] != str(first.id)
    done = api.get(f"/settings/pms/imports/{second['id']}").json()
    assert done["counts"]["patients"] == {"created": 0, "matched": 0, "updated": 0, "unchanged": 5}
    assert done["counts"]["appointments"] == {"created": 0, "updated": 0, "unchanged": 5}
    assert Patient.objects.for_org(owner.organization).count() == 5
    assert Appointment.objects.for_org(owner.organization).count() == 5
    assert events_of(owner.organization) == []


def test_an_unfinished_import_is_resumed_not_doubled(owner, api, pms, django_capture_on_commit_callbacks):
    pms.fail_at[("appointment", 1)] = 500
    created = connect(api, pms, django_capture_on_commit_callbacks)
    failed = PmsImport.objects.for_org(owner.organization).get()
    assert (failed.state, failed.phase) == ("failed", "appointments")
    del pms.fail_at[("appointment", 1)]

    with django_capture_on_commit_callbacks(execute=True):
        again = post_json(api, f"/settings/pms/connections/{created['id']}/imports")
    assert again.status_code == 200 and again.json()["id"] == str(failed.id)
    assert PmsImport.objects.for_org(owner.organization).count() == 1
    assert api.get(f"/settings/pms/imports/{failed.id}").json()["state"] == "completed"


def test_refused_credentials_make_the_connection_failing(owner, api, pms, django_capture_on_commit_callbacks):
    created = connect(api, pms, django_capture_on_commit_callbacks, apiKey="not-the-right-key")
    connection = api.get(f"/settings/pms/connections/{created['id']}").json()
    assert (connection["health"], connection["healthReason"]) == ("failing", "pms_credentials_refused")
    assert not Patient.objects.for_org(owner.organization).exists()

    fixed = api.patch(
        f"/settings/pms/connections/{created['id']}",
        {"apiKey": "pms-api-key-0123456789"},
        content_type="application/json",
    )
    assert fixed.status_code == 200 and fixed.json()["health"] == "healthy"


def test_unreadable_items_and_unlinked_appointments_are_skipped_and_reported(
    owner, api, pms, django_capture_on_commit_callbacks
):
    pms.patients[1] = {"id": "P2", "revision": 1, "data": {"lastName": "no first name"}}
    pms.appointments = [appointment(1), appointment(2), appointment(9, patient_id="P404")]
    connect(api, pms, django_capture_on_commit_callbacks)
    run = api.get("/settings/pms/imports").json()["items"][0]
    assert run["state"] == "completed"
    assert run["counts"]["skipped"] == 3
    assert sorted((e["code"], e["itemId"]) for e in run["errors"]) == [
        ("firstName_required", "P2"),
        ("patient_not_linked", "A2"),
        ("patient_not_linked", "A9"),
    ]


def test_overlapping_pms_appointments_are_not_double_booked(owner, api, pms, django_capture_on_commit_callbacks):
    pms.appointments = [appointment(1), appointment(2, startsAt="2026-12-02T09:15:00+00:00")]
    pms.appointments[1]["data"]["endsAt"] = "2026-12-02T09:45:00+00:00"
    connect(api, pms, django_capture_on_commit_callbacks)
    run = api.get("/settings/pms/imports").json()["items"][0]
    assert run["counts"]["appointments"]["created"] == 1
    assert [(e["code"], e["itemId"]) for e in run["errors"]] == [("appointment_clash", "A2")]


def test_import_routes_are_tenant_scoped_and_need_pms_manage(owner, outsider, member_factory, api, connection):
    run = PmsImport.objects.for_org(owner.organization).get()
    stranger = outsider.api_client()
    assert_error(stranger.get(f"/settings/pms/imports/{run.id}"), 404, "NOT_FOUND")
    assert_error(post_json(stranger, f"/settings/pms/imports/{run.id}/resume"), 404, "NOT_FOUND")
    assert_error(post_json(stranger, f"/settings/pms/connections/{connection['id']}/imports"), 404, "NOT_FOUND")
    assert stranger.get("/settings/pms/imports").json()["total"] == 0
    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    assert_error(front_desk.get(f"/settings/pms/imports/{run.id}"), 403, "PERMISSION_DENIED")
    assert_error(front_desk.get("/settings/pms/imports"), 403, "PERMISSION_DENIED")
    assert_error(post_json(front_desk, f"/settings/pms/imports/{run.id}/resume"), 403, "PERMISSION_DENIED")
    assert PmsImport.objects.for_org(owner.organization).count() == 1


def test_import_bad_input(owner, api, connection):
    run = PmsImport.objects.for_org(owner.organization).get()
    body = assert_error(api.get("/settings/pms/imports?state=paused"), 400, "VALIDATION_ERROR")
    assert "state" in body["details"]["fields"]
    assert_error(post_json(api, f"/settings/pms/imports/{run.id}/resume"), 409, "PMS_IMPORT_COMPLETED")
    assert_error(api.get("/settings/pms/imports/not-a-uuid"), 400, "VALIDATION_ERROR")
