"""Rules through the routes: create, read, list, change, enable/disable, delete; the catalogue; validation naming the
place at fault (another practice's ids included); role and tenancy refusals with nothing changed."""

import pytest

from apps.automations.models import AutomationRule
from apps.journeys.public import Stage
from tests.automations.conftest import make_rule, patch, post
from tests.factories import TagFactory
from tests.helpers import assert_error


def test_create_read_list_patch_delete(api, owner, stages, tag):
    created = make_rule(
        api,
        conditions=[{"field": "patient.status", "operator": "eq", "value": "lead"}],
        actions=[
            {
                "type": "create_task",
                "params": {"title": "Call the lead", "assigneeRole": "telesales", "dueInMinutes": 5},
            },
            {"type": "add_tag", "params": {"tagId": str(tag.id)}},
        ],
    )
    assert created["enabled"] is True and created["nextRunAt"] is None
    assert created["trigger"] == {"type": "event", "eventType": "patient.created"}
    assert created["conditions"] == [{"field": "patient.status", "operator": "eq", "value": "lead"}]
    assert created["actions"] == [
        {"type": "create_task", "params": {"title": "Call the lead", "assigneeRole": "telesales", "dueInMinutes": 5}},
        {"type": "add_tag", "params": {"tagId": str(tag.id)}},
    ]
    assert api.get(f"/automations/{created['id']}").json() == created
    listed = api.get("/automations").json()
    assert listed == {"items": [created], "nextCursor": None}

    changed = patch(api, f"/automations/{created['id']}", {"name": "Call leads fast", "conditions": []})
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "Call leads fast" and changed.json()["conditions"] == []
    assert changed.json()["actions"] == created["actions"]

    disabled = post(api, f"/automations/{created['id']}/disable")
    assert disabled.status_code == 200 and disabled.json()["enabled"] is False
    enabled = post(api, f"/automations/{created['id']}/enable")
    assert enabled.status_code == 200 and enabled.json()["enabled"] is True

    deleted = api.delete(f"/automations/{created['id']}")
    assert deleted.status_code == 204
    assert not AutomationRule.objects.for_org(owner.organization).exists()
    assert_error(api.get(f"/automations/{created['id']}"), 404, "NOT_FOUND")


def test_schedule_rule_gets_its_next_tick_in_practice_time(api, owner, time_machine):
    owner.organization.timezone = "Europe/Rome"
    owner.organization.save()
    time_machine.move_to("2026-03-02T10:00:00+00:00", tick=False)  # a Monday, 11:00 in Rome
    daily = make_rule(
        api,
        trigger={"type": "schedule", "frequency": "daily", "time": "09:30"},
        actions=[{"type": "create_task", "params": {"title": "Review yesterday's leads"}}],
    )
    assert daily["trigger"] == {"type": "schedule", "frequency": "daily", "time": "09:30", "weekday": None}
    assert daily["nextRunAt"] == "2026-03-03T08:30:00Z"  # tomorrow 09:30 in Rome
    weekly = patch(api, f"/automations/{daily['id']}", {"trigger": {"type": "schedule", "frequency": "weekly",
                                                                    "time": "18:00", "weekday": 0}})  # fmt: skip
    assert weekly.status_code == 200, weekly.content
    assert weekly.json()["nextRunAt"] == "2026-03-02T17:00:00Z"  # today 18:00 in Rome
    assert post(api, f"/automations/{daily['id']}/disable").json()["nextRunAt"] is None


def test_catalogue_lists_triggers_fields_operators_and_actions(api):
    body = api.get("/automations/catalogue").json()
    events = {e["type"]: e for e in body["triggers"]["events"]}
    assert len(events) == 40
    fields = {f["name"]: f for f in events["journey.stage_changed"]["fields"]}
    assert fields["data.stageId"]["kind"] == "uuid" and fields["data.stageId"]["ref"] == "stage"
    assert "patient.tagIds" in fields and "actor.type" in fields
    assert body["operators"]["byKind"]["list"] == ["contains", "not_contains", "exists"]
    actions = {a["type"]: a for a in body["actions"]}
    assert set(actions) == {"create_task", "send_template", "move_stage", "add_tag", "remove_tag", "set_patient_status"}
    assert [p["name"] for p in actions["move_stage"]["params"]] == ["stageId"]
    assert body["limits"]["chainDepth"] == 5


