"""Benchmark of the patients area: `make bench` (or `python -m bench --help`).

Seeds a separate database (practice_crm_bench) with one large practice and 20 smaller ones, serves the real HTTP
stack (daphne + config.asgi) and measures each scenario through HTTP next to the same SQL run directly.
Writes the "Patients area" section of docs/benchmarks.md. Its seed, runner and direct-SQL replay serve the other
suites too (bench.crm, bench.mcp, bench.leadcapture).
"""
