"""What makes notifications, end to end through HTTP and the committed outbox: a conversation assigned to someone
else (assigned_conversation), a new lead (new_lead, to the roles that work leads), a task that falls due (task_due,
by the beat sweep, once per task and due time); plus erasure and merge of a patient, the retention purge, and the
live frame reaching the assignee's socket."""

import json
from datetime import timedelta

import channels.db
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.utils import timezone

from apps.events.models import Event
from apps.notifications import tasks
from apps.notifications.models import Notification, Preference, TaskDueNotice
from apps.patients.models import Patient
from tests.helpers import assert_error
from tests.today.test_live import connected, session_cookie

LEAD_ROLES = ("manager", "front_desk", "telesales")
OTHER_ROLES = ("analyst", "dentist", "hygienist", "nurse")


def post(client, path, data):
    return client.post(path, json.dumps(data), content_type="application/json")


def feed(member) -> list[dict]:
    response = member.api_client().get("/notifications")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def of(organization, **filters):
    return Notification.objects.for_org(organization).filter(**filters)


# --- assigned conversation ------------------------------------------------------------------------------------------


def assign(client, conversation_id, user_id, committed):
    return committed(post, client, f"/conversations/{conversation_id}/assign", {"assigneeId": user_id})


def test_a_conversation_assigned_to_a_colleague_notifies_them(owner, api, member_factory, conversation, committed):
    colleague = member_factory(role="telesales", organization=owner.organization)
    response = assign(api, conversation["id"], str(colleague.user.id), committed)
    assert response.status_code == 200, response.content

    (item,) = feed(colleague)
    assert item["kind"] == "assigned_conversation"
    assert item["title"] == "SMS conversation assigned to you"
    assert item["subjectType"] == "conversation" and item["subjectId"] == conversation["id"]
    assert item["data"] == {
        "conversationId": conversation["id"],
        "channel": "sms",
        "patientId": conversation["patient"]["id"],
        "assignedBy": str(owner.user.id),
    }
    assert "Ada" not in item["title"]  # no patient name in the title
    assert feed(owner) == []


def test_assigning_to_yourself_or_unassigning_notifies_nobody(owner, api, member_factory, conversation, committed):
    colleague = member_factory(role="front_desk", organization=owner.organization)
    assign(api, conversation["id"], str(owner.user.id), committed)
    assign(api, conversation["id"], None, committed)
    assert not of(owner.organization).exists()
    # A colleague assigning it to themselves: nobody either.
    assign(colleague.api_client(), conversation["id"], str(colleague.user.id), committed)
    assert not of(owner.organization).exists()


def test_reprocessing_the_same_events_adds_nothing(owner, api, member_factory, conversation, committed):
    colleague = member_factory(role="manager", organization=owner.organization)
    assign(api, conversation["id"], str(colleague.user.id), committed)
    event_ids = [str(e.id) for e in Event.objects.for_org(owner.organization).filter(type="conversation.updated")]
    assert tasks.process_events(event_ids) == 0  # a redelivered task: same event, same notification
    assert of(owner.organization, user=colleague.user).count() == 1


def test_a_conversation_reassigned_before_processing_notifies_only_the_current_assignee(
    owner, api, member_factory, conversation
):
    first = member_factory(role="manager", organization=owner.organization)
    second = member_factory(role="front_desk", organization=owner.organization)
    # Both assignments commit before the events are processed (the worker was busy).
    post(api, f"/conversations/{conversation['id']}/assign", {"assigneeId": str(first.user.id)})
    post(api, f"/conversations/{conversation['id']}/assign", {"assigneeId": str(second.user.id)})
    event_ids = [str(e.id) for e in Event.objects.for_org(owner.organization).filter(type="conversation.updated")]
    assert tasks.process_events(event_ids) == 1
    assert feed(first) == [] and len(feed(second)) == 1