BAD_BODIES = [
    ({"trigger": {"type": "event", "eventType": "patient.teleported"}}, "trigger.eventType"),
    ({"trigger": {"type": "webhook"}}, "trigger.type"),
    ({"trigger": {"type": "schedule", "frequency": "hourly", "time": "09:00"}}, "trigger.frequency"),
    ({"trigger": {"type": "schedule", "frequency": "daily", "time": "25:00"}}, "trigger.time"),
    ({"trigger": {"type": "schedule", "frequency": "weekly", "time": "09:00"}}, "trigger.weekday"),
    ({"conditions": [{"field": "patient.shoeSize", "operator": "eq", "value": 42}]}, "conditions[0].field"),
    ({"conditions": [{"field": "patient.status", "operator": "like", "value": "lead"}]}, "conditions[0].operator"),
    ({"conditions": [{"field": "patient.status", "operator": "eq", "value": "royalty"}]}, "conditions[0].value"),
    ({"conditions": [{"field": "patient.status", "operator": "in", "value": []}]}, "conditions[0].value"),
    ({"conditions": [{"field": "patient.tagIds", "operator": "contains", "value": "nope"}]}, "conditions[0].value"),
    ({"conditions": "all"}, "conditions"),
    ({"actions": []}, "actions"),
    ({"actions": [{"type": "webhook", "params": {"url": "https://example.com"}}]}, "actions[0].type"),
    ({"actions": [{"type": "create_task", "params": {}}]}, "actions[0].params.title"),
    ({"actions": [{"type": "create_task", "params": {"title": "x", "dueInMinutes": -1}}]},
     "actions[0].params.dueInMinutes"),
    ({"actions": [{"type": "create_task", "params": {"title": "x", "assigneeRole": "king"}}]},
     "actions[0].params.assigneeRole"),
    ({"actions": [{"type": "create_task", "params": {"title": "x", "colour": "red"}}]}, "actions[0].params.colour"),
    ({"actions": [{"type": "add_tag", "params": {"tagId": "not-a-uuid"}}]}, "actions[0].params.tagId"),
    ({"actions": [{"type": "move_stage", "params": {}}]}, "actions[0].params.stageId"),
    ({"actions": [{"type": "set_patient_status", "params": {"status": "deceased"}}]}, "actions[0].params.status"),
    (
        {"trigger": {"type": "schedule", "frequency": "daily", "time": "09:00"},
         "actions": [{"type": "add_tag", "params": {"tagId": "6f1c1d4e-2b7a-4c1e-9a55-0d7f3c2b1a90"}}]},
        "actions[0].type",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("body", "place"), BAD_BODIES)
def test_bad_rules_are_400_naming_the_place(api, owner, body, place):
    data = {
        "name": "Bad",
        "trigger": {"type": "event", "eventType": "patient.created"},
        "actions": [{"type": "create_task", "params": {"title": "Call"}}],
        **body,
    }
    error = assert_error(post(api, "/automations", data), 400, "VALIDATION_ERROR")
    assert place in error["details"]["fields"], error
    assert not AutomationRule.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize(
    "body",
    [{}, {"name": "x"}, {"name": "", "trigger": {}, "actions": []},
     {"name": "x", "extra": 1, "trigger": {}, "actions": []},
     {"name": 5, "trigger": {"type": "event", "eventType": "patient.created"}, "actions": []}],
)  # fmt: skip
def test_bad_shapes_are_400(api, owner, body):
    assert_error(post(api, "/automations", body), 400, "VALIDATION_ERROR")
    assert not AutomationRule.objects.for_org(owner.organization).exists()


def test_ids_of_another_practice_are_400(api, owner, outsider, stages):
    their_tag = TagFactory(organization=outsider.organization)
    their_stage = post(outsider.api_client(), "/pipelines", {"name": "Theirs"}).json()
    their_stage_id = Stage.objects.for_org(outsider.organization).values_list("id", flat=True).first()
    assert their_stage and their_stage_id
    data = {
        "name": "Reach over",
        "trigger": {"type": "event", "eventType": "journey.stage_changed"},
        "conditions": [{"field": "data.stageId", "operator": "eq", "value": str(their_stage_id)}],
        "actions": [
            {"type": "create_task", "params": {"title": "x", "assigneeId": str(outsider.user.id)}},
            {"type": "move_stage", "params": {"stageId": str(their_stage_id)}},
            {"type": "add_tag", "params": {"tagId": str(their_tag.id)}},
        ],
    }
    fields = assert_error(post(api, "/automations", data), 400, "VALIDATION_ERROR")["details"]["fields"]
    assert set(fields) == {
        "conditions[0].value",
        "actions[0].params.assigneeId",
        "actions[1].params.stageId",
        "actions[2].params.tagId",
    }
    assert fields["actions[1].params.stageId"] == ["does not exist in this practice as an open, unarchived stage"]
    assert not AutomationRule.objects.for_org(owner.organization).exists()
    # Our own won stage is not a stage a rule may move to.
    data["conditions"], data["actions"] = [], [{"type": "move_stage", "params": {"stageId": stages["Won"]}}]
    assert (
        "actions[0].params.stageId"
        in assert_error(post(api, "/automations", data), 400, "VALIDATION_ERROR")["details"]["fields"]
    )


def test_patch_is_checked_whole_and_refusals_change_nothing(api, owner):
    rule = make_rule(api, conditions=[{"field": "data.status", "operator": "eq", "value": "lead"}])
    # data.status is not a condition field of message.received: the kept conditions no longer suit the trigger.
    moved = patch(api, f"/automations/{rule['id']}", {"trigger": {"type": "event", "eventType": "message.received"}})
    error = assert_error(moved, 400, "VALIDATION_ERROR")
    assert "conditions[0].field" in error["details"]["fields"]
    assert_error(patch(api, f"/automations/{rule['id']}", {}), 400, "VALIDATION_ERROR")
    assert_error(patch(api, f"/automations/{rule['id']}", {"enabled": "yes"}), 400, "VALIDATION_ERROR")
    assert api.get(f"/automations/{rule['id']}").json() == rule


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "dentist"])
def test_roles_without_automation_manage_are_refused(api, owner, member_factory, role):
    rule = make_rule(api)
    client = member_factory(role=role, organization=owner.organization).api_client()
    for response in (
        client.get("/automations"),
        client.get(f"/automations/{rule['id']}"),
        post(client, "/automations", {"name": "x"}),
        patch(client, f"/automations/{rule['id']}", {"name": "Mine"}),
        client.delete(f"/automations/{rule['id']}"),
        post(client, f"/automations/{rule['id']}/disable"),
        client.get("/automations/runs"),
        post(client, f"/automations/{rule['id']}/dry-run"),
        client.get("/automations/catalogue"),
    ):
        assert_error(response, 403, "PERMISSION_DENIED")
    assert api.get(f"/automations/{rule['id']}").json() == rule


