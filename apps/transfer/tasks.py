"""Celery entry points of data transfer: thin and idempotent (a checkpoint under a row lock, a conditional claim, or
a status check decides who works)."""

from celery import shared_task

from apps.transfer import services


@shared_task(name="apps.transfer.tasks.run_import")
def run_import(import_id: str) -> str | None:
    """Run or resume one import from its checkpoint (queued by start, resume, the stall sweep, and by itself when
    its time budget runs out)."""
    return services.run_import(import_id)


@shared_task(name="apps.transfer.tasks.build_export", time_limit=3300, soft_time_limit=3200)
def build_export(export_id: str) -> str | None:
    """Build one export's zip (a large practice's may take minutes: its own time limit, under the broker's
    one-hour visibility timeout)."""
    return services.build_export(export_id)


@shared_task(name="apps.transfer.tasks.sweep")
def sweep() -> dict:
    """Every minute (beat): stalled imports resumed; export files past their retention deleted."""
    return {"imports": services.sweep_stalled_imports(), "exportFiles": services.purge_export_files()}


@shared_task(name="apps.transfer.tasks.close_practices", time_limit=3300, soft_time_limit=3200)
def close_practices() -> int:
    """Every hour (beat): practices whose grace period is over are closed."""
    return services.close_due_practices()
