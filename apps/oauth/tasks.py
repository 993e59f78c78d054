"""Beat work of the OAuth server."""

from celery import shared_task

from apps.oauth import connections, registration


@shared_task(acks_late=True, reject_on_worker_lost=True)
def purge_unapproved_clients() -> int:
    """Dynamically registered clients nobody approved within 24 hours are removed (then invalid_client)."""
    return registration.purge_unapproved()


@shared_task(acks_late=True, reject_on_worker_lost=True)
def purge_spent_codes() -> int:
    """Authorization codes kept for replay detection are deleted once nothing they bought can still work."""
    return connections.purge_spent_codes()
