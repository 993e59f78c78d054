"""Support chat through HTTP: a signed-in person's thread with the platform's support staff. Browser session only,
the person's own thread only, the practice they act in kept on each message, the per-person bucket (429 with
Retry-After), and staff replies from the back office reaching the person."""

import re

import pytest
from django.conf import settings as django_settings
from django.test import Client

from apps.accounts.models import Membership, User
from apps.support.models import SupportMessage, SupportThread
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.teamchat.helpers import person

UNKNOWN = "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"


def write(someone, body: str = "The calendar will not load", **headers):
    return someone.post("/support/messages", {"body": body}, **headers)


@pytest.fixture
def staff(db) -> Client:
    user = User.objects.create_superuser("support@platform.example", "staff-password-1")
    client = Client()
    client.force_login(user)
    return client


def reply_from_the_back_office(staff: Client, thread: SupportThread, text: str):
    """The admin change form as a browser posts it: the read-only message rows and the reply box."""
    messages = list(thread.messages.order_by("created_at", "id"))
    data = {
        "reply": text,
        "messages-TOTAL_FORMS": str(len(messages)),
        "messages-INITIAL_FORMS": str(len(messages)),
        "messages-MIN_NUM_FORMS": "0",
        "messages-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for index, message in enumerate(messages):
        data[f"messages-{index}-id"] = str(message.id)
        data[f"messages-{index}-thread"] = str(thread.id)
    return staff.post(f"/admin/support/supportthread/{thread.id}/change/", data)


# --- the person's side -------------------------------------------------------------------------------------------


def test_write_and_read_your_thread(alice):
    assert alice.get("/support/thread").json() == {
        "id": None,
        "organizationId": None,
        "lastMessageAt": None,
        "awaitingReply": False,
        "unreadReplyCount": 0,
    }
    assert alice.get("/support/messages").json() == {"items": [], "nextCursor": None}

    response = write(alice, "  Help with invoices  ")
    assert response.status_code == 201, response.content
    message = response.json()
    assert set(message) == {"id", "fromStaff", "authorName", "body", "organizationId", "createdAt"}
    assert (message["fromStaff"], message["body"], message["authorName"]) == (
        False,
        "Help with invoices",
        alice.member.user.name,
    )
    assert message["organizationId"] == str(alice.member.organization.id)  # the practice alice acts in

    write(alice, "Second")
    assert [m["body"] for m in alice.get("/support/messages").json()["items"]] == ["Second", "Help with invoices"]
    page = alice.get("/support/messages?limit=1").json()
    older = alice.get(f"/support/messages?limit=1&cursor={page['nextCursor']}").json()
    assert [m["body"] for m in older["items"]] == ["Help with invoices"] and older["nextCursor"] is None
    thread = alice.get("/support/thread").json()
    assert (thread["awaitingReply"], thread["organizationId"], thread["unreadReplyCount"]) == (
        True,
        str(alice.member.organization.id),
        0,
    )


def test_each_person_sees_only_their_own_thread(alice, bob, mallory):
    write(alice, "alice's problem")
    write(mallory, "mallory's problem")
    assert [m["body"] for m in bob.get("/support/messages").json()["items"]] == []
    assert [m["body"] for m in mallory.get("/support/messages").json()["items"]] == ["mallory's problem"]
    assert SupportThread.objects.count() == 2


def test_the_practice_context_follows_the_choice_of_practice(alice, mallory):
    Membership.objects.unscoped().create(
        organization=mallory.member.organization, user=alice.member.user, role="front_desk"
    )
    there = {"X_ORGANIZATION_ID": str(mallory.member.organization.id)}
    assert write(alice, "from the second practice", **there).json()["organizationId"] == there["X_ORGANIZATION_ID"]
    assert alice.get("/support/thread").json()["organizationId"] == there["X_ORGANIZATION_ID"]
    assert_error(write(alice, "not mine", X_ORGANIZATION_ID=UNKNOWN), 403, "ORGANIZATION_FORBIDDEN")

    fresh = person(alice.member)  # a new browser acts in the session's active practice (the first)
    assert write(fresh, "from the first practice").json()["organizationId"] == str(alice.member.organization.id)
    cleared = fresh.post("/auth/organization/set-active", {"organizationId": None})
    assert cleared.status_code == 200, cleared.content
    response = write(fresh, "no practice chosen")  # two practices and none chosen: no context, still heard
    assert response.status_code == 201, response.content
    assert response.json()["organizationId"] is None
    assert alice.get("/support/thread").json()["organizationId"] == str(alice.member.organization.id)  # last kept


def test_someone_without_a_practice_can_write(db):
    from tests.factories import UserFactory

    user = UserFactory()
    client = Client(enforce_csrf_checks=True)
    client.post(
        "/auth/sign-in/email",
        {"email": user.email, "password": "correct-horse-battery-9"},
        content_type="application/json",
    )
    client.defaults["HTTP_X_CSRFTOKEN"] = client.cookies["csrftoken"].value
    response = client.post(
        "/support/messages", {"body": "I cannot create my practice"}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["organizationId"] is None


@pytest.mark.parametrize(
    "body", [{}, {"body": ""}, {"body": "  "}, {"body": 3}, {"body": "x" * 5001}, {"body": "hi", "urgent": True}]
)
def test_bad_messages_are_400(alice, body):
    assert_error(alice.post("/support/messages", body), 400, "VALIDATION_ERROR")
    assert not SupportMessage.objects.exists()


# --- who may reach it --------------------------------------------------------------------------------------------


ROUTES = [
    ("GET", "/support/thread", None),
    ("POST", "/support/thread/read", None),
    ("GET", "/support/messages", None),
    ("POST", "/support/messages", {"body": "from a machine"}),
]


def _send(client, method, path, body):
    import json

    if body is None:
        return client.generic(method, path)
    return client.generic(method, path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_machine_credentials_are_refused(alice, method, path, body):
    raw, _ = mint(alice.member, "read write")
    for client in (alice.member.api_client(), bearer(raw)):
        assert_error(_send(client, method, path, body), 403, "BROWSER_SESSION_REQUIRED")
    assert_error(_send(Client(), method, path, body), 401, "UNAUTHENTICATED")
    assert not SupportMessage.objects.exists()


# --- the bucket --------------------------------------------------------------------------------------------------


def test_the_bucket_is_the_specs():
    assert django_settings.SVC_SUPPORT_CHAT_BUCKET == (30, 1.0)


def test_sending_is_limited_per_person(alice, bob, settings):
    settings.SVC_SUPPORT_CHAT_BUCKET = (3, 0.01)
    for n in range(3):
        assert write(alice, f"message {n}").status_code == 201
    response = write(alice, "one too many")
    body = assert_error(response, 429, "RATE_LIMITED")
    assert re.fullmatch(r"[1-9][0-9]*", response["Retry-After"])
    assert body["details"]["retryAfter"] == int(response["Retry-After"])
    assert SupportMessage.objects.filter(thread__user=alice.member.user).count() == 3
    assert alice.get("/support/messages").status_code == 200  # reading is not limited
    assert write(bob, "my own bucket").status_code == 201  # per person


def test_a_full_burst_of_thirty_passes(alice):
    for n in range(30):
        assert write(alice, f"message {n}").status_code == 201, n


# --- the back office -----------------------------------------------------------------------------------------


def test_staff_reply_from_the_back_office_and_the_person_sees_it(alice, staff):
    write(alice, "Where are my invoices?")
    thread = SupportThread.objects.get(user=alice.member.user)

    listing = staff.get("/admin/support/supportthread/")
    assert listing.status_code == 200 and alice.member.user.email.encode() in listing.content
    page = staff.get(f"/admin/support/supportthread/{thread.id}/change/")
    assert page.status_code == 200 and b"Where are my invoices?" in page.content

    response = reply_from_the_back_office(staff, thread, "Under Billing, top right.")
    assert response.status_code == 302, response.content

    reply, question = alice.get("/support/messages").json()["items"]
    assert (reply["fromStaff"], reply["body"], reply["authorName"]) == (
        True,
        "Under Billing, top right.",
        "Support team",
    )
    assert reply["organizationId"] == str(alice.member.organization.id)
    assert question["fromStaff"] is False
    state = alice.get("/support/thread").json()
    assert (state["awaitingReply"], state["unreadReplyCount"]) == (False, 1)
    read = alice.post("/support/thread/read")
    assert read.status_code == 200 and read.json()["unreadReplyCount"] == 0
    assert alice.get("/support/thread").json()["unreadReplyCount"] == 0

    reply_from_the_back_office(staff, thread, "")  # an empty reply box sends nothing
    assert SupportMessage.objects.filter(thread=thread).count() == 2


def test_the_back_office_needs_staff(alice):
    write(alice)
    thread = SupportThread.objects.get(user=alice.member.user)
    response = alice.client.get(f"/admin/support/supportthread/{thread.id}/change/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_reply_reaches_the_persons_open_socket(alice, staff, django_capture_on_commit_callbacks, monkeypatch):
    import channels.db
    from asgiref.sync import async_to_sync
    from channels.db import database_sync_to_async

    from tests.teamchat.test_live import WAIT, connected

    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)
    write(alice, "Hello?")
    thread = SupportThread.objects.get(user=alice.member.user)

    async def scenario():
        socket = await connected(alice)

        def reply():
            with django_capture_on_commit_callbacks(execute=True):
                reply_from_the_back_office(staff, thread, "Hello! How can we help?")

        await database_sync_to_async(reply)()
        frame = await socket.receive_json_from(timeout=WAIT)
        assert frame["type"] == "support.reply"
        assert frame["data"]["message"]["body"] == "Hello! How can we help?"
        assert frame["data"]["message"]["fromStaff"] is True
        await socket.disconnect()

    async_to_sync(scenario)()
