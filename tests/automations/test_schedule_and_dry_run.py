"""Schedule triggers (the beat sweep, the clock moved) and the dry run over the last 7 days (writes nothing)."""

from datetime import timedelta

from django.utils import timezone

from apps.automations import tasks
from apps.automations.models import AutomationRule, AutomationRun
from apps.events.models import Event
from apps.journeys.public import Journey
from apps.patients.public import Patient
from apps.tasks.public import Task
from tests.automations.conftest import make_rule, open_journey, post, runs_of
from tests.factories import LeadSourceFactory, PatientFactory
from tests.helpers import assert_error

MONDAY = "2026-03-02T06:00:00+00:00"


def test_a_daily_tick_runs_once_and_moves_to_the_next(api, owner, time_machine):
    time_machine.move_to(MONDAY, tick=False)
    rule = make_rule(
        api,
        trigger={"type": "schedule", "frequency": "daily", "time": "07:00"},
        conditions=[{"field": "tick.weekday", "operator": "lt", "value": 5}],  # weekdays only
        actions=[{"type": "create_task", "params": {"title": "Morning call list", "assigneeId": str(owner.user.id),
                                                    "dueInMinutes": 60}}],
    )  # fmt: skip
    assert rule["nextRunAt"] == "2026-03-02T07:00:00Z"
    assert tasks.sweep_schedules() == 0  # not yet
    time_machine.shift(timedelta(hours=1, minutes=1))
    assert tasks.sweep_schedules() == 1
    assert tasks.sweep_schedules() == 0  # the tick is taken
    (run,) = runs_of(owner.organization)
    assert (run.status, run.trigger_type, run.tick_at.isoformat()) == (
        "succeeded",
        "schedule",
        "2026-03-02T07:00:00+00:00",
    )
    task = Task.objects.for_org(owner.organization).get()
    assert task.assignee_id == owner.user.id and task.patient_id is None
    assert task.due_at == timezone.now() + timedelta(hours=1)
    assert api.get(f"/automations/{rule['id']}").json()["nextRunAt"] == "2026-03-03T07:00:00Z"

    # A sweep that was down for days runs the overdue tick once (not the missed ones) and moves on from now.
    time_machine.move_to("2026-03-07T07:00:30+00:00", tick=False)  # Saturday
    assert tasks.sweep_schedules() == 1
    overdue = runs_of(owner.organization)[-1]
    assert overdue.status == "succeeded" and overdue.tick_at.isoformat() == "2026-03-03T07:00:00+00:00"
    assert api.get(f"/automations/{rule['id']}").json()["nextRunAt"] == "2026-03-08T07:00:00Z"
    time_machine.move_to("2026-03-08T07:00:30+00:00", tick=False)  # Sunday: the condition is false
    assert tasks.sweep_schedules() == 1
    sunday = runs_of(owner.organization)[-1]
    assert sunday.status == "skipped" and sunday.conditions[0]["actual"] == 6
    assert Task.objects.for_org(owner.organization).count() == 2


def test_disabled_schedule_rules_do_not_run(api, owner, time_machine):
    time_machine.move_to(MONDAY, tick=False)
    rule = make_rule(
        api,
        trigger={"type": "schedule", "frequency": "weekly", "time": "07:00", "weekday": 0},
        actions=[{"type": "create_task", "params": {"title": "Weekly review"}}],
    )
    post(api, f"/automations/{rule['id']}/disable")
    time_machine.shift(timedelta(days=1))
    assert tasks.sweep_schedules() == 0
    assert not AutomationRun.objects.for_org(owner.organization).exists()


def _snapshot(organization) -> tuple:
    return (
        Task.objects.for_org(organization).count(),
        AutomationRun.objects.for_org(organization).count(),
        Event.objects.for_org(organization).count(),
        list(Journey.objects.for_org(organization).values_list("id", "stage_id")),
    )