def test_manager_may_manage(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization).api_client()
    assert make_rule(manager)["name"] == "Call new leads"


def test_another_practices_rule_is_404_everywhere(api, owner, outsider):
    rule = make_rule(api)
    theirs = outsider.api_client()
    for response in (
        theirs.get(f"/automations/{rule['id']}"),
        patch(theirs, f"/automations/{rule['id']}", {"name": "Mine"}),
        theirs.delete(f"/automations/{rule['id']}"),
        post(theirs, f"/automations/{rule['id']}/enable"),
        post(theirs, f"/automations/{rule['id']}/disable"),
        theirs.get(f"/automations/{rule['id']}/runs"),
        post(theirs, f"/automations/{rule['id']}/dry-run"),
    ):
        assert_error(response, 404, "NOT_FOUND")
    assert theirs.get("/automations").json() == {"items": [], "nextCursor": None}
    assert_error(theirs.get(f"/automations/runs?ruleId={rule['id']}"), 400, "VALIDATION_ERROR")
    assert api.get(f"/automations/{rule['id']}").json() == rule


def test_list_pages_with_bounded_queries(api, owner, django_assert_max_num_queries):
    for number in range(5):
        make_rule(api, name=f"Rule {number}")
    with django_assert_max_num_queries(12):
        first = api.get("/automations?limit=3").json()
    assert [r["name"] for r in first["items"]] == ["Rule 4", "Rule 3", "Rule 2"]
    rest = api.get(f"/automations?limit=3&cursor={first['nextCursor']}").json()
    assert [r["name"] for r in rest["items"]] == ["Rule 1", "Rule 0"] and rest["nextCursor"] is None
    for query in ("limit=0", "limit=x", "cursor=garbage", "bogus=1"):
        assert_error(api.get(f"/automations?{query}"), 400, "VALIDATION_ERROR")


def test_rule_limit_is_409(api, owner, monkeypatch):
    monkeypatch.setattr("apps.automations.services.MAX_RULES", 2)
    make_rule(api)
    make_rule(api)
    error = assert_error(post(api, "/automations", {
        "name": "Third", "trigger": {"type": "event", "eventType": "patient.created"},
        "actions": [{"type": "create_task", "params": {"title": "x"}}]}), 409, "AUTOMATION_RULE_LIMIT")  # fmt: skip
    assert error["details"] == {"limit": 2}
    assert AutomationRule.objects.for_org(owner.organization).count() == 2
