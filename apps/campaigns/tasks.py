"""Celery entry points of campaigns: thin, and safe to run twice (SKIP LOCKED decides who releases what)."""

import logging

from celery import shared_task
from django.db import transaction
from django.utils.dateparse import parse_datetime

from apps.campaigns import release

logger = logging.getLogger("apps.campaigns")


@shared_task(name="apps.campaigns.tasks.release_campaign")
def release_campaign(campaign_id: str, now: str | None = None) -> int:
    """One release run of a campaign (batches for up to release.RUN_SECONDS); asks for the next run while work that
    may be released now is left. `now` (ISO 8601) fixes the pacing clock: tests drive the task with it."""
    result = release.release_run(campaign_id, now=parse_datetime(now) if now else None)
    if result.more:
        # After the commit of whatever transaction the caller is in (none in a worker: at once).
        transaction.on_commit(lambda: release.start_release(campaign_id, chains=1))
    return result.released


@shared_task(name="apps.campaigns.tasks.sweep")
def sweep() -> int:
    """Beat, every 30 s: start scheduled campaigns whose time has come; restart stopped ones (release.sweep)."""
    return len(release.sweep())
