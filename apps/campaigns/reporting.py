"""Aggregate reads of campaigns for the reports area (apps.reports): figures only.

Campaigns count by when they were launched, in [start, end); their recipients are read through the recipients'
unique index (organization, campaign, patient), each with its message (primary key).
"""

from django.db.models import Count, Exists, F, OuterRef, Q

from apps.campaigns.models import Campaign, CampaignRecipient, RecipientState
from apps.conversations.public import Message

_SENT = ("sent", "delivered", "read")
_DELIVERED = ("delivered", "read")
_FAILED = ("failed", "undelivered")


def campaigns_launched(*, organization, start, end, campaign_id=None) -> list[dict]:
    """Campaigns launched in [start, end), oldest first: {id, name, status, channel, launched_at}."""
    rows = Campaign.objects.for_org(organization).filter(launched_at__gte=start, launched_at__lt=end)
    if campaign_id is not None:
        rows = rows.filter(id=campaign_id)
    return list(
        rows.annotate(channel=F("connection__kind"))
        .order_by("launched_at", "id")
        .values("id", "name", "status", "channel", "launched_at")
    )


def recipient_outcomes(*, organization, campaign_ids) -> dict:
    """Per campaign: recipients, skipped, sent (handed to the provider and not failed), delivered, read (opened,
    where the channel reports it), failed, replied (an inbound message in the recipient's conversation after the
    campaign's message), unsubscribed (through the campaign's opt-out link)."""
    replied = Message.objects.for_org(organization).filter(
        conversation_id=OuterRef("message__conversation_id"),
        direction=Message.Direction.INBOUND,
        occurred_at__gt=OuterRef("message__occurred_at"),
    )
    rows = (
        CampaignRecipient.objects.for_org(organization)
        .filter(campaign_id__in=list(campaign_ids))
        .annotate(replied=Exists(replied))
        .values("campaign_id")
        .annotate(
            recipients=Count("id"),
            skipped=Count("id", filter=Q(state=RecipientState.SKIPPED)),
            sent=Count("id", filter=Q(message__status__in=_SENT)),
            delivered=Count("id", filter=Q(message__status__in=_DELIVERED)),
            read=Count("id", filter=Q(message__status="read")),
            failed=Count("id", filter=Q(message__status__in=_FAILED)),
            replied=Count("id", filter=Q(replied=True, message__isnull=False)),
            unsubscribed=Count("id", filter=Q(unsubscribed_at__isnull=False)),
        )
        .order_by()
    )
    return {row.pop("campaign_id"): row for row in rows}
