"""Reads of templates and campaigns. A recipient's status is derived from its Message (joined), so it moves with the
provider's callbacks without any campaign code."""

from dataclasses import dataclass

from django.db.models import Case, CharField, Count, F, Q, QuerySet, Value, When
from django.db.models.functions import Lower

from apps.campaigns.models import Campaign, CampaignRecipient, MessageTemplate, RecipientState

# What a recipient's status can be, as the list shows it and the totals count it (each recipient once).
RECIPIENT_STATUSES = (
    "pending",
    "queued",
    "sent",
    "delivered",
    "failed",
    "skipped",
    "cancelled",
    "unsubscribed",
    "released",
)

RECIPIENT_STATUS = Case(
    When(unsubscribed_at__isnull=False, then=Value("unsubscribed")),
    When(state=RecipientState.PENDING, then=Value("pending")),
    When(state=RecipientState.SKIPPED, then=Value("skipped")),
    When(state=RecipientState.CANCELLED, then=Value("cancelled")),
    When(message__status__in=("delivered", "read"), then=Value("delivered")),
    When(message__status__in=("failed", "undelivered"), then=Value("failed")),
    When(message__status="sent", then=Value("sent")),
    When(message__status="queued", then=Value("queued")),
    default=Value("released"),  # released, and its message was since erased with its conversation
    output_field=CharField(),
)


@dataclass(frozen=True)
class TemplateQuery:
    channel: str | None = None
    category: str | None = None
    approval_status: str | None = None


def template_page(*, organization, query: TemplateQuery, limit: int, offset: int) -> tuple[list, int]:
    templates = MessageTemplate.objects.for_org(organization)
    if query.channel:
        templates = templates.filter(channel=query.channel)
    if query.category:
        templates = templates.filter(category=query.category)
    if query.approval_status:
        templates = templates.filter(approval_status=query.approval_status)
    total = templates.count()
    return list(templates.order_by(Lower("name"), "id")[offset : offset + limit]), total


def template_get(*, organization, template_id) -> MessageTemplate | None:
    return MessageTemplate.objects.for_org(organization).filter(id=template_id).first()


def campaign_page(*, organization, status: str | None, limit: int, offset: int) -> tuple[list, int]:
    campaigns = Campaign.objects.for_org(organization).select_related("connection")
    if status:
        campaigns = campaigns.filter(status=status)
    total = campaigns.count()
    return list(campaigns.order_by(F("created_at").desc(), F("id").desc())[offset : offset + limit]), total


def campaign_get(*, organization, campaign_id) -> Campaign | None:
    return Campaign.objects.for_org(organization).select_related("connection").filter(id=campaign_id).first()


def campaign_totals(*, organization, campaign_id) -> dict[str, int]:
    """Recipients by status (each counted once: an unsubscribed recipient is counted as unsubscribed, not as
    delivered), and all of them as `recipients`. One grouped query over the campaign's recipients."""
    counts = dict.fromkeys(RECIPIENT_STATUSES, 0)
    rows = (
        CampaignRecipient.objects.for_org(organization)
        .filter(campaign_id=campaign_id)
        .annotate(display=RECIPIENT_STATUS)
        .values("display")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        counts[row["display"]] = row["n"]
    return {"recipients": sum(counts.values()), **counts}


def totals_at_launch(frozen: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(totals, skipped reasons) of a campaign just launched, from the freeze's own counts: every recipient is then
    pending or skipped (no message exists yet), so nothing needs reading again."""
    skipped = {reason: n for reason, n in frozen.items() if reason != RecipientState.PENDING}
    counts = dict.fromkeys(RECIPIENT_STATUSES, 0)
    counts["pending"], counts["skipped"] = frozen.get(RecipientState.PENDING, 0), sum(skipped.values())
    return {"recipients": sum(counts.values()), **counts}, skipped


def recipients(*, organization, campaign_id, status: str | None) -> QuerySet:
    rows = (
        CampaignRecipient.objects.for_org(organization)
        .filter(campaign_id=campaign_id)
        .annotate(display=RECIPIENT_STATUS)
    )
    if status:
        rows = rows.filter(display=status)
    return rows


RECIPIENT_VALUES = (
    "id",
    "patient_id",
    "patient__first_name",
    "patient__last_name",
    "address",
    "display",
    "skip_reason",
    "message_id",
    "message__status",
    "message__error_code",
    "released_at",
    "unsubscribed_at",
)


def recipient_page(*, organization, campaign_id, status: str | None, limit: int, offset: int):
    rows = recipients(organization=organization, campaign_id=campaign_id, status=status)
    total = rows.count()
    page = list(rows.order_by("patient_id").values(*RECIPIENT_VALUES)[offset : offset + limit])
    return page, total


def skipped_reasons(*, organization, campaign_id) -> dict[str, int]:
    """How many recipients were skipped for each reason."""
    rows = (
        CampaignRecipient.objects.for_org(organization)
        .filter(campaign_id=campaign_id, state=RecipientState.SKIPPED)
        .filter(~Q(skip_reason=""))
        .values("skip_reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {row["skip_reason"]: row["n"] for row in rows}
