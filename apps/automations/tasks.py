"""Celery entry points of automations: thin and idempotent (a rule runs once per event or tick: the run row is
unique on it; schedule rules are taken with SKIP LOCKED)."""

from celery import shared_task

from apps.automations import runner


@shared_task(name="apps.automations.tasks.evaluate_events", acks_late=True, reject_on_worker_lost=True)
def evaluate_events(event_ids: list[str], chain: list[str] | None = None) -> int:
    """Committed events (queued by the commit listener, with the chain of rules that caused them)."""
    return runner.evaluate_events(event_ids, chain or ())


@shared_task(name="apps.automations.tasks.sweep_events")
def sweep_events() -> int:
    """Every minute (beat): listened-to events of the last 30 minutes whose evaluation was lost."""
    return runner.sweep_events()


@shared_task(name="apps.automations.tasks.sweep_schedules")
def sweep_schedules() -> int:
    """Every minute (beat): schedule rules whose tick has come."""
    return runner.sweep_schedules()


@shared_task(name="apps.automations.tasks.purge_runs")
def purge_runs() -> int:
    """Daily (beat): runs older than 90 days."""
    return runner.purge()
