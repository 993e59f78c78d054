"""Who reaches team chat: browser sessions of members only. Machine credentials are refused on every route (team chat
is person to person), no credential is 401, and another practice's channels, threads and messages are 404 on every
route, absent from every list, and unchanged."""

import pytest

from apps.core.credentials import OAUTH, Credential
from apps.teamchat.models import Message, Room, RoomMember
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.teamchat.helpers import person

LISTS = ["/team-chat/channels", "/team-chat/threads", "/team-chat/unread"]


def routes(channel, thread, message, user) -> list[tuple[str, str, dict | None]]:
    """Every team chat route with an id in it, and a body it would accept."""
    c, t, m = f"/team-chat/channels/{channel}", f"/team-chat/threads/{thread}", f"/team-chat/messages/{message}"
    return [
        ("GET", c, None),
        ("PATCH", c, {"name": "Taken over"}),
        ("POST", f"{c}/archive", None),
        ("POST", f"{c}/unarchive", None),
        ("POST", f"{c}/join", None),
        ("POST", f"{c}/leave", None),
        ("GET", f"{c}/members", None),
        ("POST", f"{c}/members", {"userIds": [user]}),
        ("DELETE", f"{c}/members/{user}", None),
        ("GET", f"{c}/messages", None),
        ("POST", f"{c}/messages", {"body": "hello"}),
        ("POST", f"{c}/read", None),
        ("GET", t, None),
        ("GET", f"{t}/messages", None),
        ("POST", f"{t}/messages", {"body": "hello"}),
        ("POST", f"{t}/read", None),
        ("PATCH", m, {"body": "changed"}),
        ("DELETE", m, None),
    ]


def state(organization) -> list:
    """Everything team chat holds for the practice, to show a refusal changed nothing."""
    return [
        list(Room.objects.for_org(organization).order_by("id").values()),
        list(RoomMember.objects.for_org(organization).order_by("id").values()),
        list(Message.objects.for_org(organization).order_by("id").values()),
    ]


@pytest.fixture
def world(alice, bob):
    """A public channel, a thread and a message of alice's practice."""
    channel = alice.channel("General", members=[bob])
    thread = alice.thread(bob)
    message = alice.say(channel, "hello", mentions=[bob])
    return channel, thread, message


# --- another practice ---------------------------------------------------------------------------------------------


def test_another_practice_gets_404_on_every_route_and_changes_nothing(world, alice, bob, mallory):
    channel, thread, message = world
    before = state(alice.member.organization)
    for method, path, body in routes(channel["id"], thread["id"], message["id"], bob.id):
        assert_error(mallory.call(method, path, body), 404, "NOT_FOUND")
    for path in LISTS:
        body = mallory.get(path).json()
        assert body.get("items") == [], (path, body)
    assert state(alice.member.organization) == before


def test_a_member_of_both_practices_acting_in_the_other_gets_404(world, alice, bob, mallory):
    from apps.accounts.models import Membership

    channel, thread, message = world
    Membership.objects.unscoped().create(organization=mallory.member.organization, user=bob.member.user, role="manager")
    before = state(alice.member.organization)
    there = {"X_ORGANIZATION_ID": str(mallory.member.organization.id)}
    for method, path, body in routes(channel["id"], thread["id"], message["id"], bob.id):
        assert_error(bob.call(method, path, body, **there), 404, "NOT_FOUND")
    assert bob.get("/team-chat/channels", **there).json()["items"] == []
    assert bob.get("/team-chat/threads", **there).json()["items"] == []
    assert state(alice.member.organization) == before
    here = {"X_ORGANIZATION_ID": str(alice.member.organization.id)}
    assert bob.get(f"/team-chat/channels/{channel['id']}", **here).status_code == 200


def test_ids_of_another_practice_in_bodies_are_400(world, alice, mallory):
    channel, _, _ = world
    theirs = mallory.channel("Theirs")
    mallory_thread = mallory.thread(person(_colleague(mallory)))
    assert_error(
        alice.post(f"/team-chat/channels/{channel['id']}/read", {"messageId": mallory.say(theirs)["id"]}),
        400,
        "VALIDATION_ERROR",
    )
    assert_error(alice.post("/team-chat/threads", {"memberIds": [mallory.id]}), 400, "VALIDATION_ERROR")
    assert_error(alice.get(f"/team-chat/threads/{mallory_thread['id']}"), 404, "NOT_FOUND")


def _colleague(someone):
    from tests.conftest import make_member

    return make_member(role="nurse", organization=someone.member.organization)


# --- private channels ---------------------------------------------------------------------------------------------


