"""What the widget pushes to a visitor's open sockets (one channel-layer group per visitor), and the typing
frames between a visitor and the practice. Pushes never fail the caller: a visitor without an open socket reads
the message on their next poll (GET /widget/{embedKey}/thread/messages)."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

logger = logging.getLogger("apps.widget")

VISITOR_MESSAGE = "widget.frame"  # the consumer's handler: widget_frame


WIDGET_CLOSED = "widget.closed"  # the consumer's handler: widget_closed


def visitor_group(visitor_id) -> str:
    return f"widget.visitor.{visitor_id}"


def widget_group(widget_id) -> str:
    """Every open socket of one widget: closed together when the widget is deactivated or its key rotated."""
    return f"widget.sockets.{widget_id}"


def close_sockets_after_commit(widget_id) -> None:
    def close() -> None:
        try:
            layer = get_channel_layer()
            if layer is not None:
                async_to_sync(layer.group_send)(widget_group(widget_id), {"type": WIDGET_CLOSED})
        except Exception as exc:
            logger.warning("widget sockets not closed (%s)", type(exc).__name__)

    transaction.on_commit(close)


def _send(visitor_id, frame: dict) -> None:
    try:
        layer = get_channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)(visitor_group(visitor_id), {"type": VISITOR_MESSAGE, "frame": frame})
    except Exception as exc:
        logger.warning("widget push not sent (%s)", type(exc).__name__)


def message_frame(*, message_id, body: str, sent_at, from_: str) -> dict:
    return {
        "type": "message",
        "message": {"id": str(message_id), "from": from_, "body": body, "sentAt": sent_at.isoformat()},
    }


def push_reply(envelope) -> None:
    """conversations' widget delivery: a practice's reply, to the visitor it is addressed to."""
    frame = message_frame(message_id=envelope.message_id, body=envelope.body, sent_at=timezone.now(), from_="practice")
    _send(envelope.to_address, frame)


def push_after_commit(visitor_id, frame: dict) -> None:
    transaction.on_commit(lambda: _send(visitor_id, frame))
