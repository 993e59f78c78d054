"""Outbound-webhook benchmark (issue 4): `python -m bench webhooks` or `python -m bench.webhooks`.

Queues events for 5 endpoints of one practice against a local receiver process, with 1 and then 2 real Celery
worker processes on a dedicated Redis database, and measures deliveries per second (commit → last receipt) and the
idle commit-to-receipt latency. See run.py for the method and docs/benchmarks.md ("Outbound webhooks") for results.
"""
