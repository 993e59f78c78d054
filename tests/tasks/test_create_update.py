"""Tasks: create (POST /tasks), read (GET /tasks/{id}), update (PATCH /tasks/{id}); validation, tenancy of every id,
permissions per role, and the task.created / task.updated events (ids and field names only, never text)."""

import uuid

import pytest

from apps.tasks.models import Task
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.tasks.helpers import TASKS, make_task, patch_json, post_json, snapshot, task_events, url

TASK_FIELDS = {
    "id",
    "title",
    "description",
    "dueAt",
    "priority",
    "status",
    "completedAt",
    "cancelledAt",
    "assigneeId",
    "patientId",
    "journeyId",
    "createdById",
    "createdAt",
    "updatedAt",
}
ROLES = ("owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse")
READERS = {"owner", "manager", "front_desk", "telesales", "analyst"}
WRITERS = {"owner", "manager", "front_desk", "telesales"}


# --- create ----------------------------------------------------------------------------------------------------


def test_create_with_every_field(owner, member_factory, api):
    org = owner.organization
    colleague = member_factory(role="front_desk", organization=org)
    patient = PatientFactory(organization=org)

    response = post_json(
        api,
        TASKS,
        {
            "title": "Send the treatment plan",
            "description": "Patient asked for the plan by e-mail, with the payment options.",
            "dueAt": "2030-05-01T09:30:00+02:00",
            "priority": "high",
            "assigneeId": str(colleague.user.id),
            "patientId": str(patient.id),
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == TASK_FIELDS
    assert body["title"] == "Send the treatment plan"
    assert body["dueAt"] == "2030-05-01T07:30:00.000000Z"
    assert body["priority"] == "high"
    assert body["status"] == "open"
    assert body["completedAt"] is None and body["cancelledAt"] is None
    assert body["assigneeId"] == str(colleague.user.id)
    assert body["patientId"] == str(patient.id)
    assert body["createdById"] == str(owner.user.id)
    task = Task.objects.for_org(org).get(id=body["id"])
    assert task.description.startswith("Patient asked")
    assert api.get(url(body["id"])).json() == body


def test_create_defaults_assign_the_creator_with_normal_priority(owner, api):
    response = post_json(api, TASKS, {"title": "Chase lab"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["assigneeId"] == str(owner.user.id)
    assert body["priority"] == "normal"
    assert body["description"] == ""
    assert body["dueAt"] is None and body["patientId"] is None


def test_create_can_leave_the_task_unassigned(api):
    response = post_json(api, TASKS, {"title": "Anyone", "assigneeId": None})

    assert response.status_code == 201, response.content
    assert response.json()["assigneeId"] is None


def test_create_records_task_created_with_ids_only(owner, api):
    patient = PatientFactory(organization=owner.organization)
    response = post_json(
        api,
        TASKS,
        {"title": "Secret title", "description": "Private words", "patientId": str(patient.id), "priority": "urgent"},
    )
    assert response.status_code == 201, response.content

    (event,) = task_events(owner.organization, response.json()["id"], "task.created")
    assert event.actor_type == "user" and event.actor_id == str(owner.user.id)
    assert event.data == {
        "action": "created",
        "status": "open",
        "priority": "urgent",
        "assigneeId": str(owner.user.id),
        "patientId": str(patient.id),
        "journeyId": None,
    }
    assert "Secret" not in str(event.data) and "Private" not in str(event.data)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": 5}, None),
        ({"title": "ok", "description": "d" * 5001}, "description"),
        ({"title": "ok", "dueAt": "2030-05-01T09:30:00"}, "dueAt"),
        ({"title": "ok", "dueAt": "tomorrow"}, "dueAt"),
        ({"title": "ok", "dueAt": 12}, "dueAt"),
        ({"title": "ok", "dueAt": "2030-13-45T09:30:00Z"}, "dueAt"),
        ({"title": "ok", "priority": "asap"}, "priority"),
        ({"title": "ok", "assigneeId": "not-a-uuid"}, "assigneeId"),
        ({"title": "ok", "assigneeId": 7}, "assigneeId"),
        ({"title": "ok", "assigneeId": str(uuid.uuid4())}, "assigneeId"),
        ({"title": "ok", "patientId": "nope"}, "patientId"),
        ({"title": "ok", "patientId": str(uuid.uuid4())}, "patientId"),
        ({"title": "ok", "status": "completed"}, "status"),
        ({"title": "ok", "journeyId": str(uuid.uuid4())}, "journeyId"),
    ],
)
def test_create_validation_is_400_in_the_envelope(owner, api, payload, field):
    before = snapshot(owner.organization)

    response = post_json(api, TASKS, payload)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    if field:
        assert field in body["details"]["fields"], body
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("raw", ["", "[]", "not json", '"title"', "null"])
def test_create_with_a_body_that_is_not_an_object_is_400(owner, api, raw):
    before = snapshot(owner.organization)

    response = api.post(TASKS, raw, content_type="application/json")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert snapshot(owner.organization) == before


def test_create_with_another_practices_patient_is_400_naming_the_field(owner, outsider, api):
    theirs = PatientFactory(organization=outsider.organization)
    before = snapshot(owner.organization)

    response = post_json(api, TASKS, {"title": "x", "patientId": str(theirs.id)})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"patientId": ["does not exist in this practice"]}
    assert snapshot(owner.organization) == before


def test_create_with_another_practices_member_as_assignee_is_400_naming_the_field(owner, outsider, api):
    before = snapshot(owner.organization)

    response = post_json(api, TASKS, {"title": "x", "assigneeId": str(outsider.user.id)})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"assigneeId": ["is not a member of this practice"]}
    assert snapshot(owner.organization) == before


