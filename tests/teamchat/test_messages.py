"""Messages through HTTP: post, history, edit and delete your own, mentions (validated, notified), read marks and
unread counts."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.notifications.models import Notification
from apps.teamchat.models import Message
from tests.helpers import assert_error


def notifications_of(someone) -> list[Notification]:
    return list(
        Notification.objects.for_org(someone.member.organization)
        .filter(user=someone.member.user)
        .order_by("created_at")
    )


def bodies(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["body"] for item in response.json()["items"]]


# --- posting and history ---------------------------------------------------------------------------------------


def test_post_and_read_history_newest_first(alice, bob):
    channel = alice.channel("General", members=[bob])
    first = alice.say(channel, "  first  ")
    bob.say(channel, "second")

    assert set(first) == {
        "id", "channelId", "threadId", "authorId", "body", "mentionUserIds", "createdAt", "editedAt", "deletedAt",
        "deleted",
    }  # fmt: skip
    assert (first["channelId"], first["threadId"], first["authorId"], first["body"]) == (
        channel["id"],
        None,
        alice.id,
        "first",
    )
    assert bodies(bob.get(f"/team-chat/channels/{channel['id']}/messages")) == ["second", "first"]
    page = bob.get(f"/team-chat/channels/{channel['id']}/messages?limit=1").json()
    assert [m["body"] for m in page["items"]] == ["second"]
    older = bob.get(f"/team-chat/channels/{channel['id']}/messages?limit=1&cursor={page['nextCursor']}").json()
    assert ([m["body"] for m in older["items"]], older["nextCursor"]) == (["first"], None)


def test_thread_messages_carry_the_thread_id(alice, bob):
    thread = alice.thread(bob)
    message = bob.say(thread, "psst")
    assert (message["threadId"], message["channelId"]) == (thread["id"], None)
    assert bodies(alice.get(f"/team-chat/threads/{thread['id']}/messages")) == ["psst"]


def test_a_public_channel_is_read_by_anyone_in_the_practice_but_written_by_its_members(alice, carol):
    channel = alice.channel("Announcements")
    alice.say(channel, "welcome")
    path = f"/team-chat/channels/{channel['id']}"

    assert bodies(carol.get(f"{path}/messages")) == ["welcome"]
    assert_error(carol.post(f"{path}/messages", {"body": "hi"}), 409, "CHANNEL_MEMBERSHIP_REQUIRED")
    assert_error(carol.post(f"{path}/read"), 409, "CHANNEL_MEMBERSHIP_REQUIRED")
    carol.post(f"{path}/join")
    assert carol.say(channel, "hi")["authorId"] == carol.id


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"body": ""}, "body"),
        ({"body": "   "}, "body"),
        ({"body": 5}, "body"),
        ({"body": "x" * 10_001}, "body"),
        ({"body": "hi", "mentionUserIds": "abc"}, "mentionUserIds"),
        ({"body": "hi", "mentionUserIds": ["nope"]}, "mentionUserIds"),
        ({"body": "hi", "mentionUserIds": [f"00000000-0000-4000-8000-{n:012d}" for n in range(51)]}, "mentionUserIds"),
        ({"body": "hi", "attachments": []}, "attachments"),
    ],
)
def test_posting_refuses_bad_input(alice, body, field):
    channel = alice.channel("General")
    response = alice.post(f"/team-chat/channels/{channel['id']}/messages", body)
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not Message.objects.for_org(alice.member.organization).exists()


def test_history_costs_the_same_queries_for_many_messages(alice, bob):
    channel = alice.channel("General", members=[bob])
    path = f"/team-chat/channels/{channel['id']}/messages"

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert bob.get(path).status_code == 200
        return len(queries)

    alice.say(channel, "one", mentions=[bob])
    few = count()
    for n in range(15):
        (alice if n % 2 else bob).say(channel, f"message {n}", mentions=[alice, bob])
    assert count() == few


# --- mentions ----------------------------------------------------------------------------------------------------


def test_mentions_must_be_members_of_the_practice_and_of_the_channel(alice, bob, carol, mallory):
    channel = alice.channel("Private", visibility="private", members=[bob])
    path = f"/team-chat/channels/{channel['id']}/messages"

    for mentioned, problem in (
        (mallory, f"{mallory.id} is not a member of this practice"),
        (carol, f"{carol.id} is not a member of this channel"),
    ):
        response = alice.post(path, {"body": "hey", "mentionUserIds": [mentioned.id]})
        assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"] == {"mentionUserIds": [problem]}
    assert not Message.objects.for_org(alice.member.organization).exists()
    assert notifications_of(carol) == [] and notifications_of(mallory) == []


def test_a_mention_notifies_the_member_mentioned_and_no_one_else(alice, bob, carol):
    channel = alice.channel("Clinic", members=[bob, carol])
    message = alice.say(channel, "can you check the schedule?", mentions=[bob, bob, alice])

    assert message["mentionUserIds"] == [bob.id, alice.id]  # deduplicated, in order
    (notification,) = notifications_of(bob)
    assert notification.kind == "mention"
    assert notification.title == f"{alice.member.user.name} mentioned you in #Clinic"
    assert (notification.subject_type, notification.subject_id) == ("teamchat_message", message["id"])
    assert notification.data == {"messageId": message["id"], "channelId": channel["id"], "authorId": alice.id}
    assert notifications_of(alice) == [] and notifications_of(carol) == []  # not yourself, not the unmentioned

    feed = bob.get("/notifications")  # bob's notification feed shows it
    assert feed.status_code == 200, feed.content
    assert [item["kind"] for item in feed.json()["items"]] == ["mention"]


def test_no_mentions_are_fine(alice, bob):
    thread = alice.thread(bob)
    response = alice.post(f"/team-chat/threads/{thread['id']}/messages", {"body": "no one mentioned"})
    assert response.status_code == 201 and response.json()["mentionUserIds"] == []
    assert notifications_of(bob) == []


def test_a_mention_in_a_thread(alice, bob):
    thread = alice.thread(bob)
    alice.say(thread, "look", mentions=[bob])
    (notification,) = notifications_of(bob)
    assert notification.title == f"{alice.member.user.name} mentioned you in a direct message"
    assert notification.data["threadId"] == thread["id"]


def test_an_edit_notifies_only_members_newly_mentioned(alice, bob, carol):
    channel = alice.channel("Clinic", members=[bob, carol])
    message = alice.say(channel, "hello", mentions=[bob])
    path = f"/team-chat/messages/{message['id']}"

    edited = alice.patch(path, {"mentionUserIds": [bob.id, carol.id]}).json()
    assert edited["mentionUserIds"] == [bob.id, carol.id] and edited["body"] == "hello"
    alice.patch(path, {"mentionUserIds": []})
    alice.patch(path, {"mentionUserIds": [carol.id]})  # mentioned again: told once
    assert len(notifications_of(bob)) == 1
    assert len(notifications_of(carol)) == 1


# --- edit and delete ---------------------------------------------------------------------------------------------


def test_edit_your_own_message(alice, bob):
    channel = alice.channel("General", members=[bob])
    message = alice.say(channel, "helo")
    path = f"/team-chat/messages/{message['id']}"

    edited = alice.patch(path, {"body": "hello"}).json()
    assert (edited["body"], edited["id"]) == ("hello", message["id"])
    assert edited["editedAt"] is not None
    assert alice.patch(path, {"body": "hello"}).json()["editedAt"] == edited["editedAt"]  # nothing changed
    assert_error(bob.patch(path, {"body": "hijacked"}), 403, "PERMISSION_DENIED")
    assert_error(bob.delete(path), 403, "PERMISSION_DENIED")
    assert_error(alice.patch(path, {}), 400, "VALIDATION_ERROR")
    assert_error(alice.patch(path, {"body": ""}), 400, "VALIDATION_ERROR")
    assert bodies(bob.get(f"/team-chat/channels/{channel['id']}/messages")) == ["hello"]


def test_delete_leaves_a_tombstone(alice, bob):
    channel = alice.channel("General", members=[bob])
    message = alice.say(channel, "oops", mentions=[bob])
    path = f"/team-chat/messages/{message['id']}"

    deleted = alice.delete(path).json()
    assert (deleted["deleted"], deleted["body"], deleted["mentionUserIds"], deleted["authorId"]) == (
        True,
        "",
        [],
        alice.id,
    )
    assert deleted["deletedAt"] is not None
    assert alice.delete(path).json() == deleted  # twice: nothing changes
    assert_error(alice.patch(path, {"body": "back"}), 409, "MESSAGE_DELETED")
    (tombstone,) = bob.get(f"/team-chat/channels/{channel['id']}/messages").json()["items"]
    assert tombstone == deleted
    row = Message.objects.for_org(alice.member.organization).get(id=message["id"])
    assert (row.body, row.mention_user_ids) == ("", [])
    assert bob.get("/team-chat/unread").json()["total"] == 0  # a deleted message is not unread


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_a_bad_message_id_is_400_and_an_unknown_one_404(alice, method):
    call = getattr(alice, method)
    args = ({"body": "x"},) if method == "patch" else ()
    assert_error(call("/team-chat/messages/not-a-uuid", *args), 400, "VALIDATION_ERROR")
    assert_error(call("/team-chat/messages/6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f", *args), 404, "NOT_FOUND")


# --- unread counts and read marks --------------------------------------------------------------------------------


def test_unread_counts_per_room_and_in_total(alice, bob, carol):
    channel = alice.channel("General", members=[bob, carol])
    thread = alice.thread(bob)
    alice.say(channel, "one")
    alice.say(channel, "two", mentions=[bob])
    alice.say(thread, "three")
    bob.say(channel, "mine")  # yours never count... and posting reads what came before

    summary = bob.get("/team-chat/unread").json()
    assert summary == {
        "total": 1,
        "mentions": 0,
        "items": [{"id": thread["id"], "kind": "thread", "unreadCount": 1, "unreadMentionCount": 0}],
    }
    alice.say(channel, "four", mentions=[bob])
    summary = bob.get("/team-chat/unread").json()
    assert (summary["total"], summary["mentions"]) == (2, 1)
    assert summary["items"][0] == {"id": channel["id"], "kind": "channel", "unreadCount": 1, "unreadMentionCount": 1}
    assert carol.get("/team-chat/unread").json()["total"] == 4
    assert carol.get(f"/team-chat/channels/{channel['id']}").json()["unreadCount"] == 4
    assert carol.get(f"/team-chat/channels/{channel['id']}").json()["unreadMentionCount"] == 0
    assert bob.get(f"/team-chat/threads/{thread['id']}").json()["unreadCount"] == 1
    # alice's last post read bob's message before it
    assert alice.get("/team-chat/unread").json() == {"total": 0, "mentions": 0, "items": []}


def test_mark_read_up_to_a_message_or_all(alice, bob):
    channel = alice.channel("General", members=[bob])
    messages = [alice.say(channel, f"m{n}", mentions=[bob] if n == 3 else []) for n in range(4)]
    path = f"/team-chat/channels/{channel['id']}/read"

    response = bob.post(path, {"messageId": messages[1]["id"]})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "unreadCount": 2,
        "unreadMentionCount": 1,
        "totalUnreadCount": 2,
        "totalUnreadMentionCount": 1,
    }
    assert bob.post(path, {"messageId": messages[0]["id"]}).json()["unreadCount"] == 2  # never backwards
    assert bob.post(path).json() == {
        "unreadCount": 0,
        "unreadMentionCount": 0,
        "totalUnreadCount": 0,
        "totalUnreadMentionCount": 0,
    }
    assert bob.post(path, {}).json()["unreadCount"] == 0


def test_mark_read_refuses_a_message_of_another_room(alice, bob):
    channel = alice.channel("General", members=[bob])
    thread = alice.thread(bob)
    elsewhere = alice.say(thread)
    response = bob.post(f"/team-chat/channels/{channel['id']}/read", {"messageId": elsewhere["id"]})
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "messageId": ["is not a message of this channel"]
    }
    assert_error(bob.post(f"/team-chat/channels/{channel['id']}/read", {"upTo": 3}), 400, "VALIDATION_ERROR")


def test_an_archived_channel_leaves_the_unread_totals(alice, bob):
    channel = alice.channel("General", members=[bob])
    alice.say(channel)
    assert bob.get("/team-chat/unread").json()["total"] == 1
    alice.post(f"/team-chat/channels/{channel['id']}/archive")
    assert bob.get("/team-chat/unread").json() == {"total": 0, "mentions": 0, "items": []}


def test_unread_costs_the_same_queries_for_many_rooms(alice, bob):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert bob.get("/team-chat/unread").status_code == 200
        return len(queries)

    alice.say(alice.channel("room", members=[bob]))
    few = count()
    for n in range(8):
        alice.say(alice.channel(f"room {n}", members=[bob]), mentions=[bob])
    alice.say(alice.thread(bob))
    assert count() == few
    assert bob.get("/team-chat/unread").json()["total"] == 10
