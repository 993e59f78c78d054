"""Settings of the throughput benchmark's servers and of its in-process SQL capture: bench.settings (the per-API-key
bucket so large it never refuses) with the per-form capture bucket raised the same way, so that thousands of signed
captures a second to one form are never refused. Both buckets are still checked, in Redis, on every request."""

from bench.settings import *  # noqa: F403

SVC_CAPTURE_FORM_BUCKET = (10**9, 10**6)
