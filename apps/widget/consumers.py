"""GET /widget/{embedKey}/ws: a visitor's live thread (daphne, like /today/ws).

Handshake: the widget must exist and be active, the page's Origin (when sent) allowed, and the widget's handshake
bucket (600 burst, 10 per second) have a token; the socket is then accepted and the first frame must be
{"type": "auth", "visitorToken": …} within AUTH_SECONDS. Refusals close with a code and a reason (never silently):
4404 unknown widget, 4403 origin not allowed, 4429 too many handshakes or frames, 4401 bad or missing visitor token,
4408 no auth frame in time, 1009 a frame over SVC_WIDGET_FRAME_BYTES, 1003 a frame that is not a JSON object.

Frames from the visitor, each taking a token from this socket's own bucket (120 burst, 1 per second):
{"type": "message", "body", "clientMessageId"} (answered {"type": "ack", "clientMessageId", "message"} once it is
kept durably, in a batch with the other sockets' messages of this process, with the id its inbox message has or
will have: a task files it in the inbox; the widget's send bucket applies too), {"type": "typing"} (shown to the
conversation's assignee over /today/ws), {"type": "ping"} (answered "pong"). Frames to the visitor:
{"type": "ready", "online"}, {"type": "message", "message"} (the practice's replies), {"type": "typing",
"from": "practice"}, {"type": "error", "code", "message"}.
"""

import asyncio
import json
import logging
import time

from channels.db import DatabaseSyncToAsync
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from redis.exceptions import RedisError

from apps.core.limits import take_token
from apps.widget import live, selectors, services
from apps.widget.api.serializers import normalised_origin

logger = logging.getLogger("apps.widget")

AUTH_SECONDS = 10


def in_pool(function):
    """Run blocking work (the database, Redis) in the executor's thread pool, not Channels' one shared thread: with
    hundreds of visitor sockets in one daphne, their writes must not queue behind each other (bench/widget)."""
    return DatabaseSyncToAsync(function, thread_sensitive=False)


class AcceptBatcher:
    """Visitors' messages of every socket in this process, kept together: while one batch is being written (one
    INSERT, one task), the next gathers, so 500 sockets sending once a second cost a few writes a second rather
    than 500 (bench/widget). One per event loop; each message's ack waits for its own batch's commit."""

    MAX_BATCH = 200
    _per_loop: dict = {}

    def __init__(self):
        self.pending: list[tuple[services.Incoming, asyncio.Future]] = []
        self.draining = False
        self.drainer: asyncio.Task | None = None

    @classmethod
    def of_this_loop(cls) -> "AcceptBatcher":
        loop = asyncio.get_running_loop()
        batcher = cls._per_loop.get(loop)
        if batcher is None:
            cls._per_loop = {known: b for known, b in cls._per_loop.items() if not known.is_closed()}
            batcher = cls._per_loop[loop] = cls()
        return batcher

    async def accept(self, item: services.Incoming) -> services.Accepted:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if not self.draining:
            self.draining = True
            self.drainer = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self.pending:
                batch, self.pending = self.pending[: self.MAX_BATCH], self.pending[self.MAX_BATCH :]
                try:
                    outcomes = await in_pool(services.messages_accept)([item for item, _ in batch])
                except Exception as exc:  # the database refused the batch: each sender is told to resend
                    outcomes = [exc] * len(batch)
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    if future.done():  # the socket went away meanwhile
                        continue
                    if isinstance(outcome, Exception):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            self.draining = False


UNKNOWN_WIDGET, ORIGIN_REFUSED, UNAUTHORIZED, AUTH_TIMEOUT, TOO_MANY = 4404, 4403, 4401, 4408, 4429
TOO_BIG, UNSUPPORTED = 1009, 1003


class FrameBucket:
    """This socket's own token bucket (kept in the socket's process: a socket lives on one daphne)."""

    def __init__(self, burst: int, per_second: float):
        self.burst, self.per_second = burst, per_second
        self.tokens, self.at = float(burst), time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_second)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def _bucket_allows(name: str, widget_id, setting: str) -> bool:
    burst, per_second = getattr(settings, setting)
    try:
        allowed, _ = take_token(f"{name}:{widget_id}", burst=int(burst), per_second=float(per_second))
    except RedisError as exc:
        logger.warning("widget bucket %s unavailable (%s); failing open", name, type(exc).__name__)
        return True
    return allowed


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


