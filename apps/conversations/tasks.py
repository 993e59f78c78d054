"""Celery entry points: thin and safe to run twice (the row lock with SKIP LOCKED decides who works)."""

import logging

from celery import shared_task
from django.utils import timezone

from apps.conversations import inbound
from apps.conversations.models import EmailEventReceipt, InboundDelivery, ParkedCallback

SWEEP_AFTER_SECONDS = 60
logger = logging.getLogger("apps.conversations")


@shared_task(name="apps.conversations.tasks.drain_connection")
def drain_connection(organization_id: str, connection_id: str) -> int:
    """Right after callbacks are stored: process the connection's items, oldest first (one drain at a time)."""
    return inbound.drain_connection(organization_id=organization_id, connection_id=connection_id)


@shared_task(name="apps.conversations.tasks.sweep_deliveries")
def sweep_deliveries(limit: int = 500) -> int:
    """Items still waiting a minute after they arrived (a drain request lost with the broker, or a failure being
    retried): processed here, each failure counted towards the five attempts."""
    cutoff = timezone.now() - timezone.timedelta(seconds=SWEEP_AFTER_SECONDS)
    waiting = list(
        InboundDelivery.unscoped_objects.filter(state=InboundDelivery.State.RECEIVED, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    return sum(inbound.inbound_process(delivery_id) for delivery_id in waiting)


@shared_task(name="apps.conversations.tasks.send_messages")
def send_messages(message_ids: list) -> int:
    """Send queued outbound messages (at most outbound.SEND_TOGETHER) through their channel's provider."""
    from apps.conversations import outbound

    return outbound.send_batch(message_ids)


@shared_task(name="apps.conversations.tasks.sweep_outbound")
def sweep_outbound() -> int:
    """Every minute (beat): queued messages whose time has come (retries, quiet hours over, lost requests)."""
    from apps.conversations import outbound

    return outbound.sweep_due()


TEST_SEND_ATTEMPTS = 5


@shared_task(name="apps.conversations.tasks.send_test_message")
def send_test_message(payload: dict, attempt: int = 1) -> bool:
    """A sample to a member's own address (outbound.send_test_message): tried again with backoff (2, 4, 8, 16 s, or
    the provider's Retry-After) while the provider is unavailable, then given up with a log line (the member sees
    nothing arrive and can send another)."""
    from apps.conversations import outbound
    from apps.conversations.senders import SendFailed

    try:
        outbound.deliver_test_message(payload)
    except SendFailed as failed:
        if failed.retryable and attempt < TEST_SEND_ATTEMPTS:
            countdown = max(failed.retry_after or 0, 2**attempt)
            send_test_message.apply_async((payload, attempt + 1), countdown=countdown)
        else:
            logger.warning("test send not sent (%s, attempt %s)", failed.code, attempt)
        return False
    return True


@shared_task(name="apps.conversations.tasks.copy_attachment")
def copy_attachment(attachment_id: str) -> str:
    """Copy one inbound attachment from the provider to durable storage (one attempt; failures reschedule)."""
    from apps.conversations import attachments

    return attachments.copy_attachment(attachment_id)


@shared_task(name="apps.conversations.tasks.sweep_attachments")
def sweep_attachments(limit: int = 500) -> int:
    """Attachments still pending ten minutes on with attempts left: their copy is requested again."""
    from apps.conversations import attachments

    return attachments.sweep_attachments(limit=limit)


PARKED_KEPT_DAYS = 30  # replayed or dismissed parked callbacks stay listed this long
RECEIPTS_KEPT_HOURS = (
    48  # past the e-mail receipt's 24-hour lifecycle, a redelivery is one the provider no longer sends
)


@shared_task(name="apps.conversations.tasks.purge_records")
def purge_records() -> int:
    """Hourly (beat): decided parked callbacks after 30 days (parked ones wait for a decision, however old) and
    e-mail event receipts after 48 hours. Returns how many rows went."""
    now = timezone.now()
    parked, _ = ParkedCallback.objects.filter(
        state__in=[ParkedCallback.State.REPLAYED, ParkedCallback.State.DISMISSED],
        decided_at__lt=now - timezone.timedelta(days=PARKED_KEPT_DAYS),
    ).delete()
    receipts, _ = EmailEventReceipt.objects.filter(
        first_seen_at__lt=now - timezone.timedelta(hours=RECEIPTS_KEPT_HOURS)
    ).delete()
    return parked + receipts
