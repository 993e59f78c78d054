"""apps.today.public.push_to_users through the real ASGI application (config.asgi) and the real Redis channel layer,
and once through the running web tier (daphne behind nginx): a frame for named members only, after commit only,
never across practices, and a push that never breaks a commit."""

import asyncio

import channels.db
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction

from apps.accounts.models import Membership
from apps.today import live
from apps.today.public import push_to_users
from tests.today.test_live import connected, session_cookie
from tests.today.test_live_server import close, next_frame, open_socket

WAIT = 10


@pytest.fixture(autouse=True)
def _keep_the_test_transaction(request, monkeypatch):
    """As in test_live: the consumer's database calls must not end the test's transaction."""
    marker = request.node.get_closest_marker("django_db")
    if not (marker and marker.kwargs.get("transaction")):
        monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)


def run(coroutine_function):
    return async_to_sync(coroutine_function)()


def push_in_a_transaction(organization, users, kind, data, *, roll_back=False):
    try:
        with transaction.atomic():
            push_to_users(organization.id, [user.id for user in users], kind, data)
            if roll_back:
                raise RuntimeError("undo")
    except RuntimeError:
        pass


def test_a_push_reaches_only_the_named_member_and_only_after_commit(
    owner, member_factory, django_capture_on_commit_callbacks
):
    colleague = member_factory(role="manager", organization=owner.organization)
    mine, theirs = session_cookie(owner), session_cookie(colleague)

    async def scenario():
        me, other = await connected(mine), await connected(theirs)
        second_tab = await connected(mine)

        def push_look_then_commit():
            with django_capture_on_commit_callbacks(execute=False) as callbacks:
                push_in_a_transaction(owner.organization, [owner.user], "notification.created", {"unreadCount": 1})
            assert async_to_sync(me.receive_nothing)(timeout=0.3)  # not committed yet: nothing
            for callback in callbacks:
                callback()

        await database_sync_to_async(push_look_then_commit)()
        expected = {
            "type": "notification.created",
            "organizationId": str(owner.organization.id),
            "data": {"unreadCount": 1},
        }
        assert await me.receive_json_from(timeout=WAIT) == expected
        assert await second_tab.receive_json_from(timeout=WAIT) == expected  # every socket of that member
        assert await other.receive_nothing(timeout=0.3)
        assert await me.receive_nothing(timeout=0.3)
        for communicator in (me, other, second_tab):
            await communicator.disconnect()

    run(scenario)


def test_a_rolled_back_push_sends_nothing(owner, django_capture_on_commit_callbacks):
    cookie = session_cookie(owner)

    async def scenario():
        me = await connected(cookie)

        def rolled_back():
            with django_capture_on_commit_callbacks(execute=True) as callbacks:
                push_in_a_transaction(owner.organization, [owner.user], "chat.message", {"n": 1}, roll_back=True)
            return len(callbacks)

        assert await database_sync_to_async(rolled_back)() == 0
        assert await me.receive_nothing(timeout=0.3)
        await me.disconnect()

    run(scenario)


def test_a_push_never_crosses_practices(owner, outsider, member_factory, django_capture_on_commit_callbacks):
    both = member_factory(role="front_desk", organization=owner.organization)
    Membership.objects.unscoped().create(organization=outsider.organization, user=both.user, role="manager")
    cookie = session_cookie(both)

    async def scenario():
        here = await connected(cookie, f"organizationId={owner.organization.id}")

        def push_for_the_other_practice():
            with django_capture_on_commit_callbacks(execute=True):
                push_in_a_transaction(outsider.organization, [both.user], "notification.created", {"x": 1})

        await database_sync_to_async(push_for_the_other_practice)()
        assert await here.receive_nothing(timeout=0.3)
        there = await connected(cookie, f"organizationId={outsider.organization.id}")
        await database_sync_to_async(push_for_the_other_practice)()
        assert (await there.receive_json_from(timeout=WAIT))["organizationId"] == str(outsider.organization.id)
        assert await here.receive_nothing(timeout=0.3)
        await here.disconnect()
        await there.disconnect()

    run(scenario)


def test_a_member_who_lost_access_is_closed_not_sent_the_frame(
    owner, member_factory, django_capture_on_commit_callbacks
):
    member = member_factory(role="manager", organization=owner.organization)
    cookie = session_cookie(member)

    async def scenario():
        communicator = await connected(cookie)
        await database_sync_to_async(Membership.objects.unscoped().filter(id=member.membership.id).delete)()

        def push():
            with django_capture_on_commit_callbacks(execute=True):
                push_in_a_transaction(owner.organization, [member.user], "notification.created", {"x": 1})

        await database_sync_to_async(push)()
        assert await communicator.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": live.FORBIDDEN}

    run(scenario)


def test_a_failing_channel_layer_never_breaks_the_commit(owner, monkeypatch, django_capture_on_commit_callbacks):
    class Broken:
        async def group_send(self, group, message):
            raise ConnectionError("redis is down")

    monkeypatch.setattr(live, "get_channel_layer", lambda: Broken())
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        Membership.objects.unscoped().filter(id=owner.membership.id).update(role="manager")
        push_to_users(owner.organization.id, [owner.user.id], "notification.created", {"x": 1})
    assert Membership.objects.unscoped().get(id=owner.membership.id).role == "manager"


def test_data_that_is_not_json_is_logged_not_raised(owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        push_in_a_transaction(owner.organization, [owner.user], "notification.created", {"bad": object()})
    push_to_users(owner.organization.id, [], "notification.created", {})  # nobody: nothing to do


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_push_is_sent_at_once_through_a_running_daphne(owner, web_server):
    """Real commits, a real server and a real WebSocket client: the frame reaches the member's socket."""
    cookie = owner.session_client().cookies[settings.SESSION_COOKIE_NAME].value
    loop = asyncio.new_event_loop()
    try:
        connection = open_socket(loop, web_server, cookie)
        push_to_users(owner.organization, [owner.user], "notification.created", {"id": str(owner.user.id)})
        assert next_frame(loop, connection) == {
            "type": "notification.created",
            "organizationId": str(owner.organization.id),
            "data": {"id": str(owner.user.id)},
        }
        close(loop, connection)
    finally:
        loop.close()
