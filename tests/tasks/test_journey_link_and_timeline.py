"""Tasks linked to a journey (journeyId on create, update, read and the list filter; the journey's patient) and
tasks about a patient on that patient's timeline (task_created, _completed, _cancelled, _reopened)."""

import uuid

import pytest

from apps.journeys.models import Journey
from apps.patients.models import Activity
from apps.tasks.models import Task
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.tasks.helpers import TASKS, make_task, patch_json, post_json, snapshot, task_events, url


def open_journey(client, patient) -> dict:
    response = post_json(client, "/journeys", {"patientId": str(patient.id)})
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def journey(owner, api):
    return open_journey(api, PatientFactory(organization=owner.organization))


def timeline(client, patient_id) -> list[dict]:
    response = client.get(f"/patients/{patient_id}/timeline")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def field_error(response, field: str) -> None:
    details = assert_error(response, 400, "VALIDATION_ERROR")["details"]
    assert list(details["fields"]) == [field], details


# --- the journey link --------------------------------------------------------------------------------------------


def test_a_journey_without_patient_id_gives_the_task_the_journeys_patient(owner, api, journey):
    response = post_json(api, TASKS, {"title": "Send the plan", "journeyId": journey["id"]})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["journeyId"] == journey["id"] and body["patientId"] == journey["patientId"]
    assert api.get(url(body["id"])).json() == body
    (event,) = task_events(owner.organization, body["id"], "task.created")
    assert event.data["journeyId"] == journey["id"] and event.data["patientId"] == journey["patientId"]


def test_patient_id_and_journey_id_of_the_same_patient_are_accepted(api, journey):
    body = {"title": "Book consult", "patientId": journey["patientId"], "journeyId": journey["id"]}
    response = post_json(api, TASKS, body)
    assert response.status_code == 201, response.content
    assert response.json()["journeyId"] == journey["id"]
    with_null_patient = post_json(api, TASKS, {**body, "patientId": None})
    assert with_null_patient.json()["patientId"] == journey["patientId"]


def test_a_journey_of_another_patient_is_400_and_changes_nothing(owner, api, journey):
    other = PatientFactory(organization=owner.organization)
    before = snapshot(owner.organization)

    response = post_json(api, TASKS, {"title": "x", "patientId": str(other.id), "journeyId": journey["id"]})

    field_error(response, "journeyId")
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("bad", ["nope", "", 12, "5b1e7a3c-2f4d-4c8e-9a6b-0d3f2e1c4b5a"])
def test_a_bad_or_unknown_journey_id_is_400(owner, api, bad):
    before = snapshot(owner.organization)
    field_error(post_json(api, TASKS, {"title": "x", "journeyId": bad}), "journeyId")
    assert snapshot(owner.organization) == before


def test_another_practices_journey_is_400_in_bodies_and_matches_nothing_in_the_filter(owner, api, outsider):
    theirs = open_journey(outsider.api_client(), PatientFactory(organization=outsider.organization))
    task = make_task(owner.organization)
    before = snapshot(owner.organization)

    field_error(post_json(api, TASKS, {"title": "x", "journeyId": theirs["id"]}), "journeyId")
    field_error(patch_json(api, url(task), {"journeyId": theirs["id"]}), "journeyId")
    make_task(outsider.organization, journey_id=theirs["id"], patient_id=theirs["patientId"])
    assert api.get(TASKS, {"journeyId": theirs["id"]}).json()["items"] == []
    their_task = Task.objects.for_org(outsider.organization).get()
    assert_error(patch_json(api, url(their_task), {"journeyId": None}), 404, "NOT_FOUND")
    assert snapshot(owner.organization) == before


def test_update_links_moves_and_unlinks(owner, api, journey):
    org = owner.organization
    task = post_json(api, TASKS, {"title": "Chase"}).json()
    other_patient = PatientFactory(organization=org)

    linked = patch_json(api, url(task), {"journeyId": journey["id"]})
    assert linked.status_code == 200, linked.content
    assert linked.json()["patientId"] == journey["patientId"]
    event = task_events(org, task["id"], "task.updated")[-1]
    assert event.data["changedFields"] == ["patientId", "journeyId"] and event.data["journeyId"] == journey["id"]

    before = snapshot(org)
    field_error(patch_json(api, url(task), {"patientId": str(other_patient.id)}), "patientId")
    field_error(patch_json(api, url(task), {"patientId": None}), "patientId")
    field_error(
        patch_json(api, url(task), {"patientId": str(other_patient.id), "journeyId": journey["id"]}), "journeyId"
    )
    assert snapshot(org) == before

    unlinked = patch_json(api, url(task), {"journeyId": None})
    assert unlinked.json()["journeyId"] is None and unlinked.json()["patientId"] == journey["patientId"]
    moved = patch_json(api, url(task), {"patientId": str(other_patient.id)})
    assert moved.json()["patientId"] == str(other_patient.id)
    relinked = patch_json(api, url(task), {"journeyId": journey["id"]})
    assert relinked.json()["patientId"] == journey["patientId"]
    cleared = patch_json(api, url(task), {"journeyId": None, "patientId": None})
    assert (cleared.json()["journeyId"], cleared.json()["patientId"]) == (None, None)


