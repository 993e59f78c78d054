"""python -m bench crm — the CRM reads of issue 8 at 100,000 patients, through HTTP, each beside its SQL run directly.

Method (docs/benchmarks.md, "CRM", says the same for readers):

1. A database of its own, `practice_crm_bench_crm` (BENCH_CRM_DATABASE_URL overrides): the patients benchmark's
   seed (bench.patients.seed: 100,000 patients in the measured practice, 5 other practices of 10,000) and on top of it
   30,000 journeys, 50,000 tasks and 20,000 appointments in the measured practice, a tenth of that in each other
   one (bench.crm.seed). Reused when already there; the CRM rows are rebuilt when older than 12 hours.
2. daphne serving config.asgi:application (bench.env.Server), one keep-alive connection (bench.client.Http)
   with the API key of the measured practice's owner, who is also the member "mine" and "today" are about.
3. For each request (bench.patients.runner.Runner, as `python -m bench` does): its SQL captured once in-process under
   CaptureQueriesContext (bench.sqlcapture), then timed iterations alternating the HTTP request with a direct replay
   of those statements on psycopg (bench.patients.direct). p50/p95 of both and the ratio of the p50s.
4. EXPLAIN (ANALYZE) of each request's statements on the practice's data, for the execution time of each.
"""

import argparse
import datetime
import json
import re
import sys
import time
import zoneinfo
from urllib.parse import urlencode

from bench.doc import publish
from bench.measure import logger
from bench.patients.scenarios import Scenario

TARGET_MS = 100.0  # issue 8: p50 of the journeys board and GET /today
ITERATIONS, WARMUP, BUDGET = 100, 10, 60.0
KEYS = ("board", "board_mine", "today", "calendar_week", "tasks_mine")  # the scenarios of build(), in order
DATA_TABLES = ("journeys_", "tasks_", "appointments_", "patients_")

DESCRIPTION = __doc__.split("\n\n", 1)[1]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench crm", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--iterations", type=int, default=ITERATIONS, help=f"timed requests per scenario ({ITERATIONS})"
    )
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed requests per scenario first ({WARMUP})")
    parser.add_argument(
        "--budget",
        type=float,
        default=BUDGET,
        help=f"seconds of timed iterations per scenario before it stops early, after at least 5 ({BUDGET:g})",
    )
    parser.add_argument("--reseed", action="store_true", help="drop and rebuild the database (patients and CRM)")
    parser.add_argument("--seed-only", action="store_true", help="prepare the database, then stop")
    parser.add_argument(
        "--only", action="append", choices=KEYS, help="run this scenario only (repeatable); leaves the doc as it is"
    )
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite the CRM section of docs/benchmarks.md")
    parser.add_argument(
        "--max-load", type=float, default=2.0, help="wait before measuring for a 1-minute load below this (2.0)"
    )
    parser.add_argument("--max-wait", type=float, default=120, help="…for at most this many seconds (120)")
    args = parser.parse_args(argv)
    if args.iterations < 5 or args.warmup < 0:
        parser.error("--iterations ≥ 5, --warmup ≥ 0")
    return args


def build(crm, now: datetime.datetime, timezone: str) -> list[Scenario]:
    """The requests measured. The calendar week is the practice's current one (Monday to Monday, local time)."""
    local = now.astimezone(zoneinfo.ZoneInfo(timezone))
    monday = datetime.datetime.combine(
        local.date() - datetime.timedelta(days=local.weekday()), datetime.time.min, tzinfo=local.tzinfo
    )
    week = urlencode({"start": monday.isoformat(), "end": (monday + datetime.timedelta(days=7)).isoformat()})
    return [
        Scenario(
            "board", "Journeys board (default pipeline, 20 per column)", "GET", "/journeys/board", target_ms=TARGET_MS
        ),
        Scenario(
            "board_mine",
            "Journeys board filtered by assignee (the owner)",
            "GET",
            f"/journeys/board?assigneeId={crm.owner_id}",
            target_ms=TARGET_MS,
        ),
        Scenario("today", "Today (the owner's day)", "GET", "/today", target_ms=TARGET_MS),
        Scenario("calendar_week", "Calendar, this week (all practitioners)", "GET", f"/calendar?{week}"),
        Scenario("tasks_mine", "Tasks, view=mine (first page of 25)", "GET", "/tasks?view=mine"),
    ]


def describe(key: str, body: bytes) -> str:
    """What the response held, for the table."""
    payload = json.loads(body)
    if key.startswith("board"):
        columns = payload["columns"]
        shown = sum(len(c["items"]) for c in columns)
        return f"{sum(c['count'] for c in columns):,} journeys in {len(columns)} columns, {shown} shown"
    if key == "today":
        parts = [f"{name} {payload[name]['total']:,}" for name in ("tasks", "appointments", "newLeads", "journeys")]
        return ", ".join(parts) + f" (overdue tasks {payload['tasks']['overdueTotal']:,})"
    if key == "calendar_week":
        return f"{len(payload['items']):,} appointments"
    return f"{payload['total']:,} tasks, {len(payload['items'])} shown"


def is_data(statement: str) -> bool:
    return any(f'"{table}' in statement for table in DATA_TABLES)


