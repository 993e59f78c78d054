"""python -m bench reports — the seven reports of issue 24 at 1,000,000 patients (target: p50 < 300 ms each).

1. A database of its own, `practice_crm_bench_reports` (BENCH_REPORTS_DATABASE_URL overrides): the patients
   benchmark's seed (bench.patients.seed: 1,000,000 patients in the measured practice, one other practice of
   10,000) and the rows the reports read on top of it (bench.reports.seed: journeys, appointments over ~2 years,
   first-contact calls and messages, conversations and messages, weekly campaigns and their recipients, deposits,
   reviews). Reused when already there; the report rows are rebuilt when older than 12 hours.
2. For each report, with the default range (the 30 days ending today, practice time) and a 365-day range:
   - service: apps.reports.selectors.report_answer(refresh=True) in this process — the report computed by its
     source areas' aggregate reads, shaped, and written to the Redis cache, as GET /reports/{key}?refresh=true
     does below the view; p50/p95 over the iterations;
   - direct: the SQL statements that computation issued (captured once under CaptureQueriesContext), replayed on a
     raw psycopg connection opened like Django's, fetching every row; p50/p95;
   - EXPLAIN (ANALYZE, BUFFERS) of each statement: execution time summed, and every Seq Scan named (a seq scan of
     the patients table, or of any large table, fails the check).
3. The CSV export of lead-sources over 365 days through the real view in-process (Django test client,
   GET /reports/lead-sources/export?refresh=true with the practice's API key): p50/p95.
4. wrk through the real server (python -m config.serve, bench.env.Server) against GET /reports/lead-sources with
   the API key: cached (the default) and refresh=true, requests/s and latency.
Figures go to bench/results/reports.json, are printed as a table and written to the "## Benchmark" section of
docs/reports.md (--no-doc leaves it)."""

import argparse
import datetime
import json
import os
import shutil
import time

from bench import env
from bench.measure import logger, machine, quantile, uptime, wait_quiet
from bench.paths import RESULTS, ROOT
from bench.reports import seed as reports_seed

TARGET_MS = 300.0
ITERATIONS, WARMUP, BUDGET = 20, 2, 40.0
KEYS = ("lead-sources", "pipeline", "speed-to-lead", "appointments", "campaigns", "deposits", "reviews")
RANGES = {"30d": 30, "365d": 365}
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/9"
PATIENTS_TABLE = "patients_patient"  # a seq scan of it fails the plan check; others are reported as found
LARGE_TABLES = (
    "patients_patient",
    "patients_activity",
    "journeys_journey",
    "appointments_appointment",
    "conversations_message",
    "conversations_conversation",
    "campaigns_campaignrecipient",
    "deposits_depositrequest",
    "reputation_review",
)
DOC_PATH = ROOT / "docs" / "reports.md"
SECTION = "## Benchmark"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench reports",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help=f"timed runs per report ({ITERATIONS})")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed runs first ({WARMUP})")
    parser.add_argument("--budget", type=float, default=BUDGET, help=f"seconds per measurement, ≥5 runs ({BUDGET:g})")
    parser.add_argument("--reseed", action="store_true", help="drop and rebuild the database")
    parser.add_argument("--reseed-reports", action="store_true", help="rebuild the report rows only")
    parser.add_argument("--seed-only", action="store_true", help="prepare the database, then stop")
    parser.add_argument("--only", action="append", choices=KEYS, help="this report only (repeatable)")
    parser.add_argument("--wrk-seconds", type=float, default=15.0, help="seconds of each wrk run (15; 0: no wrk)")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite the Benchmark section of docs/reports.md")
    parser.add_argument("--max-load", type=float, default=2.5, help="wait for a 1-minute load below this (2.5)")
    parser.add_argument("--max-wait", type=float, default=60, help="…for at most this many seconds (60)")
    return parser.parse_args(argv)


def stats(samples_ms: list[float]) -> dict:
    return {
        "n": len(samples_ms),
        "p50_ms": round(quantile(samples_ms, 50), 1),
        "p95_ms": round(quantile(samples_ms, 95), 1),
    }


def timed(fn, *, iterations: int, warmup: int, budget: float) -> dict:
    for _ in range(warmup):
        fn()
    samples = []
    deadline = time.monotonic() + budget
    while len(samples) < iterations and (len(samples) < 5 or time.monotonic() < deadline):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return stats(samples)


def _seq_scans(plan: dict, found: list[str]) -> None:
    if plan.get("Node Type") == "Seq Scan":
        found.append(plan.get("Relation Name", "?"))
    for child in plan.get("Plans", []):
        _seq_scans(child, found)


def explain(conn, statements: list[str]) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of each SELECT: execution ms summed, seq scans, the plans' text."""
    total, scans, texts = 0.0, [], []
    for statement in statements:
        if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement).fetchone()[0][0]
        total += plan["Execution Time"] + plan.get("Planning Time", 0.0)
        _seq_scans(plan["Plan"], scans)
        text = "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement).fetchall())
        texts.append(statement + "\n" + text)
    return {"explain_ms": round(total, 1), "seq_scans": sorted(set(scans)), "plans": texts}


