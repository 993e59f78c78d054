"""The notifications routes through HTTP: the caller's own feed (cursor paging newest first, unread filter), the
unread count, marking one read or unread, marking all read, the per-kind switches; every role has a feed; another
member's or another practice's notification is 404 and never listed."""

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.notifications.models import Notification, Preference
from apps.notifications.public import Kind, notify
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

KINDS = ["assigned_conversation", "mention", "task_due", "new_lead"]


def make(member, n: int = 1, kind: str = Kind.MENTION, **fields) -> list[Notification]:
    """n notifications for the member, oldest first, a minute apart."""
    rows = []
    for i in range(n):
        written = notify(
            organization=member.organization,
            user_ids=[member.user.id],
            kind=kind,
            title=f"Note {i}",
            subject_type="teamchat_message",
            subject_id=uuid.uuid4(),
            **fields,
        )
        for row in written:
            Notification.objects.for_org(member.organization).filter(id=row.id).update(
                created_at=timezone.now() - timedelta(minutes=n - i)
            )
            rows.append(row)
    return rows


def post(client, path, data=None):
    if data is None:
        return client.post(path)
    return client.post(path, json.dumps(data), content_type="application/json")


def put(client, path, data):
    return client.put(path, json.dumps(data), content_type="application/json")


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_the_feed_is_newest_first_with_cursor_paging(owner, api):
    rows = make(owner, 5)
    newest_first = [str(r.id) for r in reversed(rows)]
    first = api.get("/notifications", {"limit": 2})
    assert ids(first) == newest_first[:2] and first.json()["nextCursor"]
    second = api.get("/notifications", {"limit": 2, "cursor": first.json()["nextCursor"]})
    assert ids(second) == newest_first[2:4]
    last = api.get("/notifications", {"limit": 2, "cursor": second.json()["nextCursor"]})
    assert ids(last) == newest_first[4:] and last.json()["nextCursor"] is None
    item = api.get("/notifications").json()["items"][0]
    assert set(item) == {"id", "kind", "title", "subjectType", "subjectId", "data", "read", "readAt", "createdAt"}
    assert item["read"] is False and item["readAt"] is None and item["title"] == "Note 4"


