"""Celery entry points of notifications: thin and idempotent."""

from celery import shared_task

from apps.notifications import producers


@shared_task(name="apps.notifications.tasks.process_events")
def process_events(event_ids: list[str]) -> int:
    """Queued after a commit with the ids of its conversation.updated and patient.created events."""
    return producers.process_events(event_ids)


@shared_task(name="apps.notifications.tasks.notify_due_tasks")
def notify_due_tasks() -> int:
    """Every minute (beat): tasks that fell due since the last run, each assignee told once."""
    return producers.notify_due_tasks()


@shared_task(name="apps.notifications.tasks.purge_old")
def purge_old() -> list[int]:
    """Hourly (beat): notifications past retention and task-due notices past the lookback."""
    return list(producers.purge_old())
