"""Channels through HTTP: create, list, read, rename, archive, join, leave, members; who may do what."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts import roles
from apps.teamchat.models import Room, RoomMember
from tests.helpers import assert_error
from tests.teamchat.helpers import person


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["name"] for item in response.json()["items"]]


# --- create and read ----------------------------------------------------------------------------------------------


def test_create_a_public_channel(alice, bob):
    body = alice.channel("General", members=[bob])

    assert body["visibility"] == "public"
    assert body["name"] == "General"
    assert body["createdById"] == alice.id
    assert body["isMember"] is True
    assert body["memberCount"] == 2
    assert (body["unreadCount"], body["unreadMentionCount"], body["lastMessageAt"], body["archivedAt"]) == (
        0,
        0,
        None,
        None,
    )
    assert set(body) == {
        "id", "visibility", "name", "createdById", "archivedAt", "isMember", "memberCount", "unreadCount",
        "unreadMentionCount", "lastMessageAt", "createdAt", "updatedAt",
    }  # fmt: skip
    assert alice.get(f"/team-chat/channels/{body['id']}").json() == body


@pytest.mark.parametrize("role", roles.ROLES)
def test_every_role_may_use_team_chat(owner, member_factory, role):
    someone = person(member_factory(role=role, organization=owner.organization))
    channel = someone.channel(f"{role} room")
    someone.say(channel)
    assert someone.get("/team-chat/unread").status_code == 200


def test_the_name_is_unique_among_active_channels_in_any_case(alice, bob, mallory):
    first = alice.channel("Front desk")

    assert_error(bob.post("/team-chat/channels", {"name": "front DESK"}), 409, "CHANNEL_NAME_TAKEN")
    mallory.channel("Front desk")  # another practice's names are theirs
    assert alice.post(f"/team-chat/channels/{first['id']}/archive").status_code == 200
    second = bob.channel("front desk", visibility="private")  # an archived channel frees its name
    body = assert_error(alice.post(f"/team-chat/channels/{first['id']}/unarchive"), 409, "CHANNEL_NAME_TAKEN")
    assert body["details"] == {"name": "Front desk"}
    assert Room.objects.for_org(alice.member.organization).get(id=first["id"]).archived_at is not None
    assert second["visibility"] == "private"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 81}, "name"),
        ({"name": 12}, "name"),
        ({"name": "ok", "visibility": "secret"}, "visibility"),
        ({"name": "ok", "memberIds": ["not-a-uuid"]}, "memberIds"),
        ({"name": "ok", "topic": "x"}, "topic"),
    ],
)
def test_create_refuses_bad_input(alice, body, field):
    response = alice.post("/team-chat/channels", body)
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not Room.objects.for_org(alice.member.organization).exists()


def test_members_named_must_belong_to_the_practice(alice, mallory):
    response = alice.post("/team-chat/channels", {"name": "x", "memberIds": [mallory.id]})
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"memberIds": [f"{mallory.id} is not a member of this practice"]}
    assert not Room.objects.for_org(alice.member.organization).exists()


# --- lists -------------------------------------------------------------------------------------------------------


def test_the_list_shows_public_channels_and_your_private_ones(alice, bob, carol):
    alice.channel("b-public")
    alice.channel("a-private", visibility="private", members=[bob])
    alice.channel("c-secret", visibility="private")

    assert names(alice.get("/team-chat/channels")) == ["a-private", "b-public", "c-secret"]
    assert names(bob.get("/team-chat/channels")) == ["a-private", "b-public"]
    assert names(carol.get("/team-chat/channels")) == ["b-public"]
    assert names(carol.get("/team-chat/channels?joined=false")) == ["b-public"]
    assert names(carol.get("/team-chat/channels?joined=true")) == []
    assert names(bob.get("/team-chat/channels?visibility=private")) == ["a-private"]
    assert names(bob.get("/team-chat/channels?search=PUB")) == ["b-public"]
    page = alice.get("/team-chat/channels?limit=2&offset=1").json()
    assert ([item["name"] for item in page["items"]], page["total"], page["limit"], page["offset"]) == (
        ["b-public", "c-secret"],
        3,
        2,
        1,
    )


def test_archived_channels_are_listed_on_request(alice):
    channel = alice.channel("old")
    alice.post(f"/team-chat/channels/{channel['id']}/archive")

    assert names(alice.get("/team-chat/channels")) == []
    assert names(alice.get("/team-chat/channels?includeArchived=true")) == ["old"]


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "offset=-1", "joined=maybe", "colour=red"])
def test_the_list_refuses_bad_queries(alice, query):
    assert_error(alice.get(f"/team-chat/channels?{query}"), 400, "VALIDATION_ERROR")


def test_the_list_costs_the_same_queries_for_many_channels(alice, bob):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert alice.get("/team-chat/channels").status_code == 200
        return len(queries)

    channel = alice.channel("first", members=[bob])
    bob.say(channel)
    few = count()
    for n in range(12):
        room = alice.channel(f"room {n}", visibility="private" if n % 2 else "public", members=[bob])
        bob.say(room, mentions=[alice])
    assert count() == few


def test_the_list_stays_within_its_query_budget(alice, bob, django_assert_max_num_queries):
    for n in range(5):
        bob.say(alice.channel(f"room {n}", members=[bob]))
    with django_assert_max_num_queries(8):
        assert len(alice.get("/team-chat/channels").json()["items"]) == 5


# --- rename and archive -----------------------------------------------------------------------------------------


def test_the_creator_renames_their_channel(bob):
    channel = bob.channel("Lunch")
    response = bob.patch(f"/team-chat/channels/{channel['id']}", {"name": "Lunch club"})
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Lunch club"


def test_renaming_and_archiving_someone_elses_channel_needs_teamchat_manage(alice, bob, carol):
    channel = carol.channel("Surgery", members=[alice, bob])
    path = f"/team-chat/channels/{channel['id']}"

    for response in (
        bob.patch(path, {"name": "Mine now"}),
        bob.post(f"{path}/archive"),
        bob.post(f"{path}/unarchive"),
        bob.delete(f"{path}/members/{carol.id}"),
    ):
        assert assert_error(response, 403, "PERMISSION_DENIED")["details"]["permission"] == "teamchat:manage"
    room = Room.objects.for_org(alice.member.organization).get(id=channel["id"])
    assert (room.name, room.archived_at) == ("Surgery", None)
    assert RoomMember.objects.for_org(room.organization_id).filter(room=room).count() == 3

    assert alice.patch(path, {"name": "Surgery team"}).json()["name"] == "Surgery team"
    archived = alice.post(f"{path}/archive").json()
    assert archived["archivedAt"] is not None
    assert alice.post(f"{path}/archive").json()["archivedAt"] == archived["archivedAt"]  # twice: nothing changes
    assert alice.post(f"{path}/unarchive").json()["archivedAt"] is None


def test_an_archived_channel_is_read_only(alice, bob, carol):
    channel = alice.channel("Closed", members=[bob])
    message = bob.say(channel)
    path = f"/team-chat/channels/{channel['id']}"
    alice.post(f"{path}/archive")

    assert_error(bob.post(f"{path}/messages", {"body": "hi"}), 409, "CHANNEL_ARCHIVED")
    assert_error(alice.patch(path, {"name": "Reopened"}), 409, "CHANNEL_ARCHIVED")
    assert_error(carol.post(f"{path}/join"), 409, "CHANNEL_ARCHIVED")
    assert_error(bob.post(f"{path}/members", {"userIds": [carol.id]}), 409, "CHANNEL_ARCHIVED")
    assert_error(bob.patch(f"/team-chat/messages/{message['id']}", {"body": "edited"}), 409, "CHANNEL_ARCHIVED")
    assert [m["body"] for m in bob.get(f"{path}/messages").json()["items"]] == ["hello"]  # history stays readable
    assert bob.delete(f"/team-chat/messages/{message['id']}").json()["deleted"] is True  # taking words back: yes


def test_rename_refuses_a_taken_name_and_bad_input(alice):
    alice.channel("One")
    two = alice.channel("Two")
    path = f"/team-chat/channels/{two['id']}"

    assert_error(alice.patch(path, {"name": "ONE"}), 409, "CHANNEL_NAME_TAKEN")
    assert_error(alice.patch(path, {}), 400, "VALIDATION_ERROR")
    assert_error(alice.patch(path, {"name": "x", "visibility": "private"}), 400, "VALIDATION_ERROR")
    assert alice.patch(path, {"name": "Two"}).json()["name"] == "Two"  # the same name: nothing to do
    assert alice.patch(path, {"name": "two"}).json()["name"] == "two"  # its own name in another case is free


# --- join, leave, members -------------------------------------------------------------------------------------


def test_join_and_leave_a_public_channel(alice, bob):
    channel = alice.channel("News")
    alice.say(channel, "before bob")
    path = f"/team-chat/channels/{channel['id']}"

    joined = bob.post(f"{path}/join").json()
    assert (joined["isMember"], joined["memberCount"], joined["unreadCount"]) == (True, 2, 0)  # history read
    assert bob.post(f"{path}/join").json()["memberCount"] == 2  # twice: nothing changes
    alice.say(channel, "after bob")
    assert bob.get(path).json()["unreadCount"] == 1

    left = bob.post(f"{path}/leave").json()
    assert (left["isMember"], left["memberCount"], left["unreadCount"]) == (False, 1, 0)
    assert_error(bob.post(f"{path}/leave"), 404, "NOT_FOUND")  # not a member any more


def test_a_private_channel_is_joined_only_by_being_added(alice, bob, carol):
    channel = alice.channel("Managers", visibility="private", members=[bob])
    path = f"/team-chat/channels/{channel['id']}"

    assert_error(carol.post(f"{path}/join"), 404, "NOT_FOUND")
    assert bob.post(f"{path}/join").json()["memberCount"] == 2  # a member is in it already
    added = bob.post(f"{path}/members", {"userIds": [carol.id, bob.id]})  # any member adds; bob is in already
    assert added.status_code == 200, added.content
    assert added.json()["memberCount"] == 3
    assert carol.get(path).status_code == 200
    members = alice.get(f"{path}/members").json()["items"]
    assert [m["userId"] for m in members] == [alice.id, bob.id, carol.id]
    assert members[2]["name"] == carol.member.user.name
    assert set(members[2]) == {"userId", "name", "joinedAt"}


def test_adding_to_a_public_channel_needs_membership(alice, bob, carol):
    channel = alice.channel("Open")
    path = f"/team-chat/channels/{channel['id']}"

    assert_error(bob.post(f"{path}/members", {"userIds": [carol.id]}), 409, "CHANNEL_MEMBERSHIP_REQUIRED")
    assert_error(alice.post(f"{path}/members", {"userIds": []}), 400, "VALIDATION_ERROR")
    assert alice.get(path).json()["memberCount"] == 1


def test_members_added_must_belong_to_the_practice(alice, mallory):
    channel = alice.channel("Team")
    response = alice.post(f"/team-chat/channels/{channel['id']}/members", {"userIds": [mallory.id]})
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "userIds": [f"{mallory.id} is not a member of this practice"]
    }
    assert alice.get(f"/team-chat/channels/{channel['id']}").json()["memberCount"] == 1


def test_removing_members(alice, bob, carol):
    channel = bob.channel("Desk", visibility="private", members=[alice, carol])
    path = f"/team-chat/channels/{channel['id']}"

    assert_error(carol.delete(f"{path}/members/{alice.id}"), 403, "PERMISSION_DENIED")
    assert bob.delete(f"{path}/members/{carol.id}").json()["memberCount"] == 2  # the creator removes
    assert_error(carol.get(path), 404, "NOT_FOUND")  # a private channel: gone from view
    assert_error(bob.delete(f"{path}/members/{carol.id}"), 404, "NOT_FOUND")
    assert alice.delete(f"{path}/members/{bob.id}").json()["memberCount"] == 1  # teamchat:manage removes anyone
    assert_error(bob.get(path), 404, "NOT_FOUND")


def test_a_private_channel_left_empty_is_archived(alice):
    channel = alice.channel("Alone", visibility="private")
    body = alice.post(f"/team-chat/channels/{channel['id']}/leave")
    assert body.status_code == 200, body.content
    assert (body.json()["isMember"], body.json()["memberCount"]) == (False, 0)
    room = Room.objects.for_org(alice.member.organization).get(id=channel["id"])
    assert room.archived_at is not None
    assert_error(alice.get(f"/team-chat/channels/{channel['id']}"), 404, "NOT_FOUND")


def test_a_member_who_left_the_practice_counts_for_nothing(alice, bob):
    channel = alice.channel("Team", members=[bob])
    bob.member.membership.delete()

    assert alice.get(f"/team-chat/channels/{channel['id']}").json()["memberCount"] == 1
    assert [m["userId"] for m in alice.get(f"/team-chat/channels/{channel['id']}/members").json()["items"]] == [
        alice.id
    ]


# --- the role table --------------------------------------------------------------------------------------------


def test_every_role_holds_teamchat_use_and_owners_and_managers_teamchat_manage():
    assert {role for role in roles.ROLES if roles.role_has_permission(role, "teamchat:use")} == set(roles.ROLES)
    assert {role for role in roles.ROLES if roles.role_has_permission(role, "teamchat:manage")} == {
        "owner",
        "manager",
    }


def test_a_role_without_teamchat_use_is_refused_everywhere(alice, bob, monkeypatch):
    """Every route checks teamchat:use: taken from the front desk's row of the role table, bob is refused."""
    from tests.teamchat.test_access import routes

    channel = alice.channel("General", members=[bob])
    thread = alice.thread(bob)
    message = alice.say(channel)
    without = roles.ROLE_PERMISSIONS["front_desk"] - {"teamchat:use"}
    monkeypatch.setitem(roles.ROLE_PERMISSIONS, "front_desk", without)
    calls = [
        ("GET", "/team-chat/channels", None),
        ("POST", "/team-chat/channels", {"name": "x"}),
        ("GET", "/team-chat/threads", None),
        ("POST", "/team-chat/threads", {"memberIds": [alice.id]}),
        ("GET", "/team-chat/unread", None),
        *routes(channel["id"], thread["id"], message["id"], alice.id),
    ]
    for method, path, body in calls:
        response = bob.call(method, path, body)
        assert assert_error(response, 403, "PERMISSION_DENIED")["details"] == {"permission": "teamchat:use"}, path
    assert Room.objects.for_org(alice.member.organization).count() == 2
