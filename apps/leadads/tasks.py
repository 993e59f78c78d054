"""Celery entry points of native lead ads: thin and idempotent (an intake is claimed under a row lock, one attempt a
run; a submission is mapped once, under its own lock)."""

import logging

from celery import shared_task

from apps.leadads import intake, peer
from apps.leadads.models import DataDeletionRequest

logger = logging.getLogger("apps.leadads")


@shared_task(name="apps.leadads.tasks.process_intake")
def process_intake(intake_id: str) -> str:
    """One processing attempt of a saved body (right after receipt; the sweep runs the next attempts)."""
    return intake.process(intake_id=intake_id)


@shared_task(name="apps.leadads.tasks.sweep")
def sweep() -> int:
    """Every minute (beat): bodies whose next attempt is due, or whose first never ran; hourly work piggybacks
    cheaply (raw bodies of settled intakes erased after a week, rows after 30 days)."""
    due = intake.due()
    for intake_id in due:
        process_intake.delay(str(intake_id))
    intake.purge()
    return len(due)


@shared_task(name="apps.leadads.tasks.forward_form")
def forward_form(path: str, form: str, request_id: str | None = None) -> bool:
    """A deauthorize or data-deletion form posted on to the peer region (best effort, recorded on the request)."""
    try:
        peer.forward_form(path=path, form=form.encode())
        outcome = "forwarded"
    except peer.ForwardFailed as failure:
        logger.warning("peer region did not take a %s form (%s)", path.rsplit("/", 1)[-1], failure)
        outcome = "failed"
    if request_id:
        DataDeletionRequest.objects.filter(id=request_id).update(peer_status=outcome)
    return outcome == "forwarded"
