"""Celery entry points of lead capture: thin and idempotent (a submission is processed under a row lock, once)."""

from datetime import timedelta

from celery import shared_task

from apps.capture import services


@shared_task(name="apps.capture.tasks.drain_practice")
def drain_practice(organization_id: str) -> int:
    """Right after captures are stored: make their leads, oldest first (one drain per practice at a time)."""
    return services.drain_practice(organization_id=organization_id)


@shared_task(name="apps.capture.tasks.process_form_backlog")
def process_form_backlog(form_id: str) -> int:
    """After a mapping confirmation: the form's parked submissions, oldest first, in batches."""
    done = services.process_backlog(form_id=form_id)
    if done >= 500:
        process_form_backlog.delay(form_id)
    return done


@shared_task(name="apps.capture.tasks.sweep")
def sweep() -> int:
    """Every minute (beat): stored submissions whose processing failed (e.g. the database went away between
    storing and processing) get another go, up to ten attempts; so do parked ones that raced the mapping's
    confirmation."""
    services.unpark_confirmed()
    return services.process_backlog(older_than=timedelta(seconds=30))
