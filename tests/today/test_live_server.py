"""End to end: the real web tier (config.serve: nginx routing /today/ws to daphne) on the test database, a real
WebSocket client (tornado's), a real session cookie and a real commit in this process reaching the socket through
Redis."""

import asyncio
import json

import pytest
from django.conf import settings
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from apps.tasks import services as task_services


def open_socket(loop, address: str, cookie: str | None):
    headers = {"Origin": f"http://{address}"}
    if cookie is not None:
        headers["Cookie"] = f"{settings.SESSION_COOKIE_NAME}={cookie}"
    request = HTTPRequest(f"ws://{address}/today/ws", headers=headers, request_timeout=20)

    async def connect():
        return await websocket_connect(request)

    return loop.run_until_complete(connect())


def close(loop, connection) -> None:
    """Close inside the loop: tornado writes the close frame on the running loop (outside one it has none)."""

    async def send_close():
        connection.close()

    loop.run_until_complete(send_close())


def next_frame(loop, connection) -> dict:
    async def read():
        return await asyncio.wait_for(connection.read_message(), 30)

    return json.loads(loop.run_until_complete(read()))


def test_live_updates_through_a_running_daphne(owner, member_factory, web_server):
    server = web_server
    cookie = owner.session_client().cookies[settings.SESSION_COOKIE_NAME].value
    loop = asyncio.new_event_loop()
    try:
        for refused in (None, "not-a-session"):  # a refused handshake is an HTTP 403 through daphne
            with pytest.raises(HTTPClientError) as refusal:
                open_socket(loop, server, refused)
            assert refusal.value.code == 403

        connection = open_socket(loop, server, cookie)
        task = task_services.task_create(organization=owner.organization, user=owner.user, data={"title": "Call"})
        frame = next_frame(loop, connection)

        assert frame["type"] == "task.created"
        assert frame["subject"] == {"type": "task", "id": str(task.id)}
        assert frame["organizationId"] == str(owner.organization.id)
        assert set(frame) == {"version", "id", "type", "createdAt", "organizationId", "subject", "actor", "data"}
        close(loop, connection)
    finally:
        loop.close()
