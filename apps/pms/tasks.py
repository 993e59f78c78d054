"""Celery entry points of the connected PMS: thin, safe to run twice (row locks and the import's cursor check
decide who works)."""

from celery import shared_task

from apps.pms import imports, inbound


@shared_task(name="apps.pms.tasks.run_import", acks_late=True, reject_on_worker_lost=True)
def run_import(import_id: str):
    return imports.run_import(import_id)


@shared_task(name="apps.pms.tasks.process_receipt", acks_late=True, reject_on_worker_lost=True)
def process_receipt(receipt_id: str):
    return inbound.receipt_process(receipt_id)


@shared_task(name="apps.pms.tasks.sweep")
def sweep() -> dict:
    """Every minute (beat): receipts still waiting a minute after they arrived, and running imports nobody has moved
    on for two minutes (a worker that died)."""
    return {"receipts": inbound.sweep(), "imports": imports.sweep_stale()}


@shared_task(name="apps.pms.tasks.purge")
def purge() -> int:
    """Hourly (beat): receipts done with, after 30 days."""
    return inbound.purge()
