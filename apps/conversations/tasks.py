"""Celery entry points: thin and safe to run twice (the row lock with SKIP LOCKED decides who works)."""

from celery import shared_task
from django.utils import timezone

from apps.conversations import inbound
from apps.conversations.models import InboundDelivery

SWEEP_AFTER_SECONDS = 60


@shared_task(name="apps.conversations.tasks.process_delivery")
def process_delivery(delivery_id: str) -> bool:
    return inbound.inbound_process(delivery_id) is not None


@shared_task(name="apps.conversations.tasks.sweep_deliveries")
def sweep_deliveries(limit: int = 500) -> int:
    """Deliveries still waiting a minute after they arrived (a publication lost with the broker): processed here."""
    cutoff = timezone.now() - timezone.timedelta(seconds=SWEEP_AFTER_SECONDS)
    waiting = list(
        InboundDelivery.unscoped_objects.filter(state=InboundDelivery.State.RECEIVED, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    return sum(inbound.inbound_process(delivery_id) is not None for delivery_id in waiting)
