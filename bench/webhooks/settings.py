"""Settings for every process of the webhook benchmark (driver, Celery workers): the dev settings, DEBUG on with
loopback receivers allowed (sender.loopback_allowed needs both), real broker publishing (not eager), the benchmark
database (DATABASE_URL, set by bench.webhooks.run) and a dedicated Redis database for broker, cache and channels so
that nothing else running on the machine sees the benchmark's tasks."""

import os

from config.settings.dev import *  # noqa: F403
from config.settings.dev import CACHES, CHANNEL_LAYERS

DEBUG = True
SVC_WEBHOOKS_ALLOW_LOOPBACK = True

BENCH_REDIS_URL = os.environ.get("BENCH_WEBHOOKS_REDIS_URL") or "redis://127.0.0.1:6379/13"
REDIS_URL = BENCH_REDIS_URL
CELERY_BROKER_URL = BENCH_REDIS_URL
CELERY_TASK_ALWAYS_EAGER = False
CACHES["default"]["LOCATION"] = BENCH_REDIS_URL
CHANNEL_LAYERS["default"]["CONFIG"]["hosts"] = [BENCH_REDIS_URL]

# The workers log warnings and errors only (one INFO line per task would be noise at 50,000 deliveries).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
