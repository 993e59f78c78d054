"""GET /today/ws through the real ASGI application (config.asgi) with a real session cookie: who may connect, events
after commit only, role filtering re-read per delivery, tenant isolation, the handshake bucket, and a publisher
that never breaks a commit."""

import uuid

import channels.db
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import transaction

from apps.accounts.models import Membership
from apps.events.models import Event
from apps.events.services import Actor, emit, envelope
from apps.tasks import services as task_services
from apps.today import live
from config.asgi import application

WS = "/today/ws"
WAIT = 10  # seconds a frame may take on a loaded machine; the absence of one is checked for 0.3 s


def session_cookie(member) -> str:
    return member.session_client().cookies[settings.SESSION_COOKIE_NAME].value


def socket(cookie: str | None = None, query: str = "") -> WebsocketCommunicator:
    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    if cookie is not None:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(application, WS + (f"?{query}" if query else ""), headers=headers)


def sign_out(client):
    return client.post("/auth/sign-out", {}, content_type="application/json")


def run(coroutine_function):
    """Run an async scenario from a sync test: its database calls come back to this thread (the test's transaction)."""
    return async_to_sync(coroutine_function)()


def record(organization, *types: str) -> list[Event]:
    """Record events of these types in one transaction."""
    with transaction.atomic():
        return [
            emit(
                organization=organization,
                type=type,
                subject_type=type.split(".")[0],
                subject_id=uuid.uuid4(),
                actor=Actor.system(),
                data={"action": "test"},
            )
            for type in types
        ]


