"""apps.notifications.public.notify: one notification per member named (members of the practice only, each unless
they switched the kind off), once per dedupe key, short one-line titles, and notification.created pushed to the
member's /today/ws sockets after the commit only (through the real ASGI application and Redis channel layer)."""

import uuid

import channels.db
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import transaction

from apps.notifications.models import Notification, Preference
from apps.notifications.public import Kind, notify
from tests.today.test_live import connected, session_cookie

WAIT = 10


@pytest.fixture(autouse=True)
def _keep_the_test_transaction(monkeypatch):
    """As in tests/today/test_live.py: the consumer's database calls must not end the test's transaction."""
    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)


def run(coroutine_function):
    return async_to_sync(coroutine_function)()


def notify_one(organization, users, **fields):
    fields.setdefault("kind", Kind.MENTION)
    fields.setdefault("title", "Anna mentioned you in #front-desk")
    fields.setdefault("subject_type", "teamchat_message")
    fields.setdefault("subject_id", uuid.uuid4())
    return notify(organization=organization, user_ids=[u.pk for u in users], **fields)


def stored(organization, **filters):
    return Notification.objects.for_org(organization).filter(**filters)


def test_one_per_member_named_and_only_members_of_the_practice(owner, outsider, member_factory):
    colleague = member_factory(role="dentist", organization=owner.organization)
    rows = notify_one(owner.organization, [owner.user, colleague.user, outsider.user, owner.user])
    assert sorted(str(r.user_id) for r in rows) == sorted([str(owner.user.id), str(colleague.user.id)])
    assert stored(owner.organization).count() == 2
    assert not Notification.objects.for_org(outsider.organization).exists()
    assert not Notification.objects.unscoped().filter(user=outsider.user).exists()


def test_a_kind_switched_off_stores_nothing_for_that_member(owner, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    Preference.objects.create(organization=owner.organization, user=colleague.user, kind="mention", in_app=False)
    notify_one(owner.organization, [owner.user, colleague.user])
    assert list(stored(owner.organization).values_list("user_id", flat=True)) == [owner.user.id]
    notify_one(owner.organization, [colleague.user], kind=Kind.NEW_LEAD, title="New lead: Ada L.")
    assert stored(owner.organization, user=colleague.user, kind="new_lead").count() == 1  # only that kind is off


def test_a_dedupe_key_stores_once_per_member(owner, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    assert len(notify_one(owner.organization, [owner.user], dedupe_key="event:1")) == 1
    again = notify_one(owner.organization, [owner.user, colleague.user], dedupe_key="event:1")
    assert [r.user_id for r in again] == [colleague.user.id]
    assert stored(owner.organization, dedupe_key="event:1").count() == 2


def test_titles_are_one_short_line(owner):
    (row,) = notify_one(owner.organization, [owner.user], title="Task due:\n  call " + "x" * 300)
    assert "\n" not in row.title and len(row.title) == 120 and row.title.endswith("…")
    assert row.title.startswith("Task due: call xx")


def test_an_unknown_kind_is_a_programming_error(owner):
    with pytest.raises(ValueError):
        notify_one(owner.organization, [owner.user], kind="birthday")
    assert not stored(owner.organization).exists()


def test_notification_created_is_pushed_after_commit_to_the_member_only(
    owner, member_factory, django_capture_on_commit_callbacks
):
    colleague = member_factory(role="front_desk", organization=owner.organization)
    mine, theirs = session_cookie(owner), session_cookie(colleague)

    async def scenario():
        me, other = await connected(mine), await connected(theirs)

        def notify_look_then_commit():
            with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
                (row,) = notify_one(owner.organization, [owner.user], data={"channelId": "c1"})
            assert async_to_sync(me.receive_nothing)(timeout=0.3)  # not committed: nothing
            for callback in callbacks:
                callback()
            return row

        row = await database_sync_to_async(notify_look_then_commit)()
        frame = await me.receive_json_from(timeout=WAIT)
        assert frame == {
            "type": "notification.created",
            "organizationId": str(owner.organization.id),
            "data": {
                "notification": {
                    "id": str(row.id),
                    "kind": "mention",
                    "title": "Anna mentioned you in #front-desk",
                    "subjectType": "teamchat_message",
                    "subjectId": row.subject_id,
                    "data": {"channelId": "c1"},
                    "read": False,
                    "readAt": None,
                    "createdAt": frame["data"]["notification"]["createdAt"],
                },
                "unreadCount": 1,
            },
        }
        assert await other.receive_nothing(timeout=0.3)
        await me.disconnect()
        await other.disconnect()

    run(scenario)


def test_a_rolled_back_notify_stores_and_pushes_nothing(owner, django_capture_on_commit_callbacks):
    cookie = session_cookie(owner)

    async def scenario():
        me = await connected(cookie)

        def rolled_back():
            with django_capture_on_commit_callbacks(execute=True):
                try:
                    with transaction.atomic():
                        notify_one(owner.organization, [owner.user])
                        raise RuntimeError("undo")
                except RuntimeError:
                    pass

        await database_sync_to_async(rolled_back)()
        assert await me.receive_nothing(timeout=0.3)
        await me.disconnect()

    run(scenario)
    assert not stored(owner.organization).exists()
