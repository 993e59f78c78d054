"""Treatment plans: create, list, read, update; who may; another practice; the clinical gate."""

import pytest

from apps.clinical.models import PractitionerLink
from apps.plans.models import TreatmentPlan
from tests.conftest import make_member
from tests.factories import PatientFactory, PractitionerFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.plans.conftest import add_item, plan_events

pytestmark = pytest.mark.django_db


def test_create_a_plan(client, dentist, patient, practice):
    response = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans",
        {"title": "Implant UR6", "notes": "Patient anxious; prefers mornings"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["patientId"] == str(patient.id)
    assert body["title"] == "Implant UR6" and body["notes"] == "Patient anxious; prefers mornings"
    assert body["status"] == "proposed" and body["currency"] == "GBP"
    assert body["createdById"] == str(dentist.user.id) and body["practitionerId"] is None
    assert body["items"] == [] and body["phases"] == []
    assert body["totals"] == {"total": 0, "completed": 0, "remaining": 0, "itemCount": 0}

    # Title and notes are clinical free text: encrypted at rest.
    row = TreatmentPlan.objects.for_org(practice).get(id=body["id"])
    assert "Implant" not in row.content_encrypted and "anxious" not in row.content_encrypted

    [event] = plan_events(practice)
    assert event.subject_type == "pms_treatment_plan" and event.subject_id == body["id"]
    assert event.data["action"] == "created" and event.data["status"] == "proposed"


def test_the_plans_practitioner_defaults_to_the_authors_linked_profile(client, dentist, patient, practice):
    practitioner = PractitionerFactory(organization=practice)
    PractitionerLink.objects.create(organization=practice, practitioner=practitioner, user=dentist.user)
    response = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "Check-up"}, content_type="application/json"
    )
    assert response.json()["practitionerId"] == str(practitioner.id)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "title"),
        ({"notes": "x"}, "title"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": 5}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": "Plan", "notes": "x" * 10_001}, "notes"),
        ({"title": "Plan", "practitionerId": "nope"}, "practitionerId"),
        ({"title": "Plan", "status": "accepted"}, "status"),
    ],
)
def test_create_refuses_bad_input(client, patient, practice, body, field):
    response = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans",
        body,
        content_type="application/json",
    )
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not TreatmentPlan.objects.for_org(practice).exists()


def test_another_practices_practitioner_in_the_body_is_400(client, patient, other, practice):
    theirs = PractitionerFactory(organization=other.organization)
    response = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans",
        {"title": "Plan", "practitionerId": str(theirs.id)},
        content_type="application/json",
    )
    assert "practitionerId" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not TreatmentPlan.objects.for_org(practice).exists()


def test_a_merged_patient_answers_409(client, patient, practice):
    survivor = PatientFactory(organization=practice)
    patient.merged_into = survivor
    patient.save()
    response = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "Plan"}, content_type="application/json"
    )
    assert assert_error(response, 409, "PATIENT_MERGED")["details"] == {"mergedIntoPatientId": str(survivor.id)}


def test_list_a_patients_plans_with_totals(client, patient, plan, procedures, practice):
    add_item(client, plan["id"], procedures["CROWN"]["id"], tooth=16)
    second = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "Hygiene"}, content_type="application/json"
    ).json()
    PatientFactory(organization=practice)  # another patient's plans are not listed
    response = client.get(f"/clinical/patients/{patient.id}/treatment-plans")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["total"] == 2 and [row["id"] for row in body["items"]] == [second["id"], plan["id"]]
    assert body["items"][1]["totals"] == {"total": 65000, "completed": 0, "remaining": 65000, "itemCount": 1}
    assert "notes" not in body["items"][0]

    client.post(
        f"/clinical/treatment-plans/{second['id']}/status", {"status": "declined"}, content_type="application/json"
    )
    declined = client.get(f"/clinical/patients/{patient.id}/treatment-plans?status=declined").json()
    assert [row["id"] for row in declined["items"]] == [second["id"]]
    assert_error(client.get(f"/clinical/patients/{patient.id}/treatment-plans?status=maybe"), 400, "VALIDATION_ERROR")


def test_list_queries_do_not_grow_with_the_plans(client, patient, procedures, django_assert_max_num_queries):
    for index in range(5):
        created = client.post(
            f"/clinical/patients/{patient.id}/treatment-plans", {"title": f"P{index}"}, content_type="application/json"
        ).json()
        add_item(client, created["id"], procedures["EXAM"]["id"])
    with django_assert_max_num_queries(12):
        response = client.get(f"/clinical/patients/{patient.id}/treatment-plans")
    assert len(response.json()["items"]) == 5


