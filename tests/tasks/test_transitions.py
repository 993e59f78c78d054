"""Tasks: the status machine (POST /tasks/{id}/complete, /reopen, /cancel), its 409s, and its events."""

import pytest

from apps.tasks.models import Task
from tests.helpers import assert_error
from tests.tasks.helpers import make_task, post_json, snapshot, task_events, url


def test_complete_then_reopen_then_cancel_then_reopen(owner, api):
    org = owner.organization
    task = make_task(org)

    completed = post_json(api, url(task, "complete"))
    assert completed.status_code == 200, completed.content
    assert completed.json()["status"] == "completed"
    assert completed.json()["completedAt"] is not None
    assert completed.json()["cancelledAt"] is None

    reopened = post_json(api, url(task, "reopen"))
    assert reopened.status_code == 200, reopened.content
    assert reopened.json()["status"] == "open"
    assert reopened.json()["completedAt"] is None

    cancelled = post_json(api, url(task, "cancel"))
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["cancelledAt"] is not None
    assert cancelled.json()["completedAt"] is None

    again = post_json(api, url(task, "reopen"))
    assert again.status_code == 200, again.content
    assert again.json()["status"] == "open" and again.json()["cancelledAt"] is None

    events = task_events(org, task.id)
    assert [e.type for e in events] == ["task.completed", "task.reopened", "task.cancelled", "task.reopened"]
    assert [e.data["action"] for e in events] == ["completed", "reopened", "cancelled", "reopened"]
    assert [e.data["changedFields"] for e in events] == [
        ["status", "completedAt"],
        ["status", "completedAt"],
        ["status", "cancelledAt"],
        ["status", "cancelledAt"],
    ]
    assert all(e.actor_id == str(owner.user.id) for e in events)
    assert all(
        set(e.data) == {"action", "changedFields", "status", "priority", "assigneeId", "patientId", "journeyId"}
        for e in events
    )


@pytest.mark.parametrize(
    ("status", "action", "allowed"),
    [
        ("completed", "complete", ["open"]),
        ("cancelled", "complete", ["open"]),
        ("completed", "cancel", ["open"]),
        ("cancelled", "cancel", ["open"]),
        ("open", "reopen", ["completed", "cancelled"]),
    ],
)
def test_illegal_transitions_are_409_and_change_nothing(owner, api, status, action, allowed):
    task = make_task(owner.organization, status=status)
    before = snapshot(owner.organization)

    response = post_json(api, url(task, action))

    body = assert_error(response, 409, "TASK_TRANSITION_NOT_ALLOWED")
    assert body["details"]["status"] == status
    assert body["details"]["allowedFrom"] == allowed
    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("action", ["complete", "reopen", "cancel"])
def test_transition_of_another_practices_task_is_404(owner, outsider, api, action):
    theirs = make_task(outsider.organization, status="completed" if action == "reopen" else "open")
    before = snapshot(outsider.organization)

    assert_error(post_json(api, url(theirs, action)), 404, "NOT_FOUND")
    assert snapshot(outsider.organization) == before


@pytest.mark.parametrize("action", ["complete", "reopen", "cancel"])
def test_transition_needs_task_update(owner, member_factory, action):
    analyst = member_factory(role="analyst", organization=owner.organization)
    task = make_task(owner.organization, status="completed" if action == "reopen" else "open")
    before = snapshot(owner.organization)

    assert_error(post_json(analyst.api_client(), url(task, action)), 403, "PERMISSION_DENIED")
    assert snapshot(owner.organization) == before


def test_wrong_method_on_an_action_is_405(owner, api):
    task = make_task(owner.organization)

    assert_error(api.get(url(task, "complete")), 405, "METHOD_NOT_ALLOWED")
    assert Task.objects.for_org(owner.organization).get(id=task.id).status == "open"