def test_dry_run_over_the_last_seven_days_writes_nothing(
    api, owner, outsider, stages, time_machine, django_assert_max_num_queries
):
    now = timezone.now().replace(microsecond=0)
    ads = LeadSourceFactory(organization=owner.organization, name="Ads")
    time_machine.move_to(now - timedelta(days=8), tick=False)
    old = post(api, "/patients", {"firstName": "Old", "email": "old@example.com", "leadSourceId": str(ads.id)}).json()
    time_machine.move_to(now - timedelta(days=2), tick=False)
    fresh = post(api, "/patients", {"firstName": "New", "email": "new@example.com", "leadSourceId": str(ads.id)}).json()
    other = post(api, "/patients", {"firstName": "Walk", "email": "walk@example.com"}).json()
    journey = open_journey(api, Patient.objects.for_org(owner.organization).get(id=fresh["id"]))
    post(outsider.api_client(), "/patients", {"firstName": "Theirs", "email": "theirs@example.com"})
    time_machine.move_to(now, tick=False)
    body = {
        "trigger": {"type": "event", "eventType": "patient.created"},
        "conditions": [{"field": "patient.leadSourceId", "operator": "eq", "value": str(ads.id)}],
        "actions": [
            {"type": "create_task", "params": {"title": "Call", "assigneeId": str(owner.user.id), "dueInMinutes": 5}},
            {"type": "move_stage", "params": {"stageId": stages["Contacted"]}},
        ],
    }
    before = _snapshot(owner.organization)
    with django_assert_max_num_queries(25):
        response = post(api, "/automations/dry-run", body)
    assert response.status_code == 200, response.content
    result = response.json()
    assert _snapshot(owner.organization) == before
    assert result["evaluated"] == 2 and result["matchedTotal"] == 1 and result["scanTruncated"] is False
    (match,) = result["matches"]
    assert match["event"]["subject"] == {"type": "patient", "id": fresh["id"]} and match["tickAt"] is None
    assert match["conditions"][0]["passed"] is True
    assert match["actions"][0]["target"]["assigneeId"] == str(owner.user.id)
    assert match["actions"][0]["target"]["patientId"] == fresh["id"] and match["actions"][0]["skip"] is None
    assert match["actions"][1]["target"] == {
        "journeyId": journey["id"], "stageId": stages["Contacted"], "fromStageId": journey["stageId"],
    }  # fmt: skip
    assert old["id"] != other["id"]

    saved = make_rule(api, **body, name="Saved")
    post(api, f"/automations/{saved['id']}/disable")
    again = post(api, f"/automations/{saved['id']}/dry-run").json()
    assert again["matchedTotal"] == 1 and again["matches"][0]["event"]["id"] == match["event"]["id"]
    assert AutomationRun.objects.for_org(owner.organization).count() == 0


def test_dry_run_of_a_schedule_lists_its_ticks(api, owner, time_machine):
    time_machine.move_to(MONDAY, tick=False)
    result = post(api, "/automations/dry-run", {
        "trigger": {"type": "schedule", "frequency": "daily", "time": "07:00"},
        "conditions": [{"field": "tick.weekday", "operator": "in", "value": [0, 2]}],
        "actions": [{"type": "create_task", "params": {"title": "Call list"}}],
    }).json()  # fmt: skip
    assert result["evaluated"] == 7 and result["matchedTotal"] == 2
    assert [m["tickAt"] for m in result["matches"]] == ["2026-02-23T07:00:00Z", "2026-02-25T07:00:00Z"]
    assert result["matches"][0]["actions"][0]["target"]["assigneeId"] is None
    assert not AutomationRun.objects.for_org(owner.organization).exists()


def test_dry_run_refuses_bad_rules_and_other_practices_ids(api, owner, outsider):
    their_patient = PatientFactory(organization=outsider.organization)
    body = {
        "trigger": {"type": "event", "eventType": "patient.created"},
        "actions": [{"type": "add_tag", "params": {"tagId": str(their_patient.id)}}],
    }
    error = assert_error(post(api, "/automations/dry-run", body), 400, "VALIDATION_ERROR")
    assert error["details"]["fields"] == {"actions[0].params.tagId": ["does not exist in this practice"]}
    assert_error(post(api, "/automations/dry-run", {"trigger": {"type": "event"}}), 400, "VALIDATION_ERROR")
    assert_error(api.post("/automations/dry-run", "[]", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert_error(api.post("/automations/dry-run", "{", content_type="application/json"), 400, "VALIDATION_ERROR")
    assert not AutomationRule.objects.for_org(owner.organization).exists()
