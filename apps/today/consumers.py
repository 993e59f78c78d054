"""GET /today/ws: the practice's committed events, live, for a signed-in member (see apps.today.live)."""

import logging
from urllib.parse import parse_qs

from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.today import live

logger = logging.getLogger("apps.today")

SERVER_ERROR = 1011


class LiveUpdatesConsumer(AsyncJsonWebsocketConsumer):
    admission: live.Admission | None = None
    group: str | None = None
    user_group: str | None = None

    async def connect(self):
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            user = await get_user(self.scope)
            self.admission = await database_sync_to_async(live.admit)(
                user=user, session=self.scope["session"], organization_param=(query.get("organizationId") or [None])[-1]
            )
        except live.Refused as refusal:
            await self.close(code=refusal.code)
            return
        except Exception:
            logger.exception("live updates handshake failed")
            await self.close(code=SERVER_ERROR)
            return
        self.group = live.group_name(self.admission.organization_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.user_group = live.user_group_name(self.admission.organization_id, self.admission.user_id)
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        await self._leave()

    async def receive(self, text_data=None, bytes_data=None):
        """The socket only speaks outward: frames from the client are ignored (not even decoded)."""

    async def live_events(self, message):
        role = await self._current_role(message)
        if role is None:
            return
        for item in message["events"]:
            if item.get("organizationId") == self.admission.organization_id and live.may_receive(role, item["type"]):
                await self.send_json(item)

    async def live_resync(self, message):
        if await self._current_role(message) is not None:
            await self.send_json(
                {
                    "type": live.RESYNC_MESSAGE,
                    "organizationId": self.admission.organization_id,
                    "count": message["count"],
                }
            )

    async def live_user(self, message):
        """A frame for this member alone (push_to_users), after the same access re-read as events."""
        if self.admission is None or message.get("user_id") != str(self.admission.user_id):
            return
        if await self._current_role(message) is not None:
            await self.send_json(
                {"type": message["kind"], "organizationId": self.admission.organization_id, "data": message["data"]}
            )

    async def _current_role(self, message) -> str | None:
        """The member's role now, or None (and the socket closed) when they may no longer receive anything."""
        if self.admission is None or message.get("organization_id") != self.admission.organization_id:
            return None
        try:
            return await database_sync_to_async(live.current_role)(self.admission)
        except live.Refused as refusal:
            code = refusal.code
        except Exception:
            logger.exception("live updates: access re-read failed")
            code = SERVER_ERROR
        await self._leave()
        await self.close(code=code)
        return None

    async def _leave(self) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
        if self.user_group is not None:
            await self.channel_layer.group_discard(self.user_group, self.channel_name)
            self.user_group = None