def test_create_for_a_merged_patient_is_409(owner, api):
    org = owner.organization
    survivor, duplicate = PatientFactory(organization=org), PatientFactory(organization=org)
    merged = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})
    assert merged.status_code == 200, merged.content
    before = snapshot(org)

    response = post_json(api, TASKS, {"title": "x", "patientId": str(duplicate.id)})

    body = assert_error(response, 409, "PATIENT_MERGED")
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert snapshot(org) == before


def test_create_through_a_browser_session(owner):
    response = post_json(owner.session_client(), TASKS, {"title": "From the app"})

    assert response.status_code == 201, response.content


# --- read ------------------------------------------------------------------------------------------------------


def test_read_of_another_practices_task_is_404(owner, outsider, api):
    theirs = make_task(outsider.organization)

    assert_error(api.get(url(theirs)), 404, "NOT_FOUND")
    assert_error(api.get(url(uuid.uuid4())), 404, "NOT_FOUND")


def test_read_with_a_malformed_id_is_400(api):
    body = assert_error(api.get(url("not-a-uuid")), 400, "VALIDATION_ERROR")
    assert "id" in body["details"]["fields"]


# --- update ----------------------------------------------------------------------------------------------------


def test_update_changes_only_what_is_sent_and_records_the_changed_fields(owner, member_factory, api):
    org = owner.organization
    colleague = member_factory(role="telesales", organization=org)
    patient = PatientFactory(organization=org)
    task = make_task(org, assignee=owner.user, description="old words")

    response = patch_json(
        api,
        url(task),
        {
            "title": "New title",
            "priority": "low",
            "assigneeId": str(colleague.user.id),
            "patientId": str(patient.id),
            "dueAt": "2031-01-01T00:00:00Z",
            "description": None,
        },
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["title"] == "New title"
    assert body["priority"] == "low"
    assert body["assigneeId"] == str(colleague.user.id)
    assert body["patientId"] == str(patient.id)
    assert body["dueAt"] == "2031-01-01T00:00:00.000000Z"
    assert body["description"] == ""
    (event,) = task_events(org, task.id, "task.updated")
    assert event.data["action"] == "updated"
    assert sorted(event.data["changedFields"]) == sorted(
        ["title", "priority", "assigneeId", "patientId", "dueAt", "description"]
    )
    assert event.data["assigneeId"] == str(colleague.user.id)
    assert "New title" not in str(event.data)


def test_update_that_changes_nothing_records_no_event(owner, api):
    task = make_task(owner.organization, priority="high")

    response = patch_json(api, url(task), {"priority": "high", "title": task.title})

    assert response.status_code == 200, response.content
    assert task_events(owner.organization, task.id) == []


def test_update_can_clear_due_date_patient_and_assignee(owner, api):
    org = owner.organization
    task = make_task(org, assignee=owner.user, patient=PatientFactory(organization=org), due_at="2030-01-01T00:00:00Z")

    response = patch_json(api, url(task), {"dueAt": None, "patientId": None, "assigneeId": None})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dueAt"] is None and body["patientId"] is None and body["assigneeId"] is None


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": None}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"description": "d" * 5001}, "description"),
        ({"dueAt": "2030-05-01 09:30"}, "dueAt"),
        ({"priority": None}, "priority"),
        ({"assigneeId": str(uuid.uuid4())}, "assigneeId"),
        ({"patientId": str(uuid.uuid4())}, "patientId"),
        ({"status": "completed"}, "status"),
        ({"completedAt": "2030-05-01T09:30:00Z"}, "completedAt"),
    ],
)
def test_update_validation_is_400_and_changes_nothing(owner, api, payload, field):
    task = make_task(owner.organization)
    before = snapshot(owner.organization)

    response = patch_json(api, url(task), payload)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    assert snapshot(owner.organization) == before