def test_read_and_update_a_plan(client, plan, practice, practitioner):
    read = client.get(f"/clinical/treatment-plans/{plan['id']}")
    assert read.status_code == 200 and read.json()["notes"] == "Pain on biting 36"

    response = client.patch(
        f"/clinical/treatment-plans/{plan['id']}",
        {"title": "Restore LL quadrant", "notes": "", "practitionerId": str(practitioner.id)},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["title"] == "Restore LL quadrant" and body["notes"] == ""
    assert body["practitionerId"] == str(practitioner.id)
    event = plan_events(practice)[-1]
    assert event.data["action"] == "updated"
    assert event.data["changedFields"] == ["notes", "practitionerId", "title"]

    # The same values again change nothing and emit nothing.
    count = len(plan_events(practice))
    same = client.patch(
        f"/clinical/treatment-plans/{plan['id']}", {"title": "Restore LL quadrant"}, content_type="application/json"
    )
    assert same.status_code == 200 and len(plan_events(practice)) == count


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "body"), ({"title": ""}, "title"), ({"status": "accepted"}, "status"), ({"total": 1}, "total")],
)
def test_update_refuses_bad_input(client, plan, body, field):
    response = client.patch(f"/clinical/treatment-plans/{plan['id']}", body, content_type="application/json")
    fields = assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert field in fields
    assert client.get(f"/clinical/treatment-plans/{plan['id']}").json()["title"] == "Restore lower left"


def test_front_desk_may_not_read_or_write_plans(front_desk, patient, plan):
    desk = front_desk.session_client()
    for response in (
        desk.get(f"/clinical/patients/{patient.id}/treatment-plans"),
        desk.get(f"/clinical/treatment-plans/{plan['id']}"),
        desk.get(f"/clinical/treatment-plans/{plan['id']}/items"),
    ):
        assert assert_error(response, 403, "PERMISSION_DENIED")["details"] == {"permission": "clinical:read"}
    for response in (
        desk.post(f"/clinical/patients/{patient.id}/treatment-plans", {"title": "x"}, content_type="application/json"),
        desk.patch(f"/clinical/treatment-plans/{plan['id']}", {"title": "x"}, content_type="application/json"),
        desk.post(
            f"/clinical/treatment-plans/{plan['id']}/status", {"status": "accepted"}, content_type="application/json"
        ),
    ):
        assert assert_error(response, 403, "PERMISSION_DENIED")["details"] == {"permission": "clinical:write"}


def test_an_owner_reads_plans_but_does_not_write_them(owner_client, patient, plan):
    assert owner_client.get(f"/clinical/treatment-plans/{plan['id']}").status_code == 200
    response = owner_client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "x"}, content_type="application/json"
    )
    assert_error(response, 403, "PERMISSION_DENIED")


def test_another_practices_patient_and_plan_are_404_and_unchanged(other, patient, plan, practice):
    theirs = other.session_client()
    for response in (
        theirs.get(f"/clinical/patients/{patient.id}/treatment-plans"),
        theirs.post(
            f"/clinical/patients/{patient.id}/treatment-plans", {"title": "x"}, content_type="application/json"
        ),
        theirs.get(f"/clinical/treatment-plans/{plan['id']}"),
        theirs.patch(f"/clinical/treatment-plans/{plan['id']}", {"title": "x"}, content_type="application/json"),
        theirs.post(
            f"/clinical/treatment-plans/{plan['id']}/status", {"status": "accepted"}, content_type="application/json"
        ),
        theirs.get(f"/clinical/treatment-plans/{plan['id']}/items"),
    ):
        assert_error(response, 404, "NOT_FOUND")
    row = TreatmentPlan.objects.for_org(practice).get(id=plan["id"])
    assert row.status == "proposed"
    assert TreatmentPlan.objects.for_org(practice).count() == 1
    assert not TreatmentPlan.objects.for_org(other.organization).exists()


def test_bad_ids_in_the_path(client):
    assert_error(client.get("/clinical/treatment-plans/6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"), 404, "NOT_FOUND")


ROUTES = [
    ("get", "/clinical/procedures"),
    ("get", "/clinical/patients/{patient}/treatment-plans"),
    ("post", "/clinical/patients/{patient}/treatment-plans"),
    ("get", "/clinical/treatment-plans/{plan}"),
    ("post", "/clinical/treatment-plans/{plan}/items"),
    ("get", "/clinical/treatment-templates"),
]


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_without_the_clinical_workspace_every_credential_gets_pms_workspace_unavailable(
    dentist, patient, plan, practice, method, route
):
    path = route.format(patient=patient.id, plan=plan["id"])
    practice.clinical_workspace_available = False
    practice.save()
    raw, _ = mint(dentist, "read write")
    for client in (dentist.session_client(), dentist.api_client(), bearer(raw)):
        response = getattr(client, method)(
            path, {"title": "x"} if method == "post" else None, content_type="application/json"
        )
        assert_error(response, 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert TreatmentPlan.objects.for_org(practice).count() == 1


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_machine_credentials_get_transport_not_allowed(dentist, patient, plan, practice, method, route):
    path = route.format(patient=patient.id, plan=plan["id"])
    raw, _ = mint(dentist, "read write")
    for client in (dentist.api_client(), bearer(raw)):
        response = getattr(client, method)(
            path, {"title": "x"} if method == "post" else None, content_type="application/json"
        )
        assert_error(response, 403, "transport_not_allowed")
    assert TreatmentPlan.objects.for_org(practice).count() == 1


def test_a_nurse_writes_plans_too(practice, patient):
    nurse = make_member(role="nurse", organization=practice).session_client()
    response = nurse.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "Plan"}, content_type="application/json"
    )
    assert response.status_code == 201
