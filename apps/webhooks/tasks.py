"""Celery entry points: thin, idempotent, safe to run twice (the lease and SKIP LOCKED decide who works)."""

from celery import shared_task

from apps.webhooks import delivery


@shared_task(name="apps.webhooks.tasks.fan_out")
def fan_out() -> int:
    """Right after a commit that recorded events: deliveries for them, then hand each endpoint to a worker."""
    endpoints: set = set()
    batch = 1000
    while True:
        processed, touched = delivery.fan_out(limit=batch)
        endpoints |= touched
        if processed < batch:
            break
    for endpoint_id in endpoints:
        drain.delay(str(endpoint_id))
    return len(endpoints)


@shared_task(name="apps.webhooks.tasks.drain")
def drain(endpoint_id: str) -> int:
    result = delivery.drain_endpoint(endpoint_id)
    if result.more:
        drain.delay(endpoint_id)
    return result.sent


@shared_task(name="apps.webhooks.tasks.sweep")
def sweep() -> int:
    """Every minute (beat): the recovery path. Fans out anything a lost on-commit hook missed (a commit that
    succeeded while the broker was down) and republishes endpoints with due or lost-lease deliveries."""
    fan_out()
    delivery.expire_exhausted()
    endpoints = delivery.due_endpoint_ids()
    for endpoint_id in endpoints:
        drain.delay(str(endpoint_id))
    return len(endpoints)


@shared_task(name="apps.webhooks.tasks.purge_old_deliveries")
def purge_old_deliveries() -> int:
    return delivery.purge_finished()


@shared_task(name="apps.webhooks.tasks.archive_lost_subscriptions")
def archive_lost_subscriptions() -> int:
    from apps.webhooks.services import archive_endpoints_of_lost_connections

    return archive_endpoints_of_lost_connections()
