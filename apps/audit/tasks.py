"""Celery tasks of the audit app: load nothing, call a service."""

from celery import shared_task

from apps.audit import services


@shared_task(name="apps.audit.tasks.purge_expired", acks_late=True, reject_on_worker_lost=True)
def purge_expired() -> int:
    """Daily (beat): entries past AUDIT_RETENTION_DAYS are deleted, in batches. Idempotent."""
    return services.audit_purge_expired()