def test_a_private_channel_is_404_to_a_colleague_not_in_it(alice, bob, carol):
    channel = alice.channel("Partners", visibility="private", members=[bob])
    message = bob.say(channel, "confidential", mentions=[alice])
    thread = alice.thread(bob)  # carol is not in it either
    before = state(alice.member.organization)
    for method, path, body in routes(channel["id"], thread["id"], message["id"], bob.id):
        assert_error(carol.call(method, path, body), 404, "NOT_FOUND")
    assert carol.get("/team-chat/channels").json()["items"] == []
    assert carol.get("/team-chat/channels?includeArchived=true&visibility=private").json()["items"] == []
    assert carol.get("/team-chat/unread").json() == {"total": 0, "mentions": 0, "items": []}
    assert state(alice.member.organization) == before


def test_even_teamchat_manage_does_not_open_a_private_channel(alice, bob, carol):
    channel = carol.channel("Just us", visibility="private", members=[bob])
    assert_error(alice.get(f"/team-chat/channels/{channel['id']}"), 404, "NOT_FOUND")
    assert_error(alice.post(f"/team-chat/channels/{channel['id']}/archive"), 404, "NOT_FOUND")


# --- credentials --------------------------------------------------------------------------------------------------


def _all_routes(world, bob):
    channel, thread, message = world
    return [("GET", path, None) for path in LISTS] + [
        ("POST", "/team-chat/channels", {"name": "By machine"}),
        ("POST", "/team-chat/threads", {"memberIds": [bob.id]}),
        *routes(channel["id"], thread["id"], message["id"], bob.id),
    ]


def _send(client, method, path, body):
    import json

    if body is None:
        return client.generic(method, path)
    return client.generic(method, path, json.dumps(body), content_type="application/json")


def test_an_api_key_is_refused_on_every_route(world, alice, bob):
    before = state(alice.member.organization)
    for method, path, body in _all_routes(world, bob):
        response = _send(alice.member.api_client(), method, path, body)
        assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert state(alice.member.organization) == before


def test_an_oauth_token_is_refused_on_every_route(world, alice, bob):
    raw, _ = mint(alice.member, "read write conversations.read conversations.write")
    before = state(alice.member.organization)
    for method, path, body in _all_routes(world, bob):
        assert_error(_send(bearer(raw), method, path, body), 403, "BROWSER_SESSION_REQUIRED")
    assert state(alice.member.organization) == before


def test_no_credential_is_401(world, bob):
    from django.test import Client

    for method, path, body in _all_routes(world, bob):
        assert_error(_send(Client(), method, path, body), 401, "UNAUTHENTICATED")


def test_a_session_without_its_csrf_token_cannot_write(world, alice):
    channel, _, _ = world
    client = alice.member.session_client()
    del client.defaults["HTTP_X_CSRFTOKEN"]
    response = client.post(
        f"/team-chat/channels/{channel['id']}/messages", {"body": "x"}, content_type="application/json"
    )
    assert_error(response, 403, "CSRF_FAILED")


def test_agents_are_never_offered_team_chat_or_support(world, alice):
    from apps.mcp import dispatch, operations

    assert not [op for op in operations.catalogue() if op.split(" ")[1].startswith(("/team-chat", "/support"))]
    assert operations.unavailable("GET /team-chat/channels") is not None
    credential = Credential(
        kind=OAUTH, scopes=frozenset({"read", "write"}), bound_organization_id=alice.member.organization.id
    )
    for path in ("/team-chat/channels", "/team-chat/unread", "/support/messages"):
        reply = dispatch.run(
            method="GET", path=path, query=None, body=None, user=alice.member.user, credential=credential
        )
        assert (reply.status, reply.json()["code"]) == (403, "BROWSER_SESSION_REQUIRED"), path


def test_a_member_removed_and_added_back_sees_nothing_said_while_away(owner, alice, bob, carol):
    from apps.accounts.models import Membership

    private = alice.channel("leads", "private", members=[bob])
    thread = alice.thread(bob)
    alice.say(thread, "before")
    removed = alice.delete(f"/settings/team/members/{bob.id}")
    assert removed.status_code in (200, 204), removed.content
    alice.say(private, "while bob was away")
    alice.say(thread, "while bob was away")

    Membership.objects.create(organization=owner.organization, user=bob.member.user, role="front_desk")
    back = person(bob.member)
    assert back.get(f"/team-chat/channels/{private['id']}").status_code == 404
    assert back.get(f"/team-chat/threads/{thread['id']}/messages").status_code == 404
    fresh = back.thread(alice)
    assert fresh["id"] != thread["id"]  # a new thread; alice keeps the old one with its history
    assert alice.get(f"/team-chat/threads/{thread['id']}/messages").status_code == 200
