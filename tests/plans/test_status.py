"""Plan and item status: every move allowed and refused, the automatic moves, concurrent moves, and the event's
data (ids, statuses, totals: no free text)."""

import json

import pytest
from django.db import transaction

from apps.plans import services
from apps.plans.errors import PlanTransitionNotAllowed
from apps.plans.models import PlanStatus, TreatmentPlan
from tests.helpers import assert_error, run_in_threads
from tests.plans.conftest import add_item, plan_events

pytestmark = pytest.mark.django_db(transaction=False)

ALL = ["proposed", "accepted", "in_progress", "completed", "declined", "cancelled"]
ALLOWED = {
    "proposed": ["accepted", "declined", "cancelled"],
    "accepted": ["in_progress", "cancelled"],
    "in_progress": ["cancelled"],
    "completed": [],
    "declined": ["proposed"],
    "cancelled": [],
}


def _move(client, plan_id, status):
    return client.post(
        f"/clinical/treatment-plans/{plan_id}/status", {"status": status}, content_type="application/json"
    )


def _item_move(client, plan_id, item_id, status):
    return client.post(
        f"/clinical/treatment-plans/{plan_id}/items/{item_id}/status",
        {"status": status},
        content_type="application/json",
    )


def _plan_in(client, patient, procedures, status):
    """A plan with two items brought to `status` through the routes."""
    plan = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "P"}, content_type="application/json"
    ).json()
    first = add_item(client, plan["id"], procedures["EXAM"]["id"]).json()
    second = add_item(client, plan["id"], procedures["SCALE"]["id"]).json()
    path = {
        "proposed": [],
        "accepted": ["accepted"],
        "in_progress": ["accepted", "in_progress"],
        "declined": ["declined"],
        "cancelled": ["cancelled"],
    }
    if status == "completed":
        _move(client, plan["id"], "accepted")
        _item_move(client, plan["id"], first["id"], "completed")
        _item_move(client, plan["id"], second["id"], "completed")
    else:
        for step in path[status]:
            assert _move(client, plan["id"], step).status_code == 200
    assert client.get(f"/clinical/treatment-plans/{plan['id']}").json()["status"] == status
    return plan, first, second


@pytest.mark.parametrize("start", ALL)
@pytest.mark.parametrize("target", [status for status in ALL if status != "completed"])
def test_every_plan_move(client, patient, procedures, practice, start, target):
    plan, _, _ = _plan_in(client, patient, procedures, start)
    before = len(plan_events(practice))
    response = _move(client, plan["id"], target)
    if target == start:
        assert response.status_code == 200 and response.json()["status"] == start
        assert len(plan_events(practice)) == before  # a no-op emits nothing
    elif target in ALLOWED[start]:
        assert response.status_code == 200, response.content
        assert response.json()["status"] == target
        [event] = plan_events(practice)[before:]
        assert event.data["action"] == "status_changed" and event.data["changedFields"] == ["status"]
        assert event.data["status"] == target
    else:
        body = assert_error(response, 409, "TREATMENT_PLAN_TRANSITION_NOT_ALLOWED")
        assert body["details"] == {"status": start, "requested": target, "allowed": ALLOWED[start]}
        assert TreatmentPlan.objects.for_org(practice).get(id=plan["id"]).status == start
        assert len(plan_events(practice)) == before


def test_completed_is_never_asked_for(client, plan):
    response = _move(client, plan["id"], "completed")
    assert "status" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    for body in ({}, {"status": "done"}, {"status": 1}):
        response = client.post(f"/clinical/treatment-plans/{plan['id']}/status", body, content_type="application/json")
        assert_error(response, 400, "VALIDATION_ERROR")


def test_completing_items_moves_the_plan_along(client, patient, procedures, practice):
    plan, first, second = _plan_in(client, patient, procedures, "accepted")
    done = _item_move(client, plan["id"], first["id"], "completed")
    assert done.status_code == 200, done.content
    body = done.json()
    assert body["item"]["status"] == "completed" and body["item"]["completedAt"]
    assert body["planStatus"] == "in_progress"
    assert body["totals"] == {"total": 11500, "completed": 5000, "remaining": 6500, "itemCount": 2}
    event = plan_events(practice)[-1]
    assert event.data["action"] == "item_status_changed"
    assert event.data["changedFields"] == ["items", "items.status", "status"]
    assert (event.data["status"], event.data["itemStatus"]) == ("in_progress", "completed")

    # The last planned item cancelled: nothing left to do, one item done → completed.
    last = _item_move(client, plan["id"], second["id"], "cancelled")
    assert last.json()["planStatus"] == "completed"
    assert last.json()["totals"] == {"total": 5000, "completed": 5000, "remaining": 0, "itemCount": 1}
    assert client.get(f"/clinical/treatment-plans/{plan['id']}").json()["status"] == "completed"


def test_cancelling_every_item_does_not_complete_a_plan(client, patient, procedures):
    plan, first, second = _plan_in(client, patient, procedures, "accepted")
    _item_move(client, plan["id"], first["id"], "cancelled")
    assert _item_move(client, plan["id"], second["id"], "cancelled").json()["planStatus"] == "accepted"


