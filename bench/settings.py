"""Settings for the benchmark server and the in-process SQL capture: the dev settings with a bucket so large that
the per-API-key rate limit never refuses a benchmark request (the bucket is still checked, in Redis, per request)."""

from config.settings.dev import *  # noqa: F403

SVC_API_KEY_BUCKET = (10**9, 10**6)
