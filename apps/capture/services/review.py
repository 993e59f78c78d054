"""Intake review: closing review items."""

from django.db import transaction
from django.utils import timezone

from apps.capture.errors import (
    ReviewItemClosed,
)
from apps.capture.models import IntakeReviewItem


@transaction.atomic
def review_close(*, organization, user, item: IntakeReviewItem, status: str, note: str = "") -> IntakeReviewItem:
    updated = (
        IntakeReviewItem.objects.for_org(organization)
        .filter(id=item.id, status=IntakeReviewItem.Status.OPEN)
        .update(
            status=status, resolved_at=timezone.now(), resolved_by=user, resolution_note=note, updated_at=timezone.now()
        )
    )
    if not updated:
        raise ReviewItemClosed()
    return IntakeReviewItem.objects.for_org(organization).get(id=item.id)