def test_update_with_an_empty_body_is_400(owner, api):
    task = make_task(owner.organization)

    assert_error(api.patch(url(task), "", content_type="application/json"), 400, "VALIDATION_ERROR")


def test_update_with_another_practices_ids_is_400_naming_the_field(owner, outsider, api):
    task = make_task(owner.organization)
    their_patient = PatientFactory(organization=outsider.organization)
    before = snapshot(owner.organization)

    patient = patch_json(api, url(task), {"patientId": str(their_patient.id)})
    assignee = patch_json(api, url(task), {"assigneeId": str(outsider.user.id)})

    assert assert_error(patient, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "patientId": ["does not exist in this practice"]
    }
    assert assert_error(assignee, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "assigneeId": ["is not a member of this practice"]
    }
    assert snapshot(owner.organization) == before


def test_update_to_a_merged_patient_is_409(owner, api):
    org = owner.organization
    survivor, duplicate = PatientFactory(organization=org), PatientFactory(organization=org)
    assert (
        post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}).status_code == 200
    )
    task = make_task(org)
    before = snapshot(org)

    response = patch_json(api, url(task), {"patientId": str(duplicate.id)})

    assert_error(response, 409, "PATIENT_MERGED")
    assert snapshot(org) == before


def test_update_of_another_practices_task_is_404_and_changes_nothing(owner, outsider, api):
    theirs = make_task(outsider.organization)
    before = snapshot(outsider.organization)

    response = patch_json(api, url(theirs), {"title": "mine now"})

    assert_error(response, 404, "NOT_FOUND")
    assert snapshot(outsider.organization) == before


# --- permissions per role ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_permissions_per_role(owner, member_factory, role):
    org = owner.organization
    member = member_factory(role=role, organization=org)
    client = member.api_client()
    task = make_task(org)

    read_one = client.get(url(task))
    read_list = client.get(TASKS)
    if role in READERS:
        assert read_one.status_code == 200, read_one.content
        assert read_list.status_code == 200, read_list.content
    else:
        assert_error(read_one, 403, "PERMISSION_DENIED")
        assert_error(read_list, 403, "PERMISSION_DENIED")

    before = snapshot(org)
    created = post_json(client, TASKS, {"title": "x"})
    updated = patch_json(client, url(task), {"title": "y"})
    completed = post_json(client, url(task, "complete"))
    if role in WRITERS:
        assert created.status_code == 201, created.content
        assert updated.status_code == 200, updated.content
        assert completed.status_code == 200, completed.content
    else:
        for response in (created, updated, completed):
            assert_error(response, 403, "PERMISSION_DENIED")
        assert snapshot(org) == before


def test_unauthenticated_is_401(owner, client):
    task = make_task(owner.organization)

    assert_error(client.get(TASKS), 401, "UNAUTHENTICATED")
    assert_error(client.get(url(task)), 401, "UNAUTHENTICATED")
    assert_error(post_json(client, TASKS, {"title": "x"}), 401, "UNAUTHENTICATED")
