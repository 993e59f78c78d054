"""Aggregate reads of messages for the reports area (apps.reports): counts only, never a body or an address.

Messages count by when they occurred, in [start, end): the read is an index-only scan of conv_message_report_idx
(organization, occurred_at) INCLUDE (channel, direction, status).
"""

from django.db.models import Count, Q

from apps.conversations.models import Message

_SENT = ("sent", "delivered", "read")
_DELIVERED = ("delivered", "read")
_FAILED = ("failed", "undelivered")


def message_outcomes(*, organization, start, end, channel=None) -> list[dict]:
    """Per channel: outbound (every outbound message), queued, sent, delivered, read, failed, and inbound."""
    rows = Message.objects.for_org(organization).filter(occurred_at__gte=start, occurred_at__lt=end)
    if channel is not None:
        rows = rows.filter(channel=channel)
    outbound = Q(direction=Message.Direction.OUTBOUND)
    return list(
        rows.values("channel")
        .annotate(
            outbound=Count("id", filter=outbound),
            queued=Count("id", filter=outbound & Q(status="queued")),
            sent=Count("id", filter=outbound & Q(status__in=_SENT)),
            delivered=Count("id", filter=outbound & Q(status__in=_DELIVERED)),
            read=Count("id", filter=outbound & Q(status="read")),
            failed=Count("id", filter=outbound & Q(status__in=_FAILED)),
            inbound=Count("id", filter=Q(direction=Message.Direction.INBOUND)),
        )
        .order_by("channel")
    )