@pytest.mark.parametrize(
    "query",
    [{"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "garbage"}, {"unread": "maybe"}, {"kind": "mention"}],
)
def test_bad_query_parameters_are_400(owner, api, query):
    assert_error(api.get("/notifications", query), 400, "VALIDATION_ERROR")


def test_unread_filter_count_and_marks(owner, api):
    rows = make(owner, 3)
    assert api.get("/notifications/unread-count").json() == {"count": 3}
    read = post(api, f"/notifications/{rows[0].id}/read")
    assert read.status_code == 200 and read.json()["read"] is True and read.json()["readAt"]
    first_read_at = read.json()["readAt"]
    assert post(api, f"/notifications/{rows[0].id}/read").json()["readAt"] == first_read_at  # idempotent
    assert api.get("/notifications/unread-count").json() == {"count": 2}
    assert ids(api.get("/notifications", {"unread": "true"})) == [str(rows[2].id), str(rows[1].id)]
    assert len(ids(api.get("/notifications", {"unread": "false"}))) == 3  # false: everything
    unread = post(api, f"/notifications/{rows[0].id}/unread")
    assert unread.json()["read"] is False and unread.json()["readAt"] is None
    assert api.get("/notifications/unread-count").json() == {"count": 3}
    assert api.get(f"/notifications/{rows[1].id}").json()["id"] == str(rows[1].id)


def test_read_all_marks_only_the_callers_own(owner, api, member_factory):
    colleague = member_factory(role="front_desk", organization=owner.organization)
    make(owner, 3)
    make(colleague, 2)
    assert post(api, "/notifications/read-all").json() == {"updated": 3, "unreadCount": 0}
    assert post(api, "/notifications/read-all").json() == {"updated": 0, "unreadCount": 0}
    assert api.get("/notifications/unread-count").json() == {"count": 0}
    assert colleague.api_client().get("/notifications/unread-count").json() == {"count": 2}


def test_another_members_and_another_practices_notifications_are_404(owner, api, outsider, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    (theirs,) = make(colleague)
    (foreign,) = make(outsider)
    (mine,) = make(owner)
    for row in (theirs, foreign, uuid.uuid4()):
        for method, path in (
            ("get", f"/notifications/{row.id if hasattr(row, 'id') else row}"),
            ("post", f"/notifications/{row.id if hasattr(row, 'id') else row}/read"),
            ("post", f"/notifications/{row.id if hasattr(row, 'id') else row}/unread"),
        ):
            assert_error(getattr(api, method)(path), 404, "NOT_FOUND")
    assert ids(api.get("/notifications")) == [str(mine.id)]
    assert ids(outsider.api_client().get("/notifications")) == [str(foreign.id)]
    assert Notification.objects.for_org(owner.organization).get(id=theirs.id).read_at is None
    assert Notification.objects.for_org(outsider.organization).get(id=foreign.id).read_at is None
    assert_error(api.get("/notifications/not-a-uuid"), 400, "VALIDATION_ERROR")


def test_a_member_of_two_practices_sees_each_practices_feed_apart(owner, outsider):
    from apps.accounts.models import Membership

    Membership.objects.create(organization=outsider.organization, user=owner.user, role="telesales")
    (here,) = make(owner)
    notify(
        organization=outsider.organization,
        user_ids=[owner.user.id],
        kind=Kind.NEW_LEAD,
        title="New lead: Bo C.",
        subject_type="patient",
        subject_id=uuid.uuid4(),
    )
    there = owner.api_client(organization_id=outsider.organization.id)
    home = owner.api_client(organization_id=owner.organization.id)
    assert ids(home.get("/notifications")) == [str(here.id)]
    (other_id,) = ids(there.get("/notifications"))
    assert_error(home.get(f"/notifications/{other_id}"), 404, "NOT_FOUND")
    assert post(home, "/notifications/read-all").json()["updated"] == 1
    assert there.get("/notifications/unread-count").json() == {"count": 1}


@pytest.mark.parametrize(
    "role", ["owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse"]
)
def test_every_role_has_its_own_feed_and_switches(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    make(member)
    client = member.api_client()
    assert client.get("/notifications/unread-count").json() == {"count": 1}
    assert client.get("/notifications/preferences").status_code == 200


def test_a_credential_without_a_practice_is_refused(db):
    from django.test import Client

    assert_error(Client().get("/notifications"), 401, "UNAUTHENTICATED")


def test_preferences_default_on_and_switch_per_kind(owner, api, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    body = api.get("/notifications/preferences").json()
    assert [(p["kind"], p["inApp"]) for p in body["preferences"]] == [(k, True) for k in KINDS]
    assert all(p["label"] for p in body["preferences"])

    changed = put(api, "/notifications/preferences", {"preferences": [{"kind": "new_lead", "inApp": False}]})
    assert changed.status_code == 200
    assert {p["kind"]: p["inApp"] for p in changed.json()["preferences"]} == {
        "assigned_conversation": True,
        "mention": True,
        "task_due": True,
        "new_lead": False,
    }
    put(api, "/notifications/preferences", {"preferences": [{"kind": "mention", "inApp": False}]})
    after = {p["kind"]: p["inApp"] for p in api.get("/notifications/preferences").json()["preferences"]}
    assert after["new_lead"] is False and after["mention"] is False  # left out: kept
    # Honoured: nothing stored for a kind switched off; others and colleagues unaffected.
    make(owner, kind=Kind.NEW_LEAD)
    make(owner, kind=Kind.TASK_DUE)
    make(colleague, kind=Kind.NEW_LEAD)
    assert [n["kind"] for n in api.get("/notifications").json()["items"]] == ["task_due"]
    assert colleague.api_client().get("/notifications/unread-count").json() == {"count": 1}
    put(api, "/notifications/preferences", {"preferences": [{"kind": "new_lead", "inApp": True}]})
    make(owner, kind=Kind.NEW_LEAD)
    assert api.get("/notifications/unread-count").json() == {"count": 2}


@pytest.mark.parametrize(
    "body, field",
    [
        (None, "body"),
        ({}, "preferences"),
        ({"preferences": []}, "preferences"),
        ({"preferences": [{"kind": "birthday", "inApp": True}]}, "preferences"),
        ({"preferences": [{"kind": "mention", "inApp": "no"}]}, "preferences"),
        ({"preferences": [{"kind": "mention", "inApp": 0}]}, "preferences"),
        ({"preferences": [{"kind": "mention"}]}, "preferences"),
        ({"preferences": [{"kind": "mention", "inApp": False, "email": True}]}, "preferences"),
        ({"preferences": [{"kind": "mention", "inApp": False}, {"kind": "mention", "inApp": True}]}, "preferences"),
        ({"preferences": [], "extra": 1}, "extra"),
    ],
)
def test_bad_preference_bodies_are_400_and_change_nothing(owner, api, body, field):
    response = api.put("/notifications/preferences") if body is None else put(api, "/notifications/preferences", body)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in json.dumps(error["details"])
    assert not Preference.objects.for_org(owner.organization).exists()


def test_preferences_are_per_practice(owner, outsider):
    from apps.accounts.models import Membership

    Membership.objects.create(organization=outsider.organization, user=owner.user, role="manager")
    home = owner.api_client(organization_id=owner.organization.id)
    there = owner.api_client(organization_id=outsider.organization.id)
    put(home, "/notifications/preferences", {"preferences": [{"kind": "task_due", "inApp": False}]})
    theirs = {p["kind"]: p["inApp"] for p in there.get("/notifications/preferences").json()["preferences"]}
    assert theirs["task_due"] is True
    assert not Preference.objects.for_org(outsider.organization).exists()


def test_a_read_only_oauth_token_reads_the_feed_but_cannot_change_it(owner):
    """The routes sit in the account scope area: reading needs read, marking and switching need write."""
    (row,) = make(owner)
    raw, _ = mint(owner, "read")
    reader = bearer(raw)
    assert ids(reader.get("/notifications")) == [str(row.id)]
    assert_error(reader.post(f"/notifications/{row.id}/read"), 403, "INSUFFICIENT_SCOPE")
    assert_error(reader.post("/notifications/read-all"), 403, "INSUFFICIENT_SCOPE")
    assert Notification.objects.for_org(owner.organization).get(id=row.id).read_at is None
    raw, _ = mint(owner, "read write")
    assert bearer(raw).post(f"/notifications/{row.id}/read").json()["read"] is True


def test_a_method_the_route_lacks_is_405(api):
    assert_error(api.delete("/notifications/read-all"), 405, "METHOD_NOT_ALLOWED")
    assert_error(api.post("/notifications/preferences"), 405, "METHOD_NOT_ALLOWED")
