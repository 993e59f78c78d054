"""Celery entry points of referrals: thin and idempotent."""

from celery import shared_task

from apps.referrals import rewards


@shared_task(name="apps.referrals.tasks.process_events")
def process_events(event_ids: list[str]) -> int:
    """Queued after a commit with the ids of its journey.stage_changed and journey.won events."""
    return rewards.process_events(event_ids)


@shared_task(name="apps.referrals.tasks.sweep")
def sweep() -> int:
    """Every 10 minutes (beat): rewards whose queued task was lost."""
    return rewards.sweep()