def outline(statement: str, limit: int | None = 300) -> str:
    """A statement shortened for reading: its outermost select list and the ids elided, identifiers unquoted, at most
    `limit` characters."""
    depth, cut = 0, None
    for match in re.finditer(r"[()]|\sFROM\s", statement):
        token = match.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0:
            cut = match.start()
            break
    text = statement if cut is None else "SELECT …" + statement[cut:]
    text = re.sub(r'"(\w+)"', r"\1", text)  # identifiers unquoted
    text = re.sub(r"'[0-9a-f-]{32,36}'::uuid", "'…'", text)  # the practice's and member's ids
    text = re.sub(r"\s+", " ", text)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def statement_times(direct, scenario: Scenario) -> list[dict]:
    """EXPLAIN (ANALYZE, BUFFERS) of the request's data statements: execution time and plan of each."""
    found = []
    for statement in scenario.statements:
        if not is_data(statement) or not statement.lstrip().upper().startswith("SELECT"):
            continue
        plan = direct.explain(statement)
        match = re.search(r"Execution Time: ([\d.]+) ms", plan)
        found.append(
            {
                "sql": outline(statement),
                "ms": float(match.group(1)) if match else None,
                "plan": plan,
                "full": outline(statement, limit=None),
            }
        )
    return found


def main(argv=None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.UTC)
    t_start = time.monotonic()

    log = logger("bench crm", t_start, width=6)

    from bench import env, sqlcapture
    from bench.crm import doc
    from bench.crm import seed as crm_seed
    from bench.measure import machine as machine_info
    from bench.measure import uptime, wait_quiet
    from bench.paths import RESULTS
    from bench.patients import report

    url = crm_seed.database_url()
    env.setup_django(url)
    info = crm_seed.prepare_patients(url, reseed=args.reseed, log=log)
    crm = crm_seed.prepare_crm(url, info, reseed=args.reseed, log=log)
    seed_seconds = time.monotonic() - t_start
    if args.seed_only:
        return 0

    from bench.client import Http
    from bench.patients.direct import Direct
    from bench.patients.runner import Runner

    # Steady state, as `python -m bench` has it: the tables read vacuumed and analysed (autovacuum would keep them so).
    with env.connect(url) as maintenance:
        maintenance.execute("VACUUM (ANALYZE) " + ", ".join(crm_seed.CRM_TABLES) + ", patients_patient")
    direct = Direct(url, options=sqlcapture.connection_options())
    direct.check_options()
    machine = machine_info(direct.conn)
    chosen = [s for s in build(crm, started, crm_seed.TIMEZONE) if not args.only or s.key in args.only]

    before_uptime = uptime()
    log(before_uptime)
    server = env.Server(url)
    log(f"starting daphne on 127.0.0.1:{server.port} (log: {server.log_path})")
    server.start()
    http = Http("127.0.0.1", server.port, headers={"Authorization": f"Bearer {info.api_key}"})
    requests = sqlcapture.RequestCapture(info.api_key)
    runner = Runner(
        http=http,
        server=server,
        capture=requests,
        direct=direct,
        info=info,
        iterations=args.iterations,
        warmup=args.warmup,
        budget=args.budget,
        log=log,
    )
    try:
        load_before = wait_quiet(args.max_load, args.max_wait, log)
        for scenario in chosen:
            runner.run(scenario)
            body = requests.call("GET", scenario.path)
            scenario.extra["response"] = describe(scenario.key, body)
            scenario.extra["bytes"] = len(body)
            scenario.extra["statement_times"] = statement_times(direct, scenario)
            log(f"{scenario.key}: {scenario.extra['response']}")
    finally:
        http.close()
        server.stop()
    direct.check_options()

    rows = []
    for scenario in chosen:
        row = report.summarise(scenario)
        row.update(
            path=scenario.path,
            data_statements=sum(1 for s in scenario.statements if is_data(s)),
            response=scenario.extra["response"],
            bytes=scenario.extra["bytes"],
            statement_times=[{"sql": t["sql"], "ms": t["ms"]} for t in scenario.extra["statement_times"]],
        )
        timed = [t for t in scenario.extra["statement_times"] if t["ms"] is not None]
        if scenario.target_ms is not None and timed:
            row["slowest"] = max(timed, key=lambda t: t["ms"])
        rows.append(row)
    with env.connect(url) as conn:
        tables = doc.table_rows(conn)
    figures = {
        "started": started.isoformat(),
        "seconds": time.monotonic() - t_start,
        "seed_seconds": seed_seconds,
        "crm_seeded": crm.seed_time.isoformat(),
        "uptime": before_uptime,
        "load_before": load_before,
        "machine": machine,
        "patients": info.patients,
        "others": info.others,
        "other_patients": info.other_patients,
        "counts": crm.counts,
        "tables": tables,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "reconnects": http.reconnects,
        "rows": rows,
    }
    raw = {
        **figures,
        "scenarios": [
            {"key": s.key, "path": s.path, "statements": s.statements, "explain": s.extra["statement_times"]}
            for s in chosen
        ],
    }
    publish(
        doc.section(figures),
        RESULTS / "crm.json",
        raw,
        title="CRM",
        write=doc.write,
        skipped="--only" if args.only else "--no-doc" if args.no_doc else "",
        log=log,
        contents="raw figures, statements and plans",
    )
    direct.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
