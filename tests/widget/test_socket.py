"""GET /widget/{embedKey}/ws end to end: the real web tier (config.serve: nginx routing the widget socket to daphne) on
the test database, a real WebSocket client (tornado's), the visitor's token from the public routes, and the
practice's replies and typing (POST /conversations/{id}/messages and …/typing in this process, committed) reaching
the socket through Redis. Refusals close with their code and reason."""

import asyncio
import json

import pytest
from django.conf import settings
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from apps.conversations.models import Conversation, Message
from apps.widget.models import ReceivedMessage
from apps.widget.tasks import store_received
from tests.widget.conftest import ORIGIN, open_thread, post_json, start_visitor

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 30  # seconds a frame may take on a loaded machine (never asserted as a duration)


class Socket:
    """A tornado WebSocket client driven from a sync test on its own event loop."""

    def __init__(self, address: str, key: str, origin: str | None = ORIGIN):
        self.loop = asyncio.new_event_loop()
        headers = {"Origin": origin} if origin else {}
        request = HTTPRequest(f"ws://{address}/widget/{key}/ws", headers=headers, request_timeout=WAIT)

        async def connect():
            return await websocket_connect(request, max_message_size=1024 * 1024)

        self.connection = self.run(connect())

    def run(self, awaitable):
        return self.loop.run_until_complete(awaitable)

    def send(self, frame) -> None:
        async def write():
            await self.connection.write_message(frame if isinstance(frame, str) else json.dumps(frame))

        self.run(write())

    def frame(self) -> dict | None:
        """The next frame, or None once the server has closed the socket."""

        async def read():
            return await asyncio.wait_for(self.connection.read_message(), WAIT)

        raw = self.run(read())
        return None if raw is None else json.loads(raw)

    def closed(self) -> tuple[int | None, str | None]:
        """Read until the server closes: (close code, reason)."""
        while self.frame() is not None:
            pass
        return self.connection.close_code, self.connection.close_reason

    def close(self) -> None:
        async def send_close():
            self.connection.close()

        self.run(send_close())
        self.loop.close()


@pytest.fixture
def widget_key(api, client) -> str:
    response = post_json(api, "/widget-connections", {"name": "Website chat", "allowedOrigins": [ORIGIN]})
    assert response.status_code == 201, response.content
    return response.json()["embedKey"]


@pytest.fixture
def token(client, widget_key) -> str:
    token = start_visitor(client, widget_key)
    assert open_thread(client, widget_key, token).status_code == 201
    return token


def file_received(organization) -> int:
    """File the visitors' socket messages in the inbox, as the worker's store_received task does (the server here
    runs no worker)."""
    pending = ReceivedMessage.objects.for_org(organization).order_by("created_at").values_list("id", flat=True)
    return sum(store_received(str(received_id)) for received_id in list(pending))


def authed(address: str, key: str, token: str) -> Socket:
    socket = Socket(address, key)
    socket.send({"type": "auth", "visitorToken": token})
    assert socket.frame() == {"type": "ready", "online": True, "open": True}
    return socket


def test_a_visitor_sends_over_the_socket_and_gets_the_practices_reply_and_typing(
    web_server, api, owner, widget_key, token
):
    socket = authed(web_server, widget_key, token)
    socket.send({"type": "ping"})
    assert socket.frame() == {"type": "pong"}

    socket.send({"type": "message", "body": "Do you do implants?", "clientMessageId": "c-1"})
    ack = socket.frame()
    assert ack["type"] == "ack" and ack["clientMessageId"] == "c-1"
    assert ack["message"]["from"] == "visitor" and ack["message"]["body"] == "Do you do implants?"
    socket.send({"type": "message", "body": "Do you do implants?", "clientMessageId": "c-1"})  # a retry, not filed yet
    assert socket.frame()["message"]["id"] == ack["message"]["id"]
    received = ReceivedMessage.objects.for_org(owner.organization).get()  # kept durably before the ack
    assert str(received.message_id) == ack["message"]["id"]
    assert file_received(owner.organization) == 1  # what the worker's task does
    stored = Message.objects.for_org(owner.organization).get()
    assert str(stored.id) == ack["message"]["id"] and stored.direction == "inbound" and stored.channel == "widget"
    socket.send({"type": "message", "body": "Do you do implants?", "clientMessageId": "c-1"})  # a retry, filed
    assert socket.frame()["message"]["id"] == ack["message"]["id"]
    assert Message.objects.for_org(owner.organization).count() == 1

    socket.send({"type": "message", "body": "", "clientMessageId": "c-2"})
    assert socket.frame() == {"type": "error", "code": "VALIDATION_ERROR", "message": "body: 1 to 4,096 characters"}
    socket.send({"type": "shout"})
    assert socket.frame()["code"] == "UNKNOWN_FRAME"

    conversation = Conversation.objects.for_org(owner.organization).get()
    assert api.post(f"/conversations/{conversation.id}/typing").status_code == 204
    assert socket.frame() == {"type": "typing", "from": "practice"}
    reply = post_json(api, f"/conversations/{conversation.id}/messages", {"body": "Yes, we do <b>implants</b>."})
    assert reply.status_code in (201, 202), reply.content
    pushed = socket.frame()
    assert pushed["type"] == "message" and pushed["message"]["from"] == "practice"
    assert pushed["message"]["body"] == "Yes, we do <b>implants</b>."
    assert pushed["message"]["id"] == str(Message.objects.for_org(owner.organization).get(direction="outbound").id)
    socket.close()


