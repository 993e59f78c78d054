"""Celery entry points of reputation: thin and idempotent."""

import logging

from celery import shared_task

from apps.reputation import automatic, services

logger = logging.getLogger("apps.reputation")

RETRY_DELAYS = (60, 300, 900, 1800)  # between reply attempts while the platform is unavailable


@shared_task(name="apps.reputation.tasks.sync_source")
def sync_source(source_id: str) -> dict:
    try:
        result = services.source_sync(source_id=source_id)
    except Exception as exc:  # recorded on the source (last_sync_error); the next beat run tries again
        logger.warning("review sync of a source failed (%s)", type(exc).__name__)
        return {"ok": False}
    return {"ok": True, "emitted": result.emitted}


@shared_task(name="apps.reputation.tasks.sync_all")
def sync_all() -> int:
    """Every 15 minutes (beat): each active source's sync queued on its own; pending replies whose task was lost
    are queued again."""
    sources = services.sources_due()
    for source_id in sources:
        sync_source.delay(str(source_id))
    for review_id in services.replies_due():
        publish_reply.delay(str(review_id))
    return len(sources)


@shared_task(name="apps.reputation.tasks.publish_reply", bind=True)
def publish_reply(self, review_id: str) -> str:
    outcome = services.reply_publish(review_id=review_id)
    if outcome == services.RETRY and not self.request.called_directly:
        delay = RETRY_DELAYS[min(self.request.retries, len(RETRY_DELAYS) - 1)]
        raise self.retry(countdown=delay, max_retries=services.MAX_REPLY_ATTEMPTS)
    return outcome


@shared_task(name="apps.reputation.tasks.auto_request")
def auto_request(organization_id: str, appointment_id: str) -> str:
    """The automatic review request of a completed appointment (queued with the practice's delay as countdown).
    Re-reads the setting, the appointment and the patient; idempotent."""
    return automatic.auto_request_send(organization_id=organization_id, appointment_id=appointment_id)
