"""Background work of the deposits area (Celery beat: CELERY_BEAT_SCHEDULE "deposits-expire")."""

from celery import shared_task

from apps.deposits.services import expire_due


@shared_task(name="apps.deposits.tasks.expire_links")
def expire_links() -> int:
    """Sent deposit requests whose patient link has expired become expired (deposit_request.status_changed)."""
    return expire_due()


RECEIPT_RETENTION_DAYS = 30  # the platform retries an event for 3 days; a replay after 30 is not expected


@shared_task(name="apps.deposits.tasks.purge_receipts")
def purge_receipts() -> int:
    """Forget applied callback receipts after 30 days (pending refunds are kept until their payment arrives)."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.deposits.models import CallbackReceipt

    cutoff = timezone.now() - timedelta(days=RECEIPT_RETENTION_DAYS)
    deleted, _ = CallbackReceipt.objects.filter(received_at__lt=cutoff, pending_payment_intent="").delete()
    return deleted