class WidgetConsumer(AsyncWebsocketConsumer):
    widget = None
    visitor = None
    group: str | None = None
    auth_timer: asyncio.Task | None = None

    async def connect(self):
        embed_key = self.scope["url_route"]["kwargs"]["embed_key"]
        self.widget = await in_pool(selectors.widget_for_key)(embed_key)
        await self.accept()
        if self.widget is None:
            return await self.refuse(UNKNOWN_WIDGET, "unknown widget")
        origin = _header(self.scope, b"origin")
        if origin and normalised_origin(origin) not in self.widget.allowed_origins:
            return await self.refuse(ORIGIN_REFUSED, "origin not allowed")
        if not await in_pool(_bucket_allows)("widget.handshake", self.widget.id, "SVC_WIDGET_HANDSHAKE_BUCKET"):
            return await self.refuse(TOO_MANY, "too many connections to this widget; retry shortly")
        burst, per_second = settings.SVC_WIDGET_FRAME_BUCKET
        self.frames = FrameBucket(int(burst), float(per_second))
        self.auth_timer = asyncio.ensure_future(self._auth_deadline())

    async def _auth_deadline(self):
        await asyncio.sleep(AUTH_SECONDS)
        if self.visitor is None:
            await self.refuse(AUTH_TIMEOUT, "no auth frame")

    async def refuse(self, code: int, reason: str):
        await self._leave()
        await self.close(code=code, reason=reason)

    async def disconnect(self, code):
        if self.auth_timer is not None:
            self.auth_timer.cancel()
        await self._leave()

    async def _leave(self):
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(live.widget_group(self.widget.id), self.channel_name)
            self.group = None

    async def receive(self, text_data=None, bytes_data=None):
        raw = text_data if text_data is not None else bytes_data
        size = len(raw.encode("utf-8") if isinstance(raw, str) else raw or b"")
        if size > settings.SVC_WIDGET_FRAME_BYTES:
            return await self.refuse(TOO_BIG, f"frame over {settings.SVC_WIDGET_FRAME_BYTES} bytes")
        if not self.frames.take():
            return await self.refuse(TOO_MANY, "frame rate exceeded (120 burst, 1 per second)")
        try:
            frame = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            frame = None
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return await self.refuse(UNSUPPORTED, "frames are JSON objects with a type")
        if self.visitor is None:
            return await self._authenticate(frame)
        handler = {"message": self._message, "typing": self._typing, "ping": self._ping}.get(frame["type"])
        if handler is None:
            return await self._error("UNKNOWN_FRAME", f"unknown frame type {frame['type'][:40]!r}")
        await handler(frame)

    async def _authenticate(self, frame: dict):
        token = frame.get("visitorToken") if frame["type"] == "auth" else None
        visitor = await in_pool(selectors.visitor_for_token)(self.widget, token if isinstance(token, str) else None)
        if visitor is None:
            return await self.refuse(UNAUTHORIZED, "unknown visitor token")
        self.visitor = visitor
        self.group = live.visitor_group(visitor.id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.channel_layer.group_add(live.widget_group(self.widget.id), self.channel_name)
        online = await in_pool(selectors.is_open)(self.widget)
        await self.send_json({"type": "ready", "online": online, "open": visitor.patient_id is not None})

    async def _message(self, frame: dict):
        body, client_id = frame.get("body"), frame.get("clientMessageId")
        if not isinstance(body, str) or not body.strip() or len(body) > 4096:
            return await self._error("VALIDATION_ERROR", "body: 1 to 4,096 characters")
        if not (isinstance(client_id, str) and 0 < len(client_id) <= 64 and client_id.replace("-", "").isalnum()):
            return await self._error("VALIDATION_ERROR", "clientMessageId: 1 to 64 letters, digits or '-'")
        if not await in_pool(_bucket_allows)("widget.send", self.widget.id, "SVC_WIDGET_SEND_BUCKET"):
            return await self._error("RATE_LIMITED", "too many messages to this widget; retry shortly")
        if self.visitor.patient_id is None:  # the thread may have been opened since the handshake
            self.visitor = await in_pool(selectors.visitor_again)(self.visitor)
        try:
            incoming = services.Incoming(self.widget, self.visitor, body, client_id)
            accepted = await AcceptBatcher.of_this_loop().accept(incoming)
        except services.ThreadNotOpen:
            return await self._error("WIDGET_THREAD_NOT_OPEN", "open the thread first")
        except Exception as exc:
            logger.warning("widget message not stored (%s)", type(exc).__name__)
            return await self._error("WIDGET_NOT_STORED", "not stored; send it again shortly")
        await self.send_json(
            {
                "type": "ack",
                "clientMessageId": client_id,
                "message": {
                    "id": accepted.message_id,
                    "from": "visitor",
                    "body": accepted.body,
                    "sentAt": accepted.sent_at.isoformat(),
                },
            }
        )

    async def _typing(self, frame: dict):
        await in_pool(services.visitor_typing)(visitor=self.visitor, widget=self.widget)

    async def _ping(self, frame: dict):
        await self.send_json({"type": "pong"})

    async def _error(self, code: str, message: str):
        await self.send_json({"type": "error", "code": code, "message": message})

    async def send_json(self, data: dict):
        await self.send(text_data=json.dumps(data))

    # --- group messages -------------------------------------------------------------------------------------------

    async def widget_frame(self, message):
        await self.send_json(message["frame"])

    async def widget_closed(self, message):
        await self.refuse(UNKNOWN_WIDGET, "the widget was taken off this website")