@pytest.mark.parametrize(
    ("plan_status", "target", "ok"),
    [
        ("proposed", "completed", False),
        ("proposed", "cancelled", True),
        ("accepted", "completed", True),
        ("in_progress", "completed", True),
        ("in_progress", "cancelled", True),
        ("declined", "completed", False),
        ("declined", "cancelled", False),
        ("cancelled", "completed", False),
        ("completed", "cancelled", False),
    ],
)
def test_item_moves_depend_on_the_plan(client, patient, procedures, practice, plan_status, target, ok):
    plan, first, second = _plan_in(client, patient, procedures, plan_status)
    item = second if plan_status != "completed" else first
    before = client.get(f"/clinical/treatment-plans/{plan['id']}").json()
    response = _item_move(client, plan["id"], item["id"], target)
    if ok:
        assert response.status_code == 200, response.content
        assert response.json()["item"]["status"] == target
    else:
        body = assert_error(response, 409, "TREATMENT_PLAN_ITEM_TRANSITION_NOT_ALLOWED")
        if plan_status == "completed":
            assert body["details"] == {"status": "completed", "requested": target, "allowed": []}
        else:
            assert body["details"]["planStatus"] == plan_status and body["details"]["allowed"] == []
        after = client.get(f"/clinical/treatment-plans/{plan['id']}").json()
        assert after["items"] == before["items"] and after["status"] == before["status"]


def test_item_moves_are_final_and_repeats_are_no_ops(client, patient, procedures, practice):
    plan, first, second = _plan_in(client, patient, procedures, "accepted")
    _item_move(client, plan["id"], first["id"], "cancelled")
    count = len(plan_events(practice))
    assert _item_move(client, plan["id"], first["id"], "cancelled").status_code == 200
    assert len(plan_events(practice)) == count
    body = assert_error(
        _item_move(client, plan["id"], first["id"], "completed"), 409, "TREATMENT_PLAN_ITEM_TRANSITION_NOT_ALLOWED"
    )
    assert body["details"] == {"status": "cancelled", "requested": "completed", "allowed": []}
    for status in ("planned", "done"):
        assert_error(_item_move(client, plan["id"], second["id"], status), 400, "VALIDATION_ERROR")


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_moves_leave_one_result(dentist, patient, practice):
    """Accept and decline race on a proposed plan: one wins, the other is judged against its result (409)."""
    plan = services_plan(dentist, patient)
    outcomes = []
    targets = iter(["accepted", "declined"])

    def worker():
        target = next(targets)
        try:
            services.plan_set_status(organization=practice, actor=dentist.user, plan_id=plan.id, status=target)
            outcomes.append(("ok", target))
        except PlanTransitionNotAllowed as refused:
            outcomes.append(("refused", refused.details["status"]))

    assert run_in_threads(worker, count=2) == []
    final = TreatmentPlan.objects.for_org(practice).get(id=plan.id).status
    winners = [target for kind, target in outcomes if kind == "ok"]
    refusals = [seen for kind, seen in outcomes if kind == "refused"]
    assert winners == [final] and refusals == [final]
    assert [event.data["status"] for event in plan_events(practice)] == ["proposed", final]


def services_plan(member, patient):
    with transaction.atomic():
        return services.plan_create(organization=member.organization, actor=member.user, patient=patient, title="Race")


def test_the_events_data_holds_no_free_text(client, patient, plan, procedures, practice, practitioner):
    """Title, notes and procedure names never reach an event: ids, statuses, counts and totals only."""
    item = add_item(client, plan["id"], procedures["FILL-CO"]["id"], tooth=36, surfaces=["O"]).json()
    client.patch(
        f"/clinical/treatment-plans/{plan['id']}",
        {"title": "Secret title", "notes": "Secret notes about pain"},
        content_type="application/json",
    )
    _move(client, plan["id"], "accepted")
    _item_move(client, plan["id"], item["id"], "completed")
    events = plan_events(practice)
    assert [event.data["action"] for event in events] == [
        "created",
        "item_added",
        "updated",
        "status_changed",
        "item_status_changed",
    ]
    allowed_keys = {
        "planId",
        "patientId",
        "status",
        "currency",
        "totals",
        "itemId",
        "itemStatus",
        "action",
        "changedFields",
        "templateId",
        "itemIds",
    }
    for event in events:
        assert set(event.data) <= allowed_keys, event.data
        text = json.dumps(event.data)
        for secret in ("Secret", "pain", "Restore", "Composite", "FILL-CO", "biting"):
            assert secret not in text
        assert event.data["planId"] == plan["id"] and event.data["patientId"] == str(patient.id)
        assert set(event.data["totals"]) == {"total", "completed", "remaining", "itemCount"}
    assert events[2].data["changedFields"] == ["notes", "title"]
    assert events[-1].data["totals"] == {"total": 12000, "completed": 12000, "remaining": 0, "itemCount": 1}
    assert events[-1].data["status"] == PlanStatus.COMPLETED
