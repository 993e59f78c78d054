"""Beat work of the OAuth server."""

from celery import shared_task

from apps.oauth import registration


@shared_task(acks_late=True, reject_on_worker_lost=True)
def purge_unapproved_clients() -> int:
    """Dynamically registered clients nobody approved within 24 hours are removed (then invalid_client)."""
    return registration.purge_unapproved()
