"""Team chat live over /today/ws, through the real ASGI application (config.asgi), real session cookies and the real
Redis channel layer: new messages, edits, deletions, read marks and channel changes reach the members concerned,
after the commit, and nobody else (colleagues outside a private channel or thread, public-channel non-members, other
practices)."""

import channels.db
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings

from config.asgi import application
from tests.teamchat.helpers import person

WAIT = 10  # seconds a frame may take on a loaded machine; the absence of one is checked for 0.3 s


@pytest.fixture(autouse=True)
def _keep_the_test_transaction(monkeypatch):
    """As in tests/today: the consumer's database calls must not end the test's transaction."""
    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)


@pytest.fixture
def dave(owner, member_factory):
    """A manager of alice's practice who is in none of the rooms below."""
    return person(member_factory(role="manager", organization=owner.organization))


def run(coroutine_function):
    return async_to_sync(coroutine_function)()


async def connected(someone) -> WebsocketCommunicator:
    cookie = someone.client.cookies[settings.SESSION_COOKIE_NAME].value
    headers = [
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]
    communicator = WebsocketCommunicator(application, "/today/ws", headers=headers)
    accepted, code = await communicator.connect(timeout=WAIT)
    assert accepted, code
    return communicator


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """`await committed(fn)`: fn (HTTP calls) on the test's thread, then what its commits would send."""

    async def call(fn):
        def run_and_commit():
            with django_capture_on_commit_callbacks(execute=True):
                return fn()

        return await database_sync_to_async(run_and_commit)()

    return call


async def frames(communicator, count: int) -> list[dict]:
    """The next `count` frames (each may take up to WAIT), and nothing after them."""
    received = [await communicator.receive_json_from(timeout=WAIT) for _ in range(count)]
    assert await communicator.receive_nothing(timeout=0.3), "an unexpected extra frame"
    return received


async def nothing(*communicators) -> None:
    for communicator in communicators:
        assert await communicator.receive_nothing(timeout=0.3)


def test_messages_edits_and_deletions_reach_the_channel_members_only(alice, bob, carol, dave, mallory, committed):
    channel = alice.channel("General", members=[bob, carol])  # public: dave could join, but has not
    theirs = mallory.channel("General")
    organization_id = str(alice.member.organization.id)

    async def scenario():
        sockets = {name: await connected(who) for name, who in (("alice", alice), ("bob", bob), ("dave", dave))}
        sockets["mallory"] = await connected(mallory)

        posted = await committed(lambda: alice.say(channel, "hello @bob", mentions=[bob]))
        for name in ("alice", "bob"):
            first, *rest = await frames(sockets[name], 2 if name == "bob" else 1)
            assert first == {
                "type": "teamchat.message.created",
                "organizationId": organization_id,
                "data": {"message": posted},
            }
            if name == "bob":  # the mention's notification follows
                assert rest[0]["type"] == "notification.created"
        await nothing(sockets["dave"], sockets["mallory"])

        edited = await committed(lambda: alice.patch(f"/team-chat/messages/{posted['id']}", {"body": "hi"}).json())
        for name in ("alice", "bob"):
            (frame,) = await frames(sockets[name], 1)
            assert (frame["type"], frame["data"]["message"]) == ("teamchat.message.updated", edited)
        await nothing(sockets["dave"], sockets["mallory"])

        deleted = await committed(lambda: alice.delete(f"/team-chat/messages/{posted['id']}").json())
        for name in ("alice", "bob"):
            (frame,) = await frames(sockets[name], 1)
            assert (frame["type"], frame["data"]["message"]) == ("teamchat.message.deleted", deleted)
            assert frame["data"]["message"]["body"] == ""
        await nothing(sockets["dave"], sockets["mallory"])

        await committed(lambda: mallory.say(theirs, "elsewhere"))  # another practice's channel of the same name
        (frame,) = await frames(sockets["mallory"], 1)
        assert frame["organizationId"] == str(mallory.member.organization.id)
        await nothing(sockets["alice"], sockets["bob"], sockets["dave"])

        for communicator in sockets.values():
            await communicator.disconnect()

    run(scenario)


