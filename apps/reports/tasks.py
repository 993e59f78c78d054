"""Celery entry points of the reports area: thin and idempotent (row locks with SKIP LOCKED and the last period
sent decide who sends what)."""

from celery import shared_task

from apps.reports import services


@shared_task(name="apps.reports.tasks.send_due_subscriptions")
def send_due_subscriptions() -> dict:
    """Every five minutes (beat): report subscriptions whose moment has come."""
    report = services.subscriptions_send_due()
    return {"sent": report.sent, "skipped": report.skipped, "disabled": report.disabled, "failed": report.failed}
