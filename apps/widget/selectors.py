"""Reads of the chat widget."""

from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from apps.conversations.public import Conversation, Message
from apps.tasks.public import practice_timezone
from apps.widget import tokens
from apps.widget.models import Visitor, WidgetConnection

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def widgets_page(*, organization, limit: int, offset: int):
    rows = WidgetConnection.objects.for_org(organization).order_by("-created_at", "id")
    return list(rows[offset : offset + limit]), rows.count()


def widget_for_key(embed_key: str) -> WidgetConnection | None:
    """The active widget with this embed key (any practice), or None."""
    if not tokens.looks_like_embed_key(embed_key):
        return None
    return (
        WidgetConnection.objects.unscoped()
        .select_related("organization", "channel")
        .filter(embed_key=embed_key, active=True)
        .first()
    )


def visitor_for_token(widget: WidgetConnection, token: str | None) -> Visitor | None:
    """The visitor of this widget with this token, or None (another widget's visitor is None too)."""
    if not tokens.looks_like_visitor_token(token):
        return None
    return (
        Visitor.objects.for_org(widget.organization_id).filter(widget=widget, token_hash=tokens.digest(token)).first()
    )


def visitor_again(visitor: Visitor) -> Visitor:
    return Visitor.objects.for_org(visitor.organization_id).get(id=visitor.id)


def is_open(widget: WidgetConnection, now: datetime | None = None) -> bool:
    """Inside the office hours, in the practice's timezone. No hours set at all: always open."""
    if not widget.office_hours:
        return True
    local = (now or timezone.now()).astimezone(practice_timezone(widget.organization))
    clock = local.strftime("%H:%M")
    return any(start <= clock < end for start, end in widget.office_hours.get(DAYS[local.weekday()], []))


def visitor_messages(visitor: Visitor, *, after: datetime | None, after_id=None, limit: int) -> list[Message]:
    """The visitor's own thread: what they sent and the practice's replies addressed to them, oldest first. Never
    another visitor's messages, even on the same patient's conversation."""
    if visitor.patient_id is None:
        return []
    conversation = (
        Conversation.objects.for_org(visitor.organization_id)
        .filter(patient_id=visitor.patient_id, connection_id=visitor.widget.channel_id)
        .first()
    )
    if conversation is None:
        return []
    mine = Q(direction=Message.Direction.INBOUND, provider_message_id__startswith=f"widget:{visitor.id}:") | Q(
        direction=Message.Direction.OUTBOUND, outbound__to=str(visitor.id)
    )
    rows = Message.objects.for_org(visitor.organization_id).filter(mine, conversation=conversation)
    # A reply shows from when it is queued (its place in the thread is fixed then), so a poll never skips one.
    rows = rows.exclude(status=Message.State.FAILED)
    if after is not None:
        rows = rows.filter(Q(occurred_at__gt=after) | Q(occurred_at=after, id__gt=after_id))
    return list(rows.order_by("occurred_at", "id")[:limit])