def replay(conn, statements: list[str]) -> None:
    for statement in statements:
        with conn.cursor() as cur:
            cur.execute(statement)
            if cur.description is not None:
                cur.fetchall()


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.monotonic()
    log = logger("reports", t_start)
    url = reports_seed.database_url()
    redis_url = env.flushable_redis_url("BENCH_REPORTS_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    info = reports_seed.prepare_patients(url, reseed=args.reseed, log=log)
    env.setup_django(url)
    rows = reports_seed.prepare_reports(url, info, reseed=args.reseed or args.reseed_reports, log=log)
    if args.seed_only:
        return 0
    env.flush_redis(redis_url)
    return measure(url, info, rows, args, log)


def measure(url, info, seeded, args, log) -> int:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from apps.accounts.models import Organization
    from apps.reports import params as p
    from apps.reports import selectors
    from bench.sqlcapture import connection_options

    organization = Organization.objects.get(id=info.organization_id)
    now = timezone.now()
    today = p.practice_today(organization, now)
    queries = {
        "30d": {},
        "365d": {"from": (today - datetime.timedelta(days=364)).isoformat(), "to": today.isoformat()},
    }
    raw = env.connect(url, options=connection_options())
    wait_quiet(args.max_load, args.max_wait, log)
    results, plans = [], []
    for key in args.only or KEYS:
        report = selectors.report_get(key)
        for label, query in queries.items():
            found, _ = p.parse_query(organization=organization, filters=report.filters, query=query, now=now)

            def service(found=found, report=report):
                selectors.report_answer(organization=organization, report=report, params=found, refresh=True)

            service()
            with CaptureQueriesContext(connection) as ctx:
                answer = selectors.report_compute(organization=organization, report=report, params=found)
            statements = [q["sql"] for q in ctx.captured_queries]
            timing = dict(iterations=args.iterations, warmup=args.warmup, budget=args.budget)
            svc = timed(service, **timing)
            direct = timed(lambda s=statements: replay(raw, s), **timing)
            ex = explain(raw, statements)
            big = [t for t in ex["seq_scans"] if t == PATIENTS_TABLE]
            row = {
                "report": key,
                "range": label,
                "from": found.range.date_from.isoformat(),
                "to": found.range.date_to.isoformat(),
                "statements": len(statements),
                "rows": len(answer["rows"]),
                "service": svc,
                "direct": direct,
                "explain_ms": ex["explain_ms"],
                "seq_scans": ex["seq_scans"],
                "plan_ok": not big,
                "met": svc["p50_ms"] < TARGET_MS,
            }
            results.append(row)
            plans.append(f"### {key} {label}\n\n" + "\n\n".join(ex["plans"]))
            log(
                f"{key:14} {label:5} service p50 {svc['p50_ms']:7.1f} p95 {svc['p95_ms']:7.1f} | direct p50 "
                f"{direct['p50_ms']:7.1f} p95 {direct['p95_ms']:7.1f} | explain {ex['explain_ms']:7.1f} ms | "
                f"{len(statements)} stmts | seq scans {ex['seq_scans'] or '-'}"
            )

    # --- the CSV export, through the real view in-process ---------------------------------------------------------
    client = Client(headers={"authorization": f"Bearer {info.api_key}"})
    path = "/reports/lead-sources/export?" + "&".join(
        f"{k}={v}" for k, v in {**queries["365d"], "refresh": "true"}.items()
    )

    def export():
        response = client.get(path)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if response.status_code != 200:
            raise SystemExit(f"bench reports: {path} answered {response.status_code}: {body[:300]!r}")
        return body

    body = export()
    csv_timing = timed(export, iterations=args.iterations, warmup=args.warmup, budget=args.budget)
    csv_row = {"path": path, "bytes": len(body), "lines": body.count(b"\n"), **csv_timing}
    log(f"CSV export lead-sources 365d: p50 {csv_timing['p50_ms']:.1f} p95 {csv_timing['p95_ms']:.1f} ms")
    raw.close()

    wrk_rows = run_wrk(url, info, args, log) if args.wrk_seconds > 0 else []

    with env.connect(url) as conn:
        described = machine(conn)
    output = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": described,
        "uptime": uptime(),
        "seed": {
            "patients": info.patients,
            "others": info.others,
            "other_patients": info.other_patients,
            "patients_seed_seconds": info.seed_seconds,
            "report_rows": seeded["counts"],
            "report_rows_seed_seconds": seeded["seed_seconds"],
        },
        "target_ms": TARGET_MS,
        "reports": results,
        "csv_export": csv_row,
        "wrk": wrk_rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "reports.json").write_text(json.dumps(output, indent=2, default=str) + "\n")
    (RESULTS / "reports-plans.md").write_text("\n\n".join(plans) + "\n")
    table = render(output)
    print(table)
    if not args.no_doc and not args.only:
        write_doc(table)
        log(f"wrote the Benchmark section of {DOC_PATH.relative_to(ROOT)}")
    missed = [f"{r['report']} {r['range']}" for r in results if not r["met"] or not r["plan_ok"]]
    if missed:
        log(f"missed the target or the plan check: {', '.join(missed)}")
    return 0