def test_the_assignee_who_switched_assignments_off_gets_nothing(owner, api, member_factory, conversation, committed):
    colleague = member_factory(role="telesales", organization=owner.organization)
    put = colleague.api_client().put(
        "/notifications/preferences",
        json.dumps({"preferences": [{"kind": "assigned_conversation", "inApp": False}]}),
        content_type="application/json",
    )
    assert put.status_code == 200
    assign(api, conversation["id"], str(colleague.user.id), committed)
    assert feed(colleague) == []


@pytest.fixture
def _sockets_keep_the_test_transaction(monkeypatch):
    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)


def test_the_assignee_sees_it_live_on_their_socket(
    owner, api, member_factory, conversation, committed, _sockets_keep_the_test_transaction
):
    colleague = member_factory(role="telesales", organization=owner.organization)
    theirs, mine = session_cookie(colleague), session_cookie(owner)

    async def scenario():
        socket, boss = await connected(theirs), await connected(mine)
        await database_sync_to_async(assign)(api, conversation["id"], str(colleague.user.id), committed)
        frames = [await socket.receive_json_from(timeout=10) for _ in range(2)]
        # The practice's conversation.updated event, and the assignee's own notification frame.
        by_type = {frame["type"]: frame for frame in frames}
        assert set(by_type) == {"conversation.updated", "notification.created"}
        created = by_type["notification.created"]["data"]
        assert created["unreadCount"] == 1 and created["notification"]["kind"] == "assigned_conversation"
        assert (await boss.receive_json_from(timeout=10))["type"] == "conversation.updated"
        assert await boss.receive_nothing(timeout=0.3)  # the owner gets the event, not the notification
        await socket.disconnect()
        await boss.disconnect()

    async_to_sync(scenario)()


# --- new lead -------------------------------------------------------------------------------------------------------


def create_patient(client, committed, **fields):
    body = {"firstName": "Ada", "lastName": "Lovelace", "phoneMobile": "+393331112223", **fields}
    response = committed(post, client, "/patients", body)
    assert response.status_code == 201, response.content
    return response.json()


def test_a_new_lead_notifies_the_roles_that_work_leads_but_not_its_author(owner, api, member_factory, committed):
    workers = [member_factory(role=role, organization=owner.organization) for role in LEAD_ROLES]
    others = [member_factory(role=role, organization=owner.organization) for role in OTHER_ROLES]
    patient = create_patient(api, committed)

    for worker in workers:
        (item,) = feed(worker)
        assert item["kind"] == "new_lead" and item["title"] == "New lead: Ada L."
        assert item["subjectType"] == "patient" and item["subjectId"] == patient["id"]
        assert item["data"] == {"patientId": patient["id"], "status": "lead"}
    for other in [owner, *others]:
        assert feed(other) == []


def test_a_lead_entered_by_a_colleague_notifies_the_owner(owner, member_factory, committed):
    desk = member_factory(role="front_desk", organization=owner.organization)
    create_patient(desk.api_client(), committed)
    assert [item["kind"] for item in feed(owner)] == ["new_lead"]
    assert feed(desk) == []


def test_a_patient_who_is_not_a_lead_notifies_nobody(owner, api, member_factory, committed):
    manager = member_factory(role="manager", organization=owner.organization)
    patient = create_patient(api, committed)
    Notification.objects.for_org(owner.organization).delete()
    committed(
        lambda: api.patch(
            f"/patients/{patient['id']}", json.dumps({"status": "patient"}), content_type="application/json"
        )
    )
    assert feed(manager) == []  # an update is not a new lead