def test_list_filters_by_journey(owner, api, journey):
    linked = post_json(api, TASKS, {"title": "Linked", "journeyId": journey["id"]}).json()
    post_json(api, TASKS, {"title": "Same patient, no journey", "patientId": journey["patientId"]})

    listed = api.get(TASKS, {"journeyId": journey["id"]}).json()

    assert [t["id"] for t in listed["items"]] == [linked["id"]] and listed["total"] == 1
    assert api.get(TASKS, {"journeyId": str(uuid.uuid4())}).json()["total"] == 0
    field_error(api.get(TASKS, {"journeyId": "nope"}), "journeyId")


def test_a_deleted_journey_leaves_its_tasks_unlinked(owner, api, journey):
    task = post_json(api, TASKS, {"title": "Linked", "journeyId": journey["id"]}).json()
    Journey.objects.for_org(owner.organization).filter(id=journey["id"]).delete()
    assert api.get(url(task["id"])).json()["journeyId"] is None


@pytest.mark.parametrize("role", ["analyst", "dentist"])
def test_roles_without_task_create_cannot_link(owner, member_factory, journey, role):
    client = member_factory(role=role, organization=owner.organization).api_client()
    before = snapshot(owner.organization)
    assert_error(post_json(client, TASKS, {"title": "x", "journeyId": journey["id"]}), 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


def test_openapi_documents_journey_id(api):
    schema = api.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    for name in ("Task", "TaskCreateRequest", "PatchedTaskUpdateRequest"):
        assert "journeyId" in components[name]["properties"], name
    parameters = {p["name"] for p in schema["paths"]["/tasks"]["get"]["parameters"]}
    assert "journeyId" in parameters


# --- the patient timeline ------------------------------------------------------------------------------------------


def test_creation_and_transitions_land_on_the_patients_timeline_newest_first(owner, api, journey):
    response = post_json(
        api, TASKS, {"title": "Secret title", "description": "Private words", "journeyId": journey["id"]}
    )
    task = response.json()
    assert patch_json(api, url(task), {"priority": "high"}).status_code == 200  # an update writes no entry
    for action in ("complete", "reopen", "cancel", "reopen"):
        assert post_json(api, url(task, action)).status_code == 200

    entries = [e for e in timeline(api, journey["patientId"]) if e["kind"].startswith("task_")]

    kinds = [e["kind"] for e in entries]
    assert kinds == ["task_reopened", "task_cancelled", "task_reopened", "task_completed", "task_created"]
    assert all(e["data"]["taskId"] == task["id"] and e["data"]["journeyId"] == journey["id"] for e in entries)
    assert entries[0]["data"]["status"] == "open" and entries[1]["data"]["status"] == "cancelled"
    assert entries[0]["data"]["priority"] == "high" and entries[-1]["data"]["priority"] == "normal"
    assert set(entries[0]["data"]) == {"taskId", "journeyId", "status", "priority", "assigneeId"}
    assert all(e["summary"] == "" and e["actorUserId"] == str(owner.user.id) for e in entries)
    assert "Secret" not in str(entries) and "Private" not in str(entries)
    embedded = api.get(f"/patients/{journey['patientId']}", {"embed": "timeline"}).json()["timeline"]["items"]
    assert [e["kind"] for e in embedded][:5] == kinds


def test_a_task_without_a_patient_writes_no_entry(owner, api):
    task = post_json(api, TASKS, {"title": "Order gloves"}).json()
    post_json(api, url(task, "complete"))
    assert not Activity.objects.for_org(owner.organization).exists()


def test_a_refused_transition_writes_no_entry(owner, api):
    patient = PatientFactory(organization=owner.organization)
    task = post_json(api, TASKS, {"title": "Call", "patientId": str(patient.id)}).json()
    before = snapshot(owner.organization)
    assert_error(post_json(api, url(task, "reopen")), 409, "TASK_TRANSITION_NOT_ALLOWED")
    assert snapshot(owner.organization) == before
    assert [e["kind"] for e in timeline(api, patient.id)] == ["task_created"]


def test_erasing_the_patient_removes_the_tasks_and_their_entries(owner, api, journey):
    task = post_json(api, TASKS, {"title": "Call", "journeyId": journey["id"]}).json()
    post_json(api, url(task, "complete"))
    assert api.delete(f"/patients/{journey['patientId']}").status_code == 200
    assert not Activity.objects.for_org(owner.organization).filter(patient_id=journey["patientId"]).exists()
    assert not Task.objects.for_org(owner.organization).exists()
