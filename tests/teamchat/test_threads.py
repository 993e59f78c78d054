"""Direct threads through HTTP: found or created by their set of members, listed newest activity first."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.teamchat.models import Room
from tests.helpers import assert_error, run_in_threads
from tests.teamchat.helpers import person


def test_a_thread_is_found_or_created_by_its_members(alice, bob, carol):
    created = alice.post("/team-chat/threads", {"memberIds": [bob.id]})
    assert created.status_code == 201, created.content
    thread = created.json()
    assert set(thread) == {"id", "memberIds", "unreadCount", "unreadMentionCount", "lastMessageAt", "createdAt"}
    assert sorted(thread["memberIds"]) == sorted([alice.id, bob.id])

    again = bob.post("/team-chat/threads", {"memberIds": [alice.id, bob.id, alice.id]})  # self and twice: ignored
    assert again.status_code == 200
    assert again.json()["id"] == thread["id"]

    group = carol.post("/team-chat/threads", {"memberIds": [alice.id, bob.id]})
    assert group.status_code == 201
    assert group.json()["id"] != thread["id"]
    assert sorted(group.json()["memberIds"]) == sorted([alice.id, bob.id, carol.id])
    assert Room.objects.for_org(alice.member.organization).filter(kind="direct").count() == 2


def test_opening_refuses_bad_member_sets(alice, mallory, member_factory, owner):
    for body, problem in (
        ({"memberIds": [alice.id]}, "name at least one other member of the practice"),
        ({"memberIds": [mallory.id]}, f"{mallory.id} is not a member of this practice"),
    ):
        response = alice.post("/team-chat/threads", body)
        assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"] == {"memberIds": [problem]}
    assert_error(alice.post("/team-chat/threads", {"memberIds": []}), 400, "VALIDATION_ERROR")
    assert_error(alice.post("/team-chat/threads", {}), 400, "VALIDATION_ERROR")
    nine = [str(member_factory(role="nurse", organization=owner.organization).user.id) for _ in range(9)]
    response = alice.post("/team-chat/threads", {"memberIds": nine})
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "memberIds": ["a direct thread has at most 8 other members"]
    }
    assert alice.post("/team-chat/threads", {"memberIds": nine[:8]}).status_code == 201
    assert Room.objects.for_org(alice.member.organization).count() == 1


@pytest.mark.django_db(transaction=True)
def test_racing_openers_get_one_thread(owner, member_factory):
    """Real commits: three browsers of the same two people open the thread at once; one thread comes of it."""
    colleague = person(member_factory(role="front_desk", organization=owner.organization))
    browsers = [person(owner) for _ in range(3)]

    def open_thread():
        response = browsers.pop().post("/team-chat/threads", {"memberIds": [colleague.id]})
        assert response.status_code in (200, 201), response.content

    assert run_in_threads(open_thread, count=3) == []
    assert Room.objects.for_org(owner.organization).filter(kind="direct").count() == 1


def test_the_list_is_mine_latest_activity_first(alice, bob, carol):
    with_bob = alice.thread(bob)
    with_carol = alice.thread(carol)
    bob_and_carol = bob.thread(carol)
    alice.say(with_bob, "hi bob")

    items = alice.get("/team-chat/threads").json()["items"]
    assert [item["id"] for item in items] == [with_bob["id"], with_carol["id"]]
    assert [item["id"] for item in carol.get("/team-chat/threads").json()["items"]] == [
        bob_and_carol["id"],
        with_carol["id"],
    ]
    page = alice.get("/team-chat/threads?limit=1").json()
    assert [item["id"] for item in page["items"]] == [with_bob["id"]]
    rest = alice.get(f"/team-chat/threads?limit=1&cursor={page['nextCursor']}").json()
    assert [item["id"] for item in rest["items"]] == [with_carol["id"]] and rest["nextCursor"] is None
    assert_error(alice.get("/team-chat/threads?cursor=bogus"), 400, "VALIDATION_ERROR")
    assert_error(alice.get("/team-chat/threads?limit=500"), 400, "VALIDATION_ERROR")


def test_a_thread_you_are_not_in_is_404(alice, bob, carol):
    thread = alice.thread(bob)
    message = alice.say(thread)
    path = f"/team-chat/threads/{thread['id']}"

    for response in (
        carol.get(path),
        carol.get(f"{path}/messages"),
        carol.post(f"{path}/messages", {"body": "hi"}),
        carol.post(f"{path}/read"),
        carol.patch(f"/team-chat/messages/{message['id']}", {"body": "x"}),
        carol.delete(f"/team-chat/messages/{message['id']}"),
        carol.get(f"/team-chat/channels/{thread['id']}"),  # a thread is no channel, whoever asks
        alice.get(f"/team-chat/channels/{thread['id']}"),
    ):
        assert_error(response, 404, "NOT_FOUND")
    assert carol.get("/team-chat/threads").json()["items"] == []


def test_the_list_costs_the_same_queries_for_many_threads(alice, owner, member_factory):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert alice.get("/team-chat/threads").status_code == 200
        return len(queries)

    people = [person(member_factory(role="telesales", organization=owner.organization)) for _ in range(6)]
    people[0].say(alice.thread(people[0]))
    few = count()
    for index, someone in enumerate(people[1:], start=1):
        someone.say(someone.thread(alice, *people[:index]), mentions=[alice])
    assert count() == few
    assert len(alice.get("/team-chat/threads").json()["items"]) == 6
