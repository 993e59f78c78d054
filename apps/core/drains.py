"""Drains: stored work (captured submissions, inbound callbacks) processed by one worker per owner at a time.

Whoever stores work asks for a drain; a Redis flag (SET NX with an expiry) makes a burst of stores cost one Celery
message, not one each, and keeps a single worker going through the owner's backlog oldest first. The flag is
released before a last look, so work stored while it was held is never left waiting for the sweep; a worker that
dies leaves the flag to expire. A broker or Redis outage never fails the store: the areas' sweeps take over."""

import logging
from collections.abc import Callable

from celery.exceptions import SoftTimeLimitExceeded
from django.db.models import QuerySet
from django_redis import get_redis_connection

logger = logging.getLogger("apps.core.drains")

DRAIN_FLAG_SECONDS = 30


def request_drain(flag: str, task, *args) -> bool:
    """Publish `task(*args)` unless a drain under `flag` is already asked for or running. True when published."""
    try:
        if get_redis_connection("default").set(flag, "1", nx=True, ex=DRAIN_FLAG_SECONDS):
            task.delay(*args)
            return True
    except Exception:
        # Stored is stored: the sender has been told so, and the sweep processes it while this is looked at.
        logger.warning("drain %s not requested (%s); left to the sweep", flag.rsplit(":", 1)[0], "broker or Redis")
    return False


def run_drain(
    flag: str,
    waiting: Callable[[], QuerySet],
    process: Callable[[object], bool] | None = None,
    *,
    process_many: Callable[[list], int] | None = None,
    together: int = 1,
    batch: int = 100,
) -> int:
    """Process what `waiting()` lists (oldest first by created_at, id), each at most once per drain (a failure waits
    for the sweep, which counts attempts), until nothing is left: one at a time with `process(id) -> done?`, or
    `together` at a time with `process_many(ids) -> how many done` (one transaction for several, where the area
    makes that safe). Returns how many were done."""
    redis = get_redis_connection("default")
    seen: set = set()
    done = 0
    while True:
        ids = [i for i in waiting().order_by("created_at", "id").values_list("id", flat=True)[: batch + len(seen)]]
        ids = [i for i in ids if i not in seen][:batch]
        if not ids:
            redis.delete(flag)
            if not waiting().exclude(id__in=seen).exists() or not redis.set(flag, "1", nx=True, ex=DRAIN_FLAG_SECONDS):
                return done
            continue
        step = together if process_many is not None else 1
        for start in range(0, len(ids), step):
            group = ids[start : start + step]
            seen.update(group)
            try:
                done += process_many(group) if process_many is not None else int(bool(process(group[0])))
            except SoftTimeLimitExceeded:
                raise  # the task's time is up: stop here (the flag expires, the sweep takes the rest)
            except Exception as exc:
                # The type only: a database error's detail can quote the values a patient sent.
                logger.warning(
                    "%s: %d not processed (%s); the sweep retries them", flag, len(group), type(exc).__name__
                )
        redis.expire(flag, DRAIN_FLAG_SECONDS)
