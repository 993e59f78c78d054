"""python -m bench (or python -m bench.patients) — the patients area: seed the benchmark database, serve the app with
daphne, measure, write the "Patients area" section of docs/benchmarks.md."""

import argparse
import datetime
import os
import sys
import time

from bench import env
from bench.doc import publish
from bench.measure import logger

DESCRIPTION = """\
Benchmark of the patients area through the real HTTP stack (daphne + config.asgi), each scenario next to the same
SQL run directly. Seeds (or reuses) a separate database, default
postgres://postgres@127.0.0.1:5432/practice_crm_bench (BENCH_DATABASE_URL overrides), with one practice of
--patients patients and --others practices of --other-patients each. Prints the table and writes docs/benchmarks.md.
PostgreSQL and Redis must answer (make bench runs scripts/ensure-services.sh first).

The outbound-webhook benchmark is a separate subcommand: python -m bench webhooks --help. So is the MCP server's
overhead over the REST request it runs: python -m bench mcp --help. So are the CRM reads of issue 8 (journeys board,
Today, calendar, my tasks): python -m bench crm --help. So is the signed lead-capture throughput of issue 9:
python -m bench capture --help. So is the serving throughput with wrk, old stack beside new (issue 16):
python -m bench throughput --help."""


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=DESCRIPTION)
    parser.add_argument(
        "--patients",
        type=int,
        default=_env_int("PATIENTS", 100_000),
        help="patients in the measured practice (env PATIENTS; default 100000)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=_env_int("BENCH_ITERATIONS", 50),
        help="timed requests per scenario (env BENCH_ITERATIONS; default 50)",
    )
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests per scenario first (default 5)")
    parser.add_argument(
        "--budget",
        type=float,
        default=float(os.environ.get("BENCH_BUDGET") or 120),
        help="seconds of timed iterations per scenario before it stops early, after at least 5 "
        "(env BENCH_BUDGET; default 120): slow scenarios at 1,000,000 patients then still finish",
    )
    parser.add_argument("--others", type=int, default=20, help="other practices (default 20)")
    parser.add_argument("--other-patients", type=int, default=10_000, help="patients in each other practice")
    seeding = parser.add_mutually_exclusive_group()
    seeding.add_argument(
        "--skip-seed", action="store_true", help="use the benchmark database as it is (no count check, no migrate)"
    )
    seeding.add_argument("--reseed", action="store_true", help="drop and rebuild the benchmark database")
    parser.add_argument("--seed-only", action="store_true", help="prepare the database, then stop")
    parser.add_argument("--only", default="", help="comma-separated scenario keys to run (default: all)")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.patients < 1 or args.iterations < 2 or args.others < 0 or args.other_patients < 1:
        parser.error("--patients ≥ 1, --iterations ≥ 2, --others ≥ 0, --other-patients ≥ 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    started_at = datetime.datetime.now(datetime.UTC)
    t_start = time.monotonic()

    log = logger("bench", t_start)

    url = env.database_url()
    from bench.patients import prepare

    info = prepare.prepare(
        url,
        patients=args.patients,
        others=args.others,
        other_patients=args.other_patients,
        reseed=args.reseed,
        skip_seed=args.skip_seed,
        log=log,
    )
    if args.seed_only:
        return 0

    from bench import measure, sqlcapture
    from bench.client import Http
    from bench.paths import RESULTS
    from bench.patients import report, scenarios
    from bench.patients.direct import Direct
    from bench.patients.runner import Runner

    env.setup_django(url)
    # Steady state: a vacuumed table (as autovacuum keeps it), so count(*) can be an index-only scan. A transaction
    # left open elsewhere in the cluster holds the visibility map back; the share of all-visible pages is reported.
    # On a connection of its own: ANALYZE loading pg_trgm would reset the replay connection's trigram threshold.
    t0 = time.monotonic()
    with env.connect(url) as maintenance:
        maintenance.execute(
            "VACUUM (ANALYZE) patients_patient, patients_patienttag, patients_activity, patients_searchterm, "
            "patients_patientcounter"
        )
        all_visible = maintenance.execute(
            "SELECT relallvisible::float / greatest(relpages, 1) FROM pg_class WHERE relname = 'patients_patient'"
        ).fetchone()[0]
    log(f"VACUUM (ANALYZE) in {time.monotonic() - t0:.1f}s; {all_visible:.0%} of patients_patient pages all-visible")
    direct = Direct(url, options=sqlcapture.connection_options())
    direct.check_options()
    picked = scenarios.pick_patients(direct.conn, info)
    chosen = scenarios.build(info, picked, now=started_at)
    if args.only:
        keys = {k.strip() for k in args.only.split(",") if k.strip()}
        unknown = keys - {s.key for s in chosen}
        if unknown:
            raise SystemExit(f"bench: unknown scenario(s) {sorted(unknown)}; known: {[s.key for s in chosen]}")
        chosen = [s for s in chosen if s.key in keys]
    machine = measure.machine(direct.conn)

    server = env.Server(url)
    log(f"starting daphne on 127.0.0.1:{server.port} (log: {server.log_path})")
    server.start()
    http = Http("127.0.0.1", server.port, headers={"Authorization": f"Bearer {info.api_key}"})
    runner = Runner(
        http=http,
        server=server,
        capture=sqlcapture.RequestCapture(info.api_key),
        direct=direct,
        info=info,
        iterations=args.iterations,
        warmup=args.warmup,
        budget=args.budget,
        log=log,
    )
    try:
        for scenario in chosen:
            runner.run(scenario)
    finally:
        http.close()
        server.stop()

    direct.check_options()  # still the app's settings after every replay
    rows = [report.summarise(s) for s in chosen]
    searches = [s for s in chosen if s.key.startswith("search_") and s.extra.get("explain")]
    index_used = None
    if searches:
        index_used = all(
            all(index in plan for index in report.SEARCH_INDEXES)
            for s in searches
            for sql, plan in s.extra["explain"]
            if "patients_searchterm" in sql  # the statement finding and counting the matches
        )
    section = report.section(
        patients=info.patients,
        others=info.others,
        other_patients=info.other_patients,
        iterations=args.iterations,
        warmup=args.warmup,
        info=machine,
        rows=rows,
        scenarios=chosen,
        started=started_at,
        seconds=time.monotonic() - t_start,
        search_index_used=index_used,
        reconnects=http.reconnects,
        all_visible=all_visible,
        seed_seconds=info.seed_seconds,
    )
    raw = {
        "started": started_at.isoformat(),
        "machine": machine,
        "rows": rows,
        "scenarios": [
            {
                "key": s.key,
                "path": s.path,
                "statements": s.statements,
                "undo_statements": s.undo_statements,
                "api_ns": s.api_ns,
                "sql_ns": s.sql_ns,
                "explain": s.extra.get("explain"),
            }
            for s in chosen
        ],
    }
    publish(
        section,
        RESULTS / f"run-{info.patients}.json",
        raw,
        title="Patients area",
        write=lambda text: report.write_doc(text, info.patients),
        skipped="--only" if args.only else "--no-doc" if args.no_doc else "",
        log=log,
        contents="raw figures, statements and plans",
    )
    direct.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