def test_a_lead_that_became_a_patient_before_processing_notifies_nobody(owner, api, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    patient = post(api, "/patients", {"firstName": "Bo", "phoneMobile": "+393331112224"}).json()
    Patient.objects.for_org(owner.organization).filter(id=patient["id"]).update(status="patient")
    event_ids = [str(e.id) for e in Event.objects.for_org(owner.organization).filter(type="patient.created")]
    assert tasks.process_events(event_ids) == 0
    assert feed(manager) == []


def test_a_batch_of_new_leads_makes_one_digest_each(owner, member_factory, committed):
    from django.db import transaction

    from apps.patients.public import patient_create

    manager = member_factory(role="manager", organization=owner.organization)

    def import_leads():
        with transaction.atomic():
            for n in range(11):
                patient_create(
                    organization=owner.organization, user=None, data={"first_name": f"L{n}", "email": f"l{n}@x.it"}
                )

    committed(import_leads)
    (item,) = feed(manager)
    assert item["title"] == "11 new leads" and item["data"]["count"] == 11
    assert len(item["data"]["patientIds"]) == 11
    assert [i["title"] for i in feed(owner)] == ["11 new leads"]  # a system import: the owner too


def test_another_practices_lead_notifies_nobody_here(owner, outsider, member_factory, committed):
    manager = member_factory(role="manager", organization=owner.organization)
    create_patient(outsider.api_client(), committed)
    assert feed(manager) == [] and feed(owner) == []
    assert not Notification.objects.for_org(owner.organization).exists()


# --- task due -------------------------------------------------------------------------------------------------------


def make_task(client, committed, **fields):
    response = committed(post, client, "/tasks", {"title": "Call back about the quote", **fields})
    assert response.status_code == 201, response.content
    return response.json()


def iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_a_task_that_falls_due_notifies_its_assignee_once(owner, api, member_factory, committed, time_machine):
    desk = member_factory(role="front_desk", organization=owner.organization)
    now = timezone.now()
    time_machine.move_to(now, tick=False)
    task = make_task(api, committed, assigneeId=str(desk.user.id), dueAt=iso(now + timedelta(minutes=30)))

    assert tasks.notify_due_tasks() == 0  # not due yet
    time_machine.move_to(now + timedelta(minutes=31), tick=False)
    assert tasks.notify_due_tasks() == 1
    assert tasks.notify_due_tasks() == 0  # idempotent: never twice for one due time
    (item,) = feed(desk)
    assert item["kind"] == "task_due" and item["title"] == "Task due: Call back about the quote"
    assert item["subjectType"] == "task" and item["subjectId"] == task["id"]
    assert item["data"] == {"taskId": task["id"], "dueAt": task["dueAt"]}
    assert feed(owner) == []

    # A new due time is a new notice, once again.
    later = now + timedelta(hours=2)
    committed(api.patch, f"/tasks/{task['id']}", json.dumps({"dueAt": iso(later)}), content_type="application/json")
    time_machine.move_to(later + timedelta(seconds=1), tick=False)
    assert tasks.notify_due_tasks() == 1
    assert tasks.notify_due_tasks() == 0
    assert len(feed(desk)) == 2


def test_a_switched_off_assignee_is_noticed_but_not_told_and_not_retried(
    owner, api, member_factory, committed, time_machine
):
    desk = member_factory(role="front_desk", organization=owner.organization)
    Preference.objects.create(organization=owner.organization, user=desk.user, kind="task_due", in_app=False)
    now = timezone.now()
    time_machine.move_to(now, tick=False)
    make_task(api, committed, assigneeId=str(desk.user.id), dueAt=iso(now - timedelta(minutes=1)))
    assert tasks.notify_due_tasks() == 1
    Preference.objects.for_org(owner.organization).update(in_app=True)
    assert tasks.notify_due_tasks() == 0  # switching on later does not replay the past
    assert feed(desk) == []


def test_only_open_assigned_tasks_within_the_lookback_are_noticed(owner, api, member_factory, committed, settings):
    desk = member_factory(role="telesales", organization=owner.organization)
    now = timezone.now()
    past = iso(now - timedelta(minutes=5))
    make_task(api, committed, assigneeId=str(desk.user.id), dueAt=iso(now - timedelta(days=2)))  # too long ago
    done = make_task(api, committed, assigneeId=str(desk.user.id), dueAt=past)
    assert committed(api.post, f"/tasks/{done['id']}/complete").status_code == 200
    cancelled = make_task(api, committed, assigneeId=str(desk.user.id), dueAt=past)
    assert committed(api.post, f"/tasks/{cancelled['id']}/cancel").status_code == 200
    unassigned = make_task(api, committed, dueAt=past)
    committed(
        api.patch, f"/tasks/{unassigned['id']}", json.dumps({"assigneeId": None}), content_type="application/json"
    )
    make_task(api, committed, assigneeId=str(desk.user.id))  # no due date
    make_task(api, committed, assigneeId=str(desk.user.id), dueAt=iso(now + timedelta(hours=1)))  # not yet
    assert tasks.notify_due_tasks() == 0
    assert not of(owner.organization).exists()
    settings.SVC_NOTIFICATIONS_TASK_DUE_LOOKBACK = 3 * 24 * 3600
    assert tasks.notify_due_tasks() == 1  # the old one, within a longer lookback


def test_task_due_across_practices_stays_in_each_practice(owner, outsider, api, committed):
    now = timezone.now()
    make_task(api, committed, dueAt=iso(now - timedelta(minutes=1)))  # assigned to the creator by default
    make_task(outsider.api_client(), committed, dueAt=iso(now - timedelta(minutes=2)))
    assert tasks.notify_due_tasks() == 2
    assert [i["kind"] for i in feed(owner)] == ["task_due"]
    assert [i["kind"] for i in feed(outsider)] == ["task_due"]
    (theirs,) = feed(outsider)
    assert_error(owner.api_client().get(f"/notifications/{theirs['id']}"), 404, "NOT_FOUND")


# --- erasure, merge, retention --------------------------------------------------------------------------------------


def test_erasing_a_patient_erases_their_notifications(owner, api, member_factory, committed):
    manager = member_factory(role="manager", organization=owner.organization)
    kept = create_patient(api, committed, firstName="Kept", phoneMobile="+393339990001")
    erased = create_patient(api, committed)
    assert len(feed(manager)) == 2
    assert committed(api.delete, f"/patients/{erased['id']}").status_code == 200
    assert [i["subjectId"] for i in feed(manager)] == [kept["id"]]


def test_merging_repoints_notifications_to_the_survivor(owner, api, member_factory, committed):
    from apps.notifications.hooks import repoint_notifications_to_survivor

    manager = member_factory(role="manager", organization=owner.organization)
    survivor = create_patient(api, committed, firstName="Sur", phoneMobile="+393339990002")
    duplicate = create_patient(api, committed)
    survivor_row = Patient.objects.for_org(owner.organization).get(id=survivor["id"])
    duplicate_row = Patient.objects.for_org(owner.organization).get(id=duplicate["id"])
    repoint_notifications_to_survivor(organization=owner.organization, survivor=survivor_row, duplicate=duplicate_row)
    assert sorted(i["subjectId"] for i in feed(manager)) == [survivor["id"]] * 2
    assert of(owner.organization, patient_id=duplicate_row.id).count() == 0


def test_the_purge_keeps_recent_notifications_and_notices(owner, api, committed, settings):
    now = timezone.now()
    make_task(api, committed, dueAt=iso(now - timedelta(minutes=1)))
    assert tasks.notify_due_tasks() == 1
    assert of(owner.organization).count() == 1
    assert tasks.purge_old() == [0, 0]
    of(owner.organization).update(created_at=now - timedelta(days=settings.SVC_NOTIFICATIONS_RETENTION_DAYS + 1))
    TaskDueNotice.objects.for_org(owner.organization).update(due_at=now - timedelta(days=3))
    assert tasks.purge_old() == [1, 1]
    assert not of(owner.organization).exists()
