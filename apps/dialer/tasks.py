"""Celery entry points of the dialer: thin and safe to run twice (row locks with SKIP LOCKED decide who works)."""

from celery import shared_task

from apps.dialer import inbound, recordings


@shared_task(name="apps.dialer.tasks.drain_events")
def drain_events(organization_id: str, connection_id: str) -> int:
    """Right after callbacks are stored: the connection's waiting events, oldest first (one drain at a time)."""
    return inbound.drain_connection(organization_id=organization_id, connection_id=connection_id)


@shared_task(name="apps.dialer.tasks.sweep")
def sweep() -> dict:
    """Every minute (beat): events still waiting (lost drain requests, failures being retried), recordings nobody
    copied for ten minutes, and recording deletions left over."""
    return {
        "events": inbound.sweep(),
        "recordings": recordings.sweep_pending(),
        "deletions": recordings.sweep_deletions(),
    }


@shared_task(name="apps.dialer.tasks.purge_events")
def purge_events() -> int:
    """Hourly (beat): receipts of events done with, after 30 days."""
    return inbound.purge()


@shared_task(name="apps.dialer.tasks.fetch_recording")
def fetch_recording(recording_id: str) -> str:
    return recordings.fetch(recording_id)


@shared_task(name="apps.dialer.tasks.delete_recordings")
def delete_recordings(deletion_ids: list) -> int:
    """After an erasure commits: the recordings' stored files and the provider's copies."""
    return recordings.delete_scheduled(deletion_ids)
