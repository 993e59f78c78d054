"""Event triggers end to end: a real write through the API commits an event, the commit listener queues the
evaluation (recorded by `queued`), the test calls the task function, and the action is done through the owning
area's services. Conditions true and false, dedupe, the hourly limit, a failing action, the recovery sweep after a
lost queueing, and another practice's events."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.automations import tasks
from apps.automations.models import AutomationRun, ChainedEvent
from apps.conversations.models import Message
from apps.events.models import Event
from apps.journeys.public import Journey
from apps.tasks.public import Task
from tests.appointments.helpers import make_appointment
from tests.automations.conftest import make_rule, open_journey, post, runs_of
from tests.campaigns.conftest import SMS_AUTH_TOKEN, SMS_NUMBER, connect, grant, make_template
from tests.factories import LeadSourceFactory, PatientFactory
from tests.helpers import assert_error


def from_ads(organization) -> dict:
    """The condition "the patient came from the ads lead source" (a lead source of the practice)."""
    source = LeadSourceFactory(organization=organization, name="Facebook ads")
    return {"field": "patient.leadSourceId", "operator": "eq", "value": str(source.id)}


def new_patient(api, committed, **fields):
    body = {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com", **fields}
    response = committed(post, api, "/patients", body)
    assert response.status_code == 201, response.content
    return response.json()


def test_new_lead_gets_a_call_task_in_the_telesales_queue(api, owner, member_factory, committed, queued, time_machine):
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    busy = member_factory(role="telesales", organization=owner.organization)
    free = member_factory(role="telesales", organization=owner.organization)
    Task.objects.create(organization=owner.organization, title="Busy", assignee=busy.user)
    ads = from_ads(owner.organization)
    rule = make_rule(
        api,
        conditions=[ads],
        actions=[{"type": "create_task", "params": {"title": "Call the lead", "assigneeRole": "telesales",
                                                    "dueInMinutes": 5, "priority": "high"}}],
    )  # fmt: skip

    lead = new_patient(api, committed, leadSourceId=ads["value"])
    (call,) = queued.take()
    event = Event.objects.for_org(owner.organization).get(type="patient.created", subject_id=lead["id"])
    assert call == ([str(event.id)], [])
    assert tasks.evaluate_events(*call) == 1

    task = Task.objects.for_org(owner.organization).get(patient_id=lead["id"])
    assert (task.title, task.assignee_id, task.priority) == ("Call the lead", free.user.id, "high")
    assert task.due_at == timezone.now() + timedelta(minutes=5)
    (run,) = runs_of(owner.organization)
    assert (run.status, run.event_id, run.subject_type, run.subject_id, run.depth) == (
        "succeeded", event.id, "patient", lead["id"], 0,
    )  # fmt: skip
    assert run.conditions == [{**ads, "actual": ads["value"], "passed": True}]
    assert run.actions[0]["status"] == "succeeded" and run.actions[0]["result"] == {"taskId": str(task.id)}

    listed = api.get("/automations/runs").json()["items"]
    assert [r["id"] for r in listed] == [str(run.id)]
    assert listed[0]["ruleId"] == rule["id"] and listed[0]["actions"][0]["target"]["assigneeId"] == str(free.user.id)


def test_conditions_false_record_a_skipped_run_and_do_nothing(api, owner, committed, queued):
    ads = from_ads(owner.organization)
    make_rule(api, conditions=[ads])
    patient = new_patient(api, committed)
    assert queued.run_all() == 1
    (run,) = runs_of(owner.organization)
    assert run.status == "skipped" and run.actions == []
    assert run.conditions == [{**ads, "actual": None, "passed": False}]
    assert not Task.objects.for_org(owner.organization).filter(patient_id=patient["id"]).exists()


def setup_no_show(api, owner, stages, tag):
    api.put("/settings/messaging", json.dumps({"quietHoursEnabled": False}), content_type="application/json")
    sms = connect(api, "sms", SMS_NUMBER, {"accountSid": "AC" + "0" * 32, "authToken": SMS_AUTH_TOKEN})
    template = make_template(api, category="service", body="Hi {{patient.first_name}}, we missed you today.")
    patient = PatientFactory(organization=owner.organization)
    grant(patient, "sms")
    journey = open_journey(api, patient)
    appointment = make_appointment(owner.organization, patient=patient)
    make_rule(
        api,
        trigger={"type": "event", "eventType": "appointment.status_changed"},
        conditions=[{"field": "data.status", "operator": "eq", "value": "no_show"}],
        actions=[
            {"type": "send_template", "params": {"templateId": template["id"]}},
            {"type": "move_stage", "params": {"stageId": stages["Contacted"]}},
            {"type": "add_tag", "params": {"tagId": str(tag.id)}},
        ],
    )
    return sms, template, patient, journey, appointment


def test_no_show_moves_the_journey_tags_the_patient_and_sends_a_template(api, owner, committed, queued, stages, tag):
    sms, _template, patient, journey, appointment = committed(setup_no_show, api, owner, stages, tag)
    queued.take()  # the journey's creation
    moved = committed(post, api, f"/appointments/{appointment.id}/status", {"status": "no_show"})
    assert moved.status_code == 200, moved.content
    assert queued.run_all() == 1

    (run,) = runs_of(owner.organization)
    assert run.status == "succeeded", run.reason
    assert [a["status"] for a in run.actions] == ["succeeded", "succeeded", "succeeded"]
    message = Message.objects.for_org(owner.organization).get(id=run.actions[0]["result"]["messageId"])
    assert message.body == f"Hi {patient.first_name}, we missed you today."
    assert run.actions[0]["target"]["connectionId"] == sms["id"]
    assert str(Journey.objects.for_org(owner.organization).get(id=journey["id"]).stage_id) == stages["Contacted"]
    assert list(patient.tags.values_list("id", flat=True)) == [tag.id]


def test_a_marketing_template_without_consent_fails_the_run_and_later_actions_do_not_run(
    api, owner, committed, queued, tag
):
    connect(api, "sms", SMS_NUMBER, {"accountSid": "AC" + "0" * 32, "authToken": SMS_AUTH_TOKEN})
    template = make_template(api)  # marketing: needs the patient's consent on SMS
    make_rule(
        api,
        actions=[
            {"type": "add_tag", "params": {"tagId": str(tag.id)}},
            {"type": "send_template", "params": {"templateId": template["id"]}},
            {"type": "create_task", "params": {"title": "Never made"}},
        ],
    )
    patient = new_patient(api, committed, phoneMobile="+39 333 7654321")
    queued.run_all()
    (run,) = runs_of(owner.organization)
    assert run.status == "failed"
    assert [a["status"] for a in run.actions] == ["succeeded", "failed", "not_run"]
    assert run.actions[1]["reason"] == "MESSAGE_NOT_SENT"
    assert run.reason.startswith("actions[1] send_template: MESSAGE_NOT_SENT")
    assert list(
        Event.objects.for_org(owner.organization).filter(type="patient.updated").values_list("subject_id", flat=True)
    ) == [patient["id"]]  # fmt: skip  (the tag stayed)
    assert not Task.objects.for_org(owner.organization).exists()
    assert not Message.objects.for_org(owner.organization).exists()


def test_actions_without_a_target_are_skipped_not_failed(api, owner, committed, queued, stages):
    make_rule(api, actions=[{"type": "move_stage", "params": {"stageId": stages["Contacted"]}}])
    new_patient(api, committed)  # no journey
    queued.run_all()
    (run,) = runs_of(owner.organization)
    assert run.status == "succeeded"
    assert run.actions[0]["status"] == "skipped" and run.actions[0]["reason"] == "NO_JOURNEY"


def test_the_same_event_never_runs_a_rule_twice(api, owner, committed, queued):
    make_rule(api)
    new_patient(api, committed)
    (call,) = queued.take()
    assert tasks.evaluate_events(*call) == 1
    assert tasks.evaluate_events(*call) == 0
    assert len(runs_of(owner.organization)) == 1 and Task.objects.for_org(owner.organization).count() == 1


def test_disabled_rules_and_rules_made_after_the_event_do_not_run(api, owner, committed, queued):
    rule = make_rule(api)
    post(api, f"/automations/{rule['id']}/disable")
    new_patient(api, committed)
    assert queued.take() == []  # nothing listens: nothing queued
    earlier = Event.objects.for_org(owner.organization).get(type="patient.created")
    assert tasks.evaluate_events([str(earlier.id)], []) == 0
    make_rule(api, name="Made after the event")
    assert tasks.evaluate_events([str(earlier.id)], []) == 0
    assert runs_of(owner.organization) == [] and not Task.objects.for_org(owner.organization).exists()


def test_the_hourly_limit_records_limited_runs(api, owner, committed, queued, settings):
    settings.SVC_AUTOMATIONS_RUNS_PER_HOUR = 2
    make_rule(api)
    for number in range(3):
        new_patient(api, committed, email=f"lead{number}@example.com")
    queued.run_all()
    statuses = [run.status for run in runs_of(owner.organization)]
    assert statuses == ["succeeded", "succeeded", "limited"]
    assert Task.objects.for_org(owner.organization).count() == 2
    limited = runs_of(owner.organization, status="limited")[0]
    assert limited.reason == "the practice's limit of 2 runs an hour is reached" and limited.actions == []


def test_another_practices_events_never_trigger_our_rules(api, owner, outsider, committed, queued):
    make_rule(api)
    new_patient(outsider.api_client(), committed)
    assert queued.take() == []
    theirs = Event.objects.for_org(outsider.organization).get(type="patient.created")
    assert tasks.evaluate_events([str(theirs.id)], []) == 0
    assert AutomationRun.objects.unscoped().count() == 0


def test_a_lost_queueing_is_caught_by_the_sweep_with_its_chain(api, owner, committed, monkeypatch, time_machine):
    time_machine.move_to(timezone.now(), tick=False)

    def broker_down(*args):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.evaluate_events, "delay", broker_down)
    rule = make_rule(api)
    first = new_patient(api, committed)
    second = new_patient(api, committed, email="second@example.com")
    assert runs_of(owner.organization) == []
    # The second patient was created by this very rule's action (as the listener would have recorded it).
    event = Event.objects.for_org(owner.organization).get(type="patient.created", subject_id=second["id"])
    ChainedEvent.objects.create(organization=owner.organization, event_id=event.id, chain=[rule["id"]])

    assert tasks.sweep_events() == 0  # too fresh: the queued path goes first
    time_machine.shift(timedelta(minutes=3))
    assert tasks.sweep_events() == 2
    runs = {run.subject_id: run for run in runs_of(owner.organization)}
    assert runs[first["id"]].status == "succeeded"
    assert runs[second["id"]].status == "refused_loop" and runs[second["id"]].chain == [rule["id"]]
    assert tasks.sweep_events() == 0  # evaluated once
    time_machine.shift(timedelta(minutes=40))
    assert tasks.sweep_events() == 0


def test_runs_filters_and_bad_queries(api, owner, committed, queued, django_assert_max_num_queries):
    ads = from_ads(owner.organization)
    one = make_rule(api, conditions=[ads])
    two = make_rule(api, name="Second")
    for number in range(3):
        new_patient(
            api, committed, email=f"p{number}@example.com", **({"leadSourceId": ads["value"]} if number else {})
        )
    queued.run_all()
    with django_assert_max_num_queries(12):
        everything = api.get("/automations/runs?limit=100").json()
    assert len(everything["items"]) == 6
    skipped = api.get(f"/automations/runs?status=skipped&ruleId={one['id']}").json()["items"]
    assert len(skipped) == 1 and skipped[0]["ruleId"] == one["id"]
    of_two = api.get(f"/automations/{two['id']}/runs").json()["items"]
    assert len(of_two) == 3 and {r["status"] for r in of_two} == {"succeeded"}
    future = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert api.get("/automations/runs", {"from": future}).json() == {"items": [], "nextCursor": None}
    assert len(api.get("/automations/runs", {"to": future}).json()["items"]) == 6
    page = api.get("/automations/runs?limit=4").json()
    rest = api.get(f"/automations/runs?limit=4&cursor={page['nextCursor']}").json()
    assert len(page["items"]) == 4 and len(rest["items"]) == 2
    for query in ({"status": "exploded"}, {"ruleId": "nope"}, {"from": "2026-01-01T00:00:00"}, {"limit": "500"},
                  {"from": future, "to": future}, {"cursor": "bad"}, {"sort": "asc"}):  # fmt: skip
        assert_error(api.get("/automations/runs", query), 400, "VALIDATION_ERROR")
    assert_error(api.get(f"/automations/{two['id']}/runs", {"ruleId": one["id"]}), 400, "VALIDATION_ERROR")


def test_another_practices_runs_are_never_listed(api, owner, outsider, committed, queued):
    make_rule(api)
    new_patient(api, committed)
    queued.run_all()
    assert len(api.get("/automations/runs").json()["items"]) == 1
    assert outsider.api_client().get("/automations/runs").json() == {"items": [], "nextCursor": None}


@pytest.mark.django_db(transaction=True)
def test_a_rule_that_retriggers_itself_is_refused_loop(api, owner, queued, stages):
    """Rule A moves the journey to Contacted on any stage change: its own move is a stage change, which A may not
    answer within the chain it started."""
    patient = PatientFactory(organization=owner.organization)
    journey = open_journey(api, patient)
    rule = make_rule(
        api,
        trigger={"type": "event", "eventType": "journey.stage_changed"},
        actions=[{"type": "move_stage", "params": {"stageId": stages["Contacted"]}}],
    )
    queued.take()
    moved = post(api, f"/journeys/{journey['id']}/move", {"stageId": stages["Consultation booked"]})
    assert moved.status_code == 200, moved.content
    (first_call,) = queued.take()
    assert first_call[1] == []
    assert tasks.evaluate_events(*first_call) == 1
    (second_call,) = queued.take()
    assert second_call[1] == [rule["id"]]  # the action's event carries the chain
    assert tasks.evaluate_events(*second_call) == 1
    assert queued.take() == []

    first, second = runs_of(owner.organization)
    assert (first.status, first.depth, first.chain) == ("succeeded", 0, [])
    assert (second.status, second.depth, second.chain) == ("refused_loop", 1, [rule["id"]])
    assert second.reason == "the rule is already in this chain" and second.actions == []
    assert str(Journey.objects.for_org(owner.organization).get(id=journey["id"]).stage_id) == stages["Contacted"]
    chained = ChainedEvent.objects.for_org(owner.organization).get()
    assert str(chained.event_id) == second_call[0][0] and chained.chain == [rule["id"]]


@pytest.mark.django_db(transaction=True)
def test_a_chain_of_two_distinct_rules_runs(api, owner, queued, tag):
    first = make_rule(api, name="Tag new patients", actions=[{"type": "add_tag", "params": {"tagId": str(tag.id)}}])
    second = make_rule(
        api,
        name="Task when tagged",
        trigger={"type": "event", "eventType": "patient.updated"},
        conditions=[{"field": "patient.tagIds", "operator": "contains", "value": str(tag.id)},
                    {"field": "data.changedFields", "operator": "contains", "value": "tags"}],
        actions=[{"type": "create_task", "params": {"title": "Welcome the tagged patient"}}],
    )  # fmt: skip
    created = post(api, "/patients", {"firstName": "Grace", "email": "grace@example.com"})
    assert created.status_code == 201
    assert queued.run_all() == 2

    runs = runs_of(owner.organization)
    assert [(str(r.rule_id), r.status, r.depth, r.chain) for r in runs] == [
        (first["id"], "succeeded", 0, []),
        (second["id"], "succeeded", 1, [first["id"]]),
    ]
    task = Task.objects.for_org(owner.organization).get()
    assert str(task.patient_id) == created.json()["id"] and task.title == "Welcome the tagged patient"


@pytest.mark.django_db(transaction=True)
def test_the_chain_depth_is_bounded(api, owner, queued, monkeypatch):
    """Each rule answers the previous one's task; with a depth bound of 2 the third rule of the chain is refused."""
    monkeypatch.setattr("apps.automations.runner.MAX_CHAIN_DEPTH", 2)
    make_rule(api, name="Rule 0", actions=[{"type": "create_task", "params": {"title": "0", "priority": "low"}}])
    for level, (listens, makes) in enumerate((("low", "normal"), ("normal", "high")), start=1):
        make_rule(
            api,
            name=f"Rule {level}",
            trigger={"type": "event", "eventType": "task.created"},
            conditions=[{"field": "data.priority", "operator": "eq", "value": listens}],
            actions=[{"type": "create_task", "params": {"title": str(level), "priority": makes}}],
        )
    post(api, "/patients", {"firstName": "Deep", "email": "deep@example.com"})
    queued.run_all()
    ran = [(run.rule.name, run.status, run.depth) for run in runs_of(owner.organization) if run.status != "skipped"]
    assert ran == [("Rule 0", "succeeded", 0), ("Rule 1", "succeeded", 1), ("Rule 2", "refused_loop", 2)]
    refused = runs_of(owner.organization, status="refused_loop")[0]
    assert refused.reason == "the chain is 2 rules deep"
    assert sorted(Task.objects.for_org(owner.organization).values_list("title", flat=True)) == ["0", "1"]
