"""Aggregate reads of deposit requests for the reports area (apps.reports): counts and amounts only.

Deposit requests count by when they were made, in [start, end) (deposits_org_created_idx: organization,
created_at).
"""

from django.db.models import Count, Q, Sum

from apps.deposits.models import DepositRequest, DepositStatus


def deposit_outcomes(*, organization, start, end) -> list[dict]:
    """Per currency, of the requests made in [start, end): requested (sent to the patient; drafts are not),
    paid (paid, refunded later or not), expired, cancelled, refunded (in part or whole), outstanding (sent, not
    yet paid) and their amounts in minor units: requested_amount, paid_amount, refunded_amount."""
    rows = DepositRequest.objects.for_org(organization).filter(created_at__gte=start, created_at__lt=end)
    requested = Q(sent_at__isnull=False)
    paid = Q(paid_at__isnull=False)
    return list(
        rows.values("currency")
        .annotate(
            requested=Count("id", filter=requested),
            paid=Count("id", filter=paid),
            expired=Count("id", filter=Q(status=DepositStatus.EXPIRED)),
            cancelled=Count("id", filter=Q(status=DepositStatus.CANCELLED)),
            refunded=Count("id", filter=Q(refunded_amount__gt=0)),
            outstanding=Count("id", filter=Q(status=DepositStatus.SENT)),
            requested_amount=Sum("amount", filter=requested, default=0),
            paid_amount=Sum("amount", filter=paid, default=0),
            refunded_amount=Sum("refunded_amount", default=0),
        )
        .order_by("currency")
    )