def test_refusals_close_with_a_code_and_a_reason(web_server, client, outsider, widget_key, token):
    unknown = Socket(web_server, "wk_" + "x" * 32)
    assert unknown.closed() == (4404, "unknown widget")
    unknown.close()

    foreign = Socket(web_server, widget_key, origin="https://evil.example")
    assert foreign.closed() == (4403, "origin not allowed")
    foreign.close()

    for bad in ("wv_" + "x" * 43, token + "x", None, 5):
        socket = Socket(web_server, widget_key)
        socket.send({"type": "auth", "visitorToken": bad})
        assert socket.closed() == (4401, "unknown visitor token")
        socket.close()

    other_key = post_json(outsider.api_client(), "/widget-connections", {"name": "Other", "allowedOrigins": [ORIGIN]})
    socket = Socket(web_server, other_key.json()["embedKey"])
    socket.send({"type": "auth", "visitorToken": token})  # another practice's widget: not this visitor's
    assert socket.closed() == (4401, "unknown visitor token")
    socket.close()

    socket = Socket(web_server, widget_key)
    socket.send({"type": "ping"})  # before auth: not an auth frame
    assert socket.closed() == (4401, "unknown visitor token")
    socket.close()

    socket = Socket(web_server, widget_key)
    socket.send("not json")
    assert socket.closed() == (1003, "frames are JSON objects with a type")
    socket.close()


def test_frame_limits_size_and_rate(web_server, owner, widget_key, token):
    socket = authed(web_server, widget_key, token)
    socket.send({"type": "message", "body": "x" * settings.SVC_WIDGET_FRAME_BYTES, "clientMessageId": "big"})
    assert socket.closed() == (1009, f"frame over {settings.SVC_WIDGET_FRAME_BYTES} bytes")
    socket.close()
    assert not Message.objects.for_org(owner.organization).exists()

    burst = int(settings.SVC_WIDGET_FRAME_BUCKET[0])
    socket = authed(web_server, widget_key, token)  # the auth frame took one token of this socket's bucket
    for _ in range(burst + 5):
        socket.send({"type": "ping"})
    pongs = 0
    while (frame := socket.frame()) is not None:
        assert frame == {"type": "pong"}
        pongs += 1
    assert (socket.connection.close_code, socket.connection.close_reason) == (
        4429,
        "frame rate exceeded (120 burst, 1 per second)",
    )
    assert burst - 1 <= pongs < burst + 5  # the excess is refused by closing, not dropped silently
    socket.close()


def test_several_daphne_processes_share_the_socket_and_replies_reach_each_visitor(
    start_server, tmp_path, api, owner, client, widget_key
):
    """config.serve starts SVC_SOCKET_WORKERS daphne processes on one listening socket: visitors land in any of them,
    and a practice reply published from this process reaches each one through the channel layer."""
    address = start_server(SVC_SOCKET_WORKERS="3")
    log = (tmp_path / "web-0.log").read_text(errors="replace")
    assert log.count("Starting server at fd:fileno=") == 3, log[-2000:]

    sockets = []
    for number in range(6):
        token = start_visitor(client, widget_key)
        opened = open_thread(client, widget_key, token, name=f"Visitor {number}", email=f"v{number}@example.com")
        assert opened.status_code == 201
        socket = authed(address, widget_key, token)
        socket.send({"type": "message", "body": "Hello", "clientMessageId": "m-1"})
        assert socket.frame()["type"] == "ack"
        sockets.append(socket)
    assert file_received(owner.organization) == 6
    conversations = Conversation.objects.for_org(owner.organization).order_by("created_at", "id")
    assert conversations.count() == 6
    for number, conversation in enumerate(conversations):
        reply = post_json(api, f"/conversations/{conversation.id}/messages", {"body": f"Reply {number}"})
        assert reply.status_code in (201, 202), reply.content
    for number, socket in enumerate(sockets):
        pushed = socket.frame()
        assert pushed["type"] == "message" and pushed["message"]["body"] == f"Reply {number}"
        socket.close()