def run_wrk(url, info, args, log) -> list[dict]:
    from bench.throughput import wrk

    if shutil.which("wrk") is None:
        log("wrk is not installed: skipping the server run")
        return []
    server = env.Server(url)
    server.start()
    found = []
    try:
        for label, path in (
            ("cached", "/reports/lead-sources"),
            ("refresh=true", "/reports/lead-sources?refresh=true"),
        ):
            request = wrk.raw_request(
                "GET",
                path,
                host=f"127.0.0.1:{server.port}",
                headers={"Authorization": f"Bearer {info.api_key}", "Accept": "application/json"},
            )
            file = wrk.write_requests(RESULTS / "reports-wrk-requests.txt", [request])
            wrk.run(f"http://127.0.0.1:{server.port}", file, threads=1, connections=2, seconds=3)  # warm
            result, _ = wrk.run(
                f"http://127.0.0.1:{server.port}", file, threads=2, connections=8, seconds=args.wrk_seconds
            )
            row = {
                "request": f"GET {path}",
                "threads": 2,
                "connections": 8,
                "seconds": result.seconds,
                "requests": result.requests,
                "rate": round(result.rate, 1),
                "p50_ms": round(result.p50_ms, 1),
                "p99_ms": round(result.p99_ms, 1),
                "problems": result.problems(),
            }
            found.append(row)
            log(f"wrk {label}: {row['rate']} req/s, p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms {row['problems']}")
    finally:
        server.stop()
    return found


def render(output: dict) -> str:
    seed = output["seed"]
    counts = seed["report_rows"]
    lines = [
        f"- **Date**: {output['date']}; {output['machine']['code']}",
        f"- **Machine**: {output['machine']['cpu']}, {output['machine']['memory']}; {output['machine']['postgres']}; "
        f"{output['uptime']}",
        f"- **Data**: {seed['patients']:,} patients in the measured practice + {seed['others']} practice of "
        f"{seed['other_patients']:,}; in the measured practice "
        + ", ".join(f"{n:,} {name}" for name, n in counts.items())
        + f" (patients seeded in {seed['patients_seed_seconds'] / 60:.1f} min, report rows in "
        f"{seed['report_rows_seed_seconds'] / 60:.1f} min)",
        f"- **Target**: p50 < {output['target_ms']:.0f} ms per report (service, cache bypassed).",
        "",
        "| Report | Range | Service p50 | Service p95 | Direct SQL p50 | Direct SQL p95 | EXPLAIN ANALYZE | Statements "
        "| Seq scans | Target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in output["reports"]:
        lines.append(
            f"| {r['report']} | {r['range']} | {r['service']['p50_ms']:.1f} ms | {r['service']['p95_ms']:.1f} ms "
            f"| {r['direct']['p50_ms']:.1f} ms | {r['direct']['p95_ms']:.1f} ms | {r['explain_ms']:.1f} ms "
            f"| {r['statements']} | {', '.join(r['seq_scans']) or '—'} "
            f"| {'met' if r['met'] and r['plan_ok'] else 'MISSED'} |"
        )
    c = output["csv_export"]
    lines += [
        "",
        f"CSV export (GET /reports/lead-sources/export, 365 days, refresh=true, in-process view): p50 "
        f"{c['p50_ms']:.1f} ms, p95 {c['p95_ms']:.1f} ms ({c['lines']} lines, {c['bytes']:,} bytes, n={c['n']}).",
    ]
    if output["wrk"]:
        lines += [
            "",
            "| wrk (real server, 2 threads, 8 connections) | req/s | p50 | p99 | problems |",
            "|---|---:|---:|---:|---|",
        ]
        for w in output["wrk"]:
            lines.append(
                f"| {w['request']} | {w['rate']:.1f} | {w['p50_ms']:.1f} ms | {w['p99_ms']:.1f} ms "
                f"| {'; '.join(w['problems']) or '—'} |"
            )
    return "\n".join(lines)


def write_doc(table: str) -> None:
    text = DOC_PATH.read_text()
    intro = (
        "`python -m bench reports` (bench/reports/run.py; seed bench/reports/seed.py). Service: "
        "`selectors.report_answer(refresh=True)` in-process (the source areas' aggregates, shaping and the cache "
        "write); "
        "direct SQL: the statements it issued, captured and replayed on a raw psycopg connection; EXPLAIN ANALYZE: "
        "their execution + planning time summed; seq scans: every Seq Scan node of their plans (the small lookup "
        "tables — memberships, lead sources, practitioners, pipelines — are read whole by design). Full plans: "
        "bench/results/reports-plans.md.\n\n"
    )
    section = f"{SECTION}\n\n{intro}{table}\n"
    i = text.find(SECTION)
    if i == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        j = text.find("\n## ", i + len(SECTION))
        text = text[:i] + section + (text[j:] if j != -1 else "")
    DOC_PATH.write_text(text)


if __name__ == "__main__":
    import sys

    sys.exit(main())
