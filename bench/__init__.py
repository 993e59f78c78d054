"""The benchmarks: `make bench` (or `python -m bench --help`). Nothing here is imported by the application.

One suite per package, each a subcommand of `python -m bench` (bench/__main__.py only dispatches):

- bench.patients (no subcommand): the patients area, through the real HTTP stack beside the same SQL run directly;
- bench.webhooks (`webhooks`): outbound-webhook throughput and latency with real Celery workers and a receiver;
- bench.mcp (`mcp`): the MCP server's overhead over the REST request it runs;
- bench.crm (`crm`): journeys board, Today, calendar and task lists;
- bench.leadcapture (`capture`): sustained signed lead captures per second.

Shared by them: bench.env (database, Redis, Django, daphne and Celery processes), bench.measure (machine, load,
CPU and memory sampling, percentiles), bench.doc (their sections of docs/benchmarks.md), bench.client (one
keep-alive HTTP connection), bench.sqlcapture (a request's SQL captured in-process), bench.settings (the servers'
settings) and bench.paths.
"""