def test_private_channels_and_threads_reach_their_members_only(alice, bob, dave, committed):
    private = alice.channel("Partners", visibility="private", members=[bob])
    thread = alice.thread(dave)

    async def scenario():
        a, b, d = await connected(alice), await connected(bob), await connected(dave)

        message = await committed(lambda: bob.say(private, "between us"))
        assert (await frames(a, 1))[0]["data"]["message"] == message
        assert (await frames(b, 1))[0]["data"]["message"] == message
        await nothing(d)

        message = await committed(lambda: dave.say(thread, "psst"))
        for communicator in (a, d):
            (frame,) = await frames(communicator, 1)
            assert frame["data"]["message"]["threadId"] == thread["id"]
        await nothing(b)

        for communicator in (a, b, d):
            await communicator.disconnect()

    run(scenario)


def test_a_read_mark_reaches_the_readers_own_sockets_only(alice, bob, committed):
    channel = alice.channel("General", members=[bob])
    alice.say(channel, "one")
    alice.say(channel, "two", mentions=[bob])

    async def scenario():
        a, phone, laptop = await connected(alice), await connected(bob), await connected(bob)

        await committed(lambda: bob.post(f"/team-chat/channels/{channel['id']}/read"))
        expected = {
            "type": "teamchat.read",
            "organizationId": str(alice.member.organization.id),
            "data": {
                "channelId": channel["id"],
                "unreadCount": 0,
                "unreadMentionCount": 0,
                "totalUnreadCount": 0,
                "totalUnreadMentionCount": 0,
            },
        }
        assert await frames(phone, 1) == [expected]
        assert await frames(laptop, 1) == [expected]
        await nothing(a)
        for communicator in (a, phone, laptop):
            await communicator.disconnect()

    run(scenario)


def test_channel_changes_reach_members_and_those_added_or_removed(alice, bob, dave, committed):
    channel = alice.channel("Desk", visibility="private", members=[bob])
    path = f"/team-chat/channels/{channel['id']}"

    async def scenario():
        a, b, d = await connected(alice), await connected(bob), await connected(dave)

        await committed(lambda: alice.patch(path, {"name": "Front desk"}))
        for communicator in (a, b):
            (frame,) = await frames(communicator, 1)
            assert frame["type"] == "teamchat.channel.updated"
            assert frame["data"] == {
                "channel": {"id": channel["id"], "visibility": "private", "name": "Front desk", "archivedAt": None},
                "change": "renamed",
                "userIds": [],
            }
        await nothing(d)

        await committed(lambda: bob.post(f"{path}/members", {"userIds": [dave.id]}))
        for communicator in (a, b, d):
            (frame,) = await frames(communicator, 1)
            assert (frame["data"]["change"], frame["data"]["userIds"]) == ("members_added", [dave.id])

        await committed(lambda: alice.delete(f"{path}/members/{bob.id}"))
        for communicator in (a, b, d):
            (frame,) = await frames(communicator, 1)
            assert (frame["data"]["change"], frame["data"]["userIds"]) == ("member_removed", [bob.id])

        await committed(lambda: dave.say(channel, "bob has gone"))  # bob no longer hears the channel
        for communicator in (a, d):
            assert (await frames(communicator, 1))[0]["type"] == "teamchat.message.created"
        await nothing(b)

        for communicator in (a, b, d):
            await communicator.disconnect()

    run(scenario)


def test_nothing_is_sent_for_a_refused_write(alice, bob, carol, committed):
    channel = alice.channel("General", members=[bob])

    async def scenario():
        b = await connected(bob)
        response = await committed(
            lambda: alice.post(
                f"/team-chat/channels/{channel['id']}/messages", {"body": "x", "mentionUserIds": [carol.id]}
            )
        )
        assert response.status_code == 400
        await nothing(b)
        await b.disconnect()

    run(scenario)