@pytest.fixture(autouse=True)
def _keep_the_test_transaction(request, monkeypatch):
    """Consumers run their database work on the test's thread (database_sync_to_async), which closes a connection
    left inside a transaction before and after each call: that would end the test's transaction. Kept open here;
    the transactional test below and the daphne e2e test run with real commits and the real clean-up."""
    marker = request.node.get_closest_marker("django_db")
    if not (marker and marker.kwargs.get("transaction")):
        monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """`await commit(fn, ...)`: run fn, then the on-commit callbacks its transaction registered, as a commit would."""

    def committed(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    async def run_committed(fn, *args, **kwargs):
        return await database_sync_to_async(committed)(fn, *args, **kwargs)

    return run_committed


async def connected(cookie: str, query: str = "") -> WebsocketCommunicator:
    communicator = socket(cookie, query)
    accepted, code = await communicator.connect(timeout=WAIT)
    assert accepted, code
    return communicator


async def assert_receives(communicator: WebsocketCommunicator, types: list[str]) -> None:
    """The next frames have these event types, in order (each may take up to WAIT), and nothing follows."""
    received = [(await communicator.receive_json_from(timeout=WAIT))["type"] for _ in types]
    assert received == types
    assert await communicator.receive_nothing(timeout=0.3)


# --- the handshake ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cookie", [None, "not-a-session", ""])
def test_a_handshake_without_a_valid_session_is_refused(db, cookie):
    async def scenario():
        communicator = socket(cookie)
        assert await communicator.connect(timeout=WAIT) == (False, live.UNAUTHENTICATED)

    run(scenario)


def test_a_signed_out_session_is_refused(owner):
    client = owner.session_client()
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert sign_out(client).status_code in (200, 204)

    async def scenario():
        assert await socket(cookie).connect(timeout=WAIT) == (False, live.UNAUTHENTICATED)

    run(scenario)


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_roles_that_may_read_no_event_get_their_own_frames_and_no_event(owner, member_factory, role, commit):
    """Clinical roles read no practice event, but their notifications and team chat reach them live."""
    clinician = member_factory(role=role, organization=owner.organization)
    cookie = session_cookie(clinician)

    def event_then_push():
        record(owner.organization, "patient.created", "task.created", "channel_connection.health_changed")
        with transaction.atomic():
            from apps.today.public import push_to_users

            push_to_users(owner.organization.id, [clinician.user.id], "notification.created", {"unreadCount": 1})

    async def scenario():
        communicator = await connected(cookie)
        await commit(event_then_push)
        await assert_receives(communicator, ["notification.created"])
        await communicator.disconnect()

    run(scenario)


def test_organization_id_picks_the_practice_like_x_organization_id(owner, outsider, member_factory, commit):
    both = member_factory(role="front_desk", organization=owner.organization)
    Membership.objects.unscoped().create(organization=outsider.organization, user=both.user, role="analyst")
    cookie = session_cookie(both)

    async def scenario():
        assert await socket(cookie, "organizationId=nope").connect(timeout=WAIT) == (False, live.BAD_REQUEST)
        stranger = uuid.uuid4()
        assert await socket(cookie, f"organizationId={stranger}").connect(timeout=WAIT) == (False, live.FORBIDDEN)
        theirs = await connected(cookie, f"organizationId={outsider.organization.id}")
        ours = await connected(cookie, f"organizationId={owner.organization.id}")
        await commit(record, outsider.organization, "patient.created")
        await assert_receives(theirs, ["patient.created"])
        assert await ours.receive_nothing(timeout=0.3)
        await theirs.disconnect()
        await ours.disconnect()

    run(scenario)


def test_the_handshake_bucket_refuses_past_its_burst_per_user(owner, member_factory, settings):
    settings.SVC_LIVE_HANDSHAKE_BUCKET = (2, 0.001)
    cookie = session_cookie(owner)
    colleague_cookie = session_cookie(member_factory(role="manager", organization=owner.organization))

    async def scenario():
        sockets = [await connected(cookie), await connected(cookie)]
        assert await socket(cookie).connect(timeout=WAIT) == (False, live.RATE_LIMITED)
        sockets.append(await connected(colleague_cookie))  # the bucket is per user
        for communicator in sockets:
            await communicator.disconnect()

    run(scenario)


def test_the_handshake_bucket_is_the_specs(settings):
    assert settings.SVC_LIVE_HANDSHAKE_BUCKET == (300, 5.0)


# --- delivery -----------------------------------------------------------------------------------------------------


def test_events_arrive_after_commit_as_webhook_envelopes(owner, django_capture_on_commit_callbacks):
    cookie = session_cookie(owner)

    async def scenario():
        communicator = await connected(cookie)

        def record_look_then_commit():
            with django_capture_on_commit_callbacks(execute=False) as callbacks:
                events = record(owner.organization, "patient.created", "journey.won")
            assert async_to_sync(communicator.receive_nothing)(timeout=0.3)  # recorded, not committed: nothing yet
            for callback in callbacks:
                callback()
            return [Event.objects.for_org(owner.organization).get(id=event.id) for event in events]

        stored = await database_sync_to_async(record_look_then_commit)()
        assert await communicator.receive_json_from(timeout=WAIT) == envelope(stored[0])
        assert await communicator.receive_json_from(timeout=WAIT) == envelope(stored[1])
        assert await communicator.receive_nothing(timeout=0.3)
        await communicator.disconnect()

    run(scenario)


def test_a_real_service_write_reaches_the_socket(owner, commit):
    cookie = session_cookie(owner)

    async def scenario():
        communicator = await connected(cookie)
        task = await commit(
            task_services.task_create, organization=owner.organization, user=owner.user, data={"title": "Call back"}
        )
        frame = await communicator.receive_json_from(timeout=WAIT)
        assert frame["type"] == "task.created" and frame["subject"] == {"type": "task", "id": str(task.id)}
        assert frame["organizationId"] == str(owner.organization.id) and frame["version"] == "1"
        await communicator.disconnect()

    run(scenario)


def test_events_are_filtered_to_what_the_role_may_read(owner, member_factory, commit):
    telesales = session_cookie(member_factory(role="telesales", organization=owner.organization))
    owner_cookie = session_cookie(owner)
    types = (
        "patient.created",
        "reputation_review.received",  # reputation:read — telesales has none
        "deposit_request.created",
        "message.received",
        "pms_connection.health_changed",  # settings:read
    )

    async def scenario():
        seller, boss = await connected(telesales), await connected(owner_cookie)
        await commit(record, owner.organization, *types)
        await assert_receives(seller, [t for t in types if t != "reputation_review.received"])
        await assert_receives(boss, list(types))
        await seller.disconnect()
        await boss.disconnect()

    run(scenario)


def test_the_role_is_re_read_for_each_delivery(owner, member_factory, commit):
    member = member_factory(role="analyst", organization=owner.organization)
    cookie = session_cookie(member)

    async def scenario():
        communicator = await connected(cookie)
        await database_sync_to_async(Membership.objects.unscoped().filter(id=member.membership.id).update)(
            role="telesales"
        )
        await commit(record, owner.organization, "reputation_review.received", "task.created")
        await assert_receives(communicator, ["task.created"])  # telesales now: no reputation

        await database_sync_to_async(Membership.objects.unscoped().filter(id=member.membership.id).update)(
            role="dentist"
        )
        await commit(record, owner.organization, "patient.created", "task.created")
        assert await communicator.receive_nothing(timeout=0.5)  # a dentist reads no practice event

    run(scenario)


def test_a_removed_member_and_an_ended_session_stop_receiving(owner, member_factory, commit):
    removed = member_factory(role="manager", organization=owner.organization)
    removed_cookie = session_cookie(removed)
    signing_out = owner.session_client()
    signed_out_cookie = signing_out.cookies[settings.SESSION_COOKIE_NAME].value

    async def scenario():
        gone, leaving = await connected(removed_cookie), await connected(signed_out_cookie)
        await database_sync_to_async(Membership.objects.unscoped().filter(id=removed.membership.id).delete)()
        await database_sync_to_async(sign_out)(signing_out)
        await commit(record, owner.organization, "patient.created")
        assert await gone.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": live.FORBIDDEN}
        assert await leaving.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": live.UNAUTHENTICATED}

    run(scenario)


def test_another_practices_events_never_arrive(owner, outsider, commit):
    ours, theirs = session_cookie(owner), session_cookie(outsider)

    def two_practices_in_one_transaction():
        with transaction.atomic():
            record(owner.organization, "task.created")
            record(outsider.organization, "patient.created", "patient.updated")

    async def scenario():
        mine, other = await connected(ours), await connected(theirs)
        await commit(record, outsider.organization, "patient.created")
        assert await mine.receive_nothing(timeout=0.3)
        await assert_receives(other, ["patient.created"])
        await commit(two_practices_in_one_transaction)
        await assert_receives(mine, ["task.created"])
        await assert_receives(other, ["patient.created", "patient.updated"])
        await mine.disconnect()
        await other.disconnect()

    run(scenario)


def test_a_group_message_for_another_practice_is_dropped_by_the_consumer(owner, outsider):
    """Defence in depth: even a message that reached the wrong group delivers nothing of another practice."""
    cookie = session_cookie(owner)
    (foreign,) = record(outsider.organization, "patient.created")

    async def scenario():
        communicator = await connected(cookie)
        group, layer = live.group_name(owner.organization.id), get_channel_layer()
        for organization_id in (str(owner.organization.id), str(outsider.organization.id)):
            message = {"type": live.EVENTS_MESSAGE, "organization_id": organization_id, "events": [envelope(foreign)]}
            await layer.group_send(group, message)
        assert await communicator.receive_nothing(timeout=0.3)
        await communicator.disconnect()

    run(scenario)


def test_an_event_rolled_back_with_its_savepoint_is_not_sent(owner, commit):
    cookie = session_cookie(owner)

    def partly_rolled_back():
        with transaction.atomic():
            record(owner.organization, "task.created")
            try:
                with transaction.atomic():
                    record(owner.organization, "patient.created")
                    raise RuntimeError("undo this part")
            except RuntimeError:
                pass
            record(owner.organization, "task.updated")

    async def scenario():
        communicator = await connected(cookie)
        await commit(partly_rolled_back)
        await assert_receives(communicator, ["task.created", "task.updated"])
        await communicator.disconnect()

    run(scenario)


def test_a_very_large_commit_sends_one_resync_notice(owner, monkeypatch, commit):
    monkeypatch.setattr(live, "MAX_EVENTS_PER_COMMIT", 2)
    monkeypatch.setattr(live, "MAX_EVENTS_PER_MESSAGE", 1)
    cookie = session_cookie(owner)

    async def scenario():
        communicator = await connected(cookie)
        await commit(record, owner.organization, "task.created", "task.updated")
        await assert_receives(communicator, ["task.created", "task.updated"])  # one message each
        await commit(record, owner.organization, "task.created", "task.updated", "task.completed")
        assert await communicator.receive_json_from(timeout=WAIT) == {
            "type": "live.resync",
            "organizationId": str(owner.organization.id),
            "count": 3,
        }
        assert await communicator.receive_nothing(timeout=0.3)
        await communicator.disconnect()

    run(scenario)


def test_frames_from_the_client_are_ignored(owner):
    cookie = session_cookie(owner)

    async def scenario():
        communicator = await connected(cookie)
        await communicator.send_to(text_data="{not json")
        await communicator.send_to(bytes_data=b"\x00\x01")
        assert await communicator.receive_nothing(timeout=0.3)
        await communicator.disconnect()

    run(scenario)


# --- publishing never breaks a commit -----------------------------------------------------------------------------


def test_a_failing_channel_layer_never_breaks_the_commit(owner, django_capture_on_commit_callbacks, monkeypatch):
    class Broken:
        async def group_send(self, group, message):
            raise ConnectionError("redis is down")

    monkeypatch.setattr(live, "get_channel_layer", lambda: Broken())
    with django_capture_on_commit_callbacks(execute=True):
        task = task_services.task_create(
            organization=owner.organization, user=owner.user, data={"title": "Still saved"}
        )
    assert Event.objects.for_org(owner.organization).filter(subject_id=str(task.id), type="task.created").exists()


def test_publish_sends_each_practice_its_own_events_in_order(owner, outsider):
    first, second = record(owner.organization, "task.created", "task.updated")
    (theirs,) = record(outsider.organization, "patient.created")

    messages = live.committed_messages([second.id, theirs.id, first.id, uuid.uuid4()])

    by_group = {group: message for group, message in messages}
    assert [e["id"] for e in by_group[live.group_name(owner.organization.id)]["events"]] == [
        str(second.id),
        str(first.id),
    ]
    assert [e["id"] for e in by_group[live.group_name(outsider.organization.id)]["events"]] == [str(theirs.id)]
    assert live.committed_messages([]) == []


@transaction.atomic
def _record_in_a_decorated_transaction(organization, type: str) -> Event:
    (event,) = record(organization, type)
    return event


@pytest.mark.django_db(transaction=True)
def test_real_commits_publish_every_transaction_of_a_decorated_service(owner):
    """Real commits (no test transaction): each call of an @transaction.atomic function is its own transaction and
    publishes its events, though the decorator reuses one Atomic object for every call."""
    cookie = session_cookie(owner)

    async def scenario():
        communicator = await connected(cookie)
        for type in ("task.created", "task.updated"):
            event = await database_sync_to_async(_record_in_a_decorated_transaction)(owner.organization, type)
            frame = await communicator.receive_json_from(timeout=WAIT)
            assert (frame["type"], frame["id"]) == (type, str(event.id))
        await communicator.disconnect()

    run(scenario)
