"""The shared inbox: list with filters and cursor paging (latest activity first), read marks per member, unread
counts, assign, close, reopen, snooze; who may work it (analysts read counts only, clinical roles nothing)."""

import datetime
import json

import pytest
from django.utils import timezone

from apps.events.models import Event
from tests.conftest import make_member
from tests.conversations.test_inbound_sms import sms
from tests.factories import PatientFactory


@pytest.fixture
def three(owner, inbound):
    """Three patients who texted, oldest first; returns their conversation ids, newest first."""
    for n, number in enumerate(["+393330000001", "+393330000002", "+393330000003"], start=1):
        PatientFactory(organization=owner.organization, phone_mobile=number)
        inbound(sms(n, sender=number))
    return [c["id"] for c in owner.api_client().get("/conversations").json()["items"]]


def post(client, path, data=None):
    if data is None:
        return client.post(path)
    return client.post(path, json.dumps(data), content_type="application/json")


def test_latest_activity_first_with_cursor_paging(api, three, inbound):
    first = api.get("/conversations", {"limit": 2}).json()
    assert [c["id"] for c in first["items"]] == three[:2] and first["nextCursor"]
    rest = api.get("/conversations", {"limit": 2, "cursor": first["nextCursor"]}).json()
    assert [c["id"] for c in rest["items"]] == three[2:] and rest["nextCursor"] is None
    inbound(sms(9, sender="+393330000001"))  # the oldest writes again: it comes first
    assert api.get("/conversations").json()["items"][0]["id"] == three[2]
    assert api.get("/conversations", {"cursor": "garbage"}).status_code == 400
    assert api.get("/conversations", {"limit": 0}).status_code == 400


def test_read_marks_are_per_member_and_feed_the_counts(owner, api, three):
    colleague = make_member(role="front_desk", organization=owner.organization).api_client()
    assert api.get("/conversations/unread-counts").json() == {"total": 3, "byChannel": {"sms": 3}}
    read = post(api, f"/conversations/{three[0]}/read").json()
    assert read["unread"] is False
    assert api.get("/conversations/unread-counts").json()["total"] == 2
    assert colleague.get("/conversations/unread-counts").json()["total"] == 3  # theirs unchanged
    assert [c["id"] for c in api.get("/conversations", {"unread": "false"}).json()["items"]] == [three[0]]
    assert post(api, f"/conversations/{three[0]}/unread").json()["unread"] is True
    assert api.get("/conversations/unread-counts").json()["total"] == 3


def test_a_new_message_makes_a_read_conversation_unread_again(api, three, inbound):
    post(api, f"/conversations/{three[2]}/read")
    inbound(sms(10, sender="+393330000001"))
    assert api.get(f"/conversations/{three[2]}").json()["unread"] is True


def test_assign_to_a_member_only(owner, api, outsider, three):
    colleague = make_member(role="telesales", organization=owner.organization)
    assigned = post(api, f"/conversations/{three[0]}/assign", {"assigneeId": str(colleague.user.id)})
    assert assigned.status_code == 200 and assigned.json()["assigneeId"] == str(colleague.user.id)
    mine = api.get("/conversations", {"assignee": str(colleague.user.id)}).json()["items"]
    assert [c["id"] for c in mine] == [three[0]]
    assert len(api.get("/conversations", {"assignee": "none"}).json()["items"]) == 2
    stranger = post(api, f"/conversations/{three[0]}/assign", {"assigneeId": str(outsider.user.id)})
    assert stranger.status_code == 400 and "assigneeId" in stranger.json()["details"]["fields"]
    assert post(api, f"/conversations/{three[0]}/assign", {"assigneeId": None}).json()["assigneeId"] is None
    assert api.get("/conversations", {"assignee": "someone"}).status_code == 400
    changes = Event.objects.for_org(owner.organization).filter(type="conversation.updated", data__action="assigned")
    assert changes.count() == 2


def test_close_snooze_and_reopen(api, three, inbound):
    closed = post(api, f"/conversations/{three[0]}/close").json()
    assert closed["status"] == "closed"
    assert [c["id"] for c in api.get("/conversations", {"status": "closed"}).json()["items"]] == [three[0]]
    inbound(sms(11, sender="+393330000003"))  # the closed one's patient writes: open again
    assert api.get(f"/conversations/{three[0]}").json()["status"] == "open"

    until = (timezone.now() + datetime.timedelta(days=1)).isoformat()
    snoozed = post(api, f"/conversations/{three[1]}/snooze", {"until": until}).json()
    assert snoozed["status"] == "snoozed" and snoozed["snoozedUntil"]
    past = (timezone.now() - datetime.timedelta(minutes=1)).isoformat()
    refused = post(api, f"/conversations/{three[1]}/snooze", {"until": past})
    assert refused.status_code == 400 and "until" in refused.json()["details"]["fields"]
    assert post(api, f"/conversations/{three[1]}/snooze", {}).status_code == 400
    assert post(api, f"/conversations/{three[1]}/reopen").json()["status"] == "open"


def test_analysts_read_counts_only_and_clinical_roles_nothing(owner, three):
    analyst = make_member(role="analyst", organization=owner.organization).api_client()
    assert analyst.get("/conversations/unread-counts").status_code == 200
    assert analyst.get("/conversations").status_code == 403
    assert analyst.get(f"/conversations/{three[0]}").status_code == 403
    assert post(analyst, f"/conversations/{three[0]}/close").status_code == 403
    nurse = make_member(role="nurse", organization=owner.organization).api_client()
    assert nurse.get("/conversations/unread-counts").status_code == 403
    for role in ("front_desk", "telesales", "manager"):
        client = make_member(role=role, organization=owner.organization).api_client()
        assert client.get("/conversations").status_code == 200
