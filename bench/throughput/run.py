"""python -m bench throughput — requests per second and latency through the real server, driven by wrk (issue 16).

Method (docs/benchmarks.md, "Serving throughput", says the same for readers):

1. Database `practice_crm_bench_throughput` (BENCH_THROUGHPUT_DATABASE_URL overrides): the patients benchmark's seed
   (bench.patients.seed: --patients in the measured practice, env PATIENTS, default 100,000; its owner and API key
   made by `manage.py create_practice --api-key`; --others practices of --other-patients) with the CRM benchmark's
   journeys, tasks and appointments on top (bench.crm.seed, in proportion to the patients). Reused when it already
   holds that seed. Redis database 14 (BENCH_THROUGHPUT_REDIS_URL) flushed and used by the servers.
2. The servers run settings bench.throughput.settings (DEBUG=0): the per-API-key and per-form capture buckets are
   raised so that no request is refused, and still checked in Redis on every request.
3. One signed capture form made through the settings API (in-process, the owner's API key), its capture URL and
   signing secret kept. No Celery worker runs: a capture stores its submission and queues the practice's drain,
   which stays queued (the capture benchmark, `python -m bench capture`, measures the processing).
4. Direct SQL: each request once in-process (Django's test client, same settings) under CaptureQueriesContext,
   then its statements replayed on psycopg (a connection opened like Django's) --sql-iterations times; p50/p95.
   The capture's request statements (form lookup, submission INSERT) are replayed with fresh ids and committed
   (bench.leadcapture.direct).
5. For each stack (--stacks; `old`: daphne alone, `python -m config.server`; `new`: `python -m config.serve`) started
   as its own process group: for each scenario a warm-up run (wrk -t2 -c8, --warmup seconds), then
   `wrk -t1 -c1` and `wrk -t2 -c8`, --duration seconds each, --latency, through bench/throughput/requests.lua
   (the Authorization header, the varying paths, every answer counted by status). Signed captures are
   pre-generated (distinct delivery ids, signed, timestamped just before the run), never sent twice; afterwards
   the submissions stored under the run's delivery ids are counted: every 2xx must have its row.
6. A scenario's check fails on any answer other than the expected status, any socket error, or (captures) a
   stored count that does not match the 2xx answers.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

from bench import env
from bench.doc import publish
from bench.measure import logger

DEFAULT_URL = env.DEFAULT_URL + "_throughput"  # practice_crm_bench_throughput
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
SETTINGS_MODULE = "bench.throughput.settings"
CONNECTIONS = ((1, 1), (2, 8))  # (wrk threads, connections)
DESCRIPTION = __doc__.split("\n\n", 1)[1]


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def parse_args(argv=None):
    from bench.throughput import servers

    parser = argparse.ArgumentParser(
        prog="python -m bench throughput",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--patients",
        type=int,
        default=_env_int("PATIENTS", 100_000),
        help="patients in the measured practice (env PATIENTS; default 100000)",
    )
    parser.add_argument("--others", type=int, default=5, help="other practices (5)")
    parser.add_argument("--other-patients", type=int, default=10_000, help="patients in each other practice (10000)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of each measured wrk run (10)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of the warm-up run per scenario (3)")
    parser.add_argument("--stacks", default=",".join(servers.STACKS), help="stacks to measure, in order (old,new)")
    keys = ["trivial", "me", "patients", "patient", "board", "today", "capture"]
    parser.add_argument("--only", default="", help=f"comma-separated scenarios (default all: {','.join(keys)})")
    parser.add_argument("--sql-iterations", type=int, default=200, help="direct-SQL replays per scenario (200)")
    parser.add_argument(
        "--capture-rate",
        type=int,
        default=3000,
        help="signed captures pre-generated per second of a run (3000): more than the server can accept, since a "
        "capture is never sent twice",
    )
    parser.add_argument("--reseed", action="store_true", help="drop and rebuild the database")
    parser.add_argument("--seed-only", action="store_true", help="prepare the database, then stop")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite the section of docs/benchmarks.md")
    parser.add_argument(
        "--max-load", type=float, default=2.0, help="before each stack, wait for a 1-minute load below this (2.0)"
    )
    parser.add_argument("--max-wait", type=float, default=60, help="…for at most this many seconds (60)")
    args = parser.parse_args(argv)
    args.stack_list = [s.strip() for s in args.stacks.split(",") if s.strip()]
    if not args.stack_list or set(args.stack_list) - set(servers.STACKS):
        parser.error(f"--stacks: a comma-separated list of {servers.STACKS}")
    args.keys = [k.strip() for k in args.only.split(",") if k.strip()] or keys
    if set(args.keys) - set(keys):
        parser.error(f"--only: unknown scenario(s) {sorted(set(args.keys) - set(keys))}; known: {keys}")
    if args.duration < 1 or args.warmup < 0 or args.sql_iterations < 10 or args.patients < 1:
        parser.error("--duration ≥ 1, --warmup ≥ 0, --sql-iterations ≥ 10, --patients ≥ 1")
    return args


def database_url() -> str:
    return env.database_url("BENCH_THROUGHPUT_DATABASE_URL", DEFAULT_URL)


def redis_url() -> str:
    return env.flushable_redis_url("BENCH_THROUGHPUT_REDIS_URL", DEFAULT_REDIS_URL)


def server_environ(url: str) -> dict[str, str]:
    environ = env.server_env(url)
    environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    return environ


def _ms(ns: list[int]) -> dict:
    values = [n / 1e6 for n in ns]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": cuts[49], "p95": cuts[94], "p99": cuts[98], "n": len(values)}


# --- setup ----------------------------------------------------------------------------------------------------------


def create_form(api_key: str) -> dict:
    """A signed capture form with its mapping confirmed, through POST /settings/capture-forms (in-process)."""
    from urllib.parse import urlsplit

    from bench.sqlcapture import RequestCapture

    body = {"name": "Throughput benchmark form", "deliveryMode": "signed", "confirmMapping": True}
    created = json.loads(RequestCapture(api_key).call("POST", "/settings/capture-forms", body))
    path = urlsplit(created["captureUrl"]).path
    if not path.startswith("/capture/") or not created.get("signingSecret"):
        raise SystemExit(f"bench: unexpected form creation answer: {created}")
    return {"id": created["id"], "path": path, "secret": created["signingSecret"]}


def direct_sql(scenarios, *, url: str, api_key: str, iterations: int, log) -> None:
    """Each scenario's statements captured in-process and replayed on psycopg: scenario.sql = p50/p95 in ms."""
    from bench import sqlcapture
    from bench.leadcapture import direct as capture_direct
    from bench.patients.direct import Direct
    from bench.throughput.scenarios import SQL_PATIENT_IDS

    direct = Direct(url, options=sqlcapture.connection_options())
    direct.check_options()
    capture = sqlcapture.RequestCapture(api_key)
    try:
        for scenario in scenarios:
            if scenario.capture is not None:
                statements = capture_direct.capture_statements(scenario.capture, email=None, log=log, process=False)
                replayed = capture_direct.replay(url, statements, iterations=iterations, log=log)
                scenario.statements = [statements["request"]["all"]]
                scenario.sql = {
                    "statements": replayed["request"]["statements"],
                    **{k: replayed["request"][k] for k in ("p50", "p95", "p99", "n")},
                }
                continue
            paths = scenario.paths[:SQL_PATIENT_IDS]
            scenario.statements = [capture.statements(scenario.method, path) for path in paths]
            counts = sorted({len(s) for s in scenario.statements})
            if not any(scenario.statements):
                scenario.sql = {"statements": 0}
                log(f"{scenario.key}: no SQL")
                continue
            for i in range(10):  # warm-up
                direct.read(scenario.statements[i % len(paths)])
            scenario.sql_ns = [direct.read(scenario.statements[i % len(paths)]) for i in range(iterations)]
            scenario.sql = {"statements": counts[0] if len(counts) == 1 else counts, **_ms(scenario.sql_ns)}
            log(
                f"{scenario.key}: {scenario.sql['statements']} statements, direct SQL p50 "
                f"{scenario.sql['p50']:.2f} ms (p95 {scenario.sql['p95']:.2f})"
            )
        direct.check_options()
    finally:
        direct.close()


# --- one stack ------------------------------------------------------------------------------------------------------


def stored_submissions(url: str, form_id: str, prefix: str) -> int:
    """How many submissions a run stored (its delivery ids start with `prefix`); then they are deleted, so that
    every run inserts into a table of the same size."""
    with env.connect(url) as conn:
        args = [form_id, prefix.replace("_", r"\_") + "%"]
        count = conn.execute(
            "SELECT count(*) FROM capture_capturesubmission WHERE form_id = %s AND delivery_id LIKE %s", args
        ).fetchone()[0]
        conn.execute("DELETE FROM capture_capturesubmission WHERE form_id = %s AND delivery_id LIKE %s", args)
    return count


def wrk_run(scenario, server, *, api_key: str, url: str, threads: int, connections: int, seconds: float, args, label):
    """One wrk run of a scenario; its figures and the problems that fail its check."""
    from bench.paths import RESULTS
    from bench.throughput import scenarios as sc
    from bench.throughput import wrk

    host = f"127.0.0.1:{server.port}"
    path = RESULTS / f"throughput-requests-{scenario.key}.bin"
    prefix = None
    if scenario.capture is not None:
        prefix = sc.run_prefix(server.stack, label)
        count = math.ceil(seconds * args.capture_rate) + 500
        wrk.write_requests(path, sc.capture_requests(scenario.capture, host=host, prefix=prefix, count=count))
    else:
        wrk.write_requests(path, sc.read_requests(scenario, host=host, api_key=api_key))
    result, output = wrk.run(
        server.base_url,
        path,
        threads=threads,
        connections=connections,
        seconds=seconds,
        once=scenario.capture is not None,
    )
    problems = result.problems()
    if result.requests == 0:
        problems.append(f"no answer within the {seconds:g} s run")
    wrong = {s: n for s, n in result.statuses.items() if s != str(scenario.status)}
    if wrong and not result.not_2xx:
        problems.append("answers other than " + str(scenario.status) + ": " + json.dumps(wrong))
    figures = {
        "threads": threads,
        "connections": connections,
        "rate": result.rate,
        "p50_ms": result.p50_ms,
        "p75_ms": result.p75_ms,
        "p90_ms": result.p90_ms,
        "p99_ms": result.p99_ms,
        "mean_ms": result.mean_ms,
        "max_ms": result.max_ms,
        "requests": result.requests,
        "seconds": result.seconds,
        "sent": result.sent,
        "statuses": result.statuses,
        "socket_errors": result.socket_errors,
        "exhausted": result.exhausted,
        "output": output,
    }
    if prefix is not None:
        time.sleep(1.0)  # the requests in flight when wrk stopped finish
        stored = stored_submissions(url, scenario.capture["id"], prefix)
        in_flight = result.sent - result.requests
        accepted = result.ok
        figures.update(accepted=accepted, stored=stored, in_flight=in_flight, prefix=prefix)
        # Every 2xx answer has its row; rows beyond them can only be requests still in flight when wrk stopped.
        if not accepted <= stored <= accepted + in_flight:
            problems.append(
                f"stored {stored:,} submissions for {accepted:,} accepted ({in_flight} in flight when wrk stopped)"
            )
    figures["problems"] = problems
    return figures


def measure_stack(stack: str, chosen, *, url: str, api_key: str, args, log) -> dict:
    from bench.measure import uptime, wait_quiet
    from bench.throughput import servers

    server = servers.StackServer(stack, server_environ(url))
    log(f"{stack}: starting {' '.join(servers.command(stack, server.port)[1:])} (log {server.log_path})")
    server.start()
    found = {"uptime_before": uptime(), "server_processes": len(server.processes())}
    log(f"{stack}: serving on {server.base_url}, {found['server_processes']} processes")
    try:
        found["load_before"] = wait_quiet(args.max_load, args.max_wait, log)
        for scenario in chosen:
            if args.warmup:
                warm = wrk_run(
                    scenario, server, api_key=api_key, url=url, threads=2, connections=8, seconds=args.warmup,
                    args=args, label="warm",
                )  # fmt: skip
                if warm["problems"]:
                    log(f"{stack} {scenario.key} warm-up: " + "; ".join(warm["problems"]))
            runs = {}
            for threads, connections in CONNECTIONS:
                load = os.getloadavg()[0]
                figures = wrk_run(
                    scenario, server, api_key=api_key, url=url, threads=threads, connections=connections,
                    seconds=args.duration, args=args, label=f"c{connections}",
                )  # fmt: skip
                figures["load_before"] = load
                runs[f"c{connections}"] = figures
                extra = (
                    f"; accepted {figures['accepted']:,}, stored {figures['stored']:,}" if "accepted" in figures else ""
                )
                log(
                    f"{stack} {scenario.key} c{connections}: {figures['rate']:,.0f} req/s, p50 {figures['p50_ms']:.2f} "
                    f"ms, p99 {figures['p99_ms']:.2f} ms{extra}"
                    + (" — " + "; ".join(figures["problems"]) if figures["problems"] else "")
                )
            scenario.runs[stack] = runs
        found["uptime_after"] = uptime()
    finally:
        server.stop()
    return found


# --- figures --------------------------------------------------------------------------------------------------------


def summarise(scenario, stack: str) -> dict:
    runs = scenario.runs[stack]
    c1, c8 = runs["c1"], runs["c8"]
    sql50 = scenario.sql.get("p50")
    row = {
        "key": scenario.key,
        "label": scenario.label,
        "stack": stack,
        "c1": {k: c1[k] for k in ("rate", "p50_ms", "p99_ms")},
        "c8": {k: c8[k] for k in ("rate", "p50_ms", "p99_ms")},
        "sql_p50_ms": sql50,
        "sql_statements": scenario.sql.get("statements"),
        "ratio": c1["p50_ms"] / sql50 if sql50 else None,
        "problems": {name: run["problems"] for name, run in runs.items() if run["problems"]},
        "target": None,
        "target_met": None,
        "ratio_met": None,
    }
    if scenario.target is not None:
        run = runs[f"c{scenario.target.connections}"]
        row["target"] = scenario.target.describe()
        row["target_met"] = scenario.target.met(run["rate"], run["p50_ms"], run["p99_ms"]) and not run["problems"]
    if scenario.patients_area and row["ratio"] is not None:
        from bench.throughput.scenarios import RATIO_TARGET

        row["ratio_met"] = row["ratio"] <= RATIO_TARGET
    if scenario.capture is not None:
        row["capture"] = {name: {k: run[k] for k in ("accepted", "stored", "in_flight")} for name, run in runs.items()}
    return row


def table(rows: list[dict]) -> str:
    from bench.doc import met
    from bench.doc import ms as fmt

    lines = [
        "| Scenario | Stack | 1 conn req/s | p50 ms | p99 ms | 8 conn req/s | p50 ms | p99 ms | SQL p50 ms "
        "| API/SQL p50 (1 conn) | Check | Target |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|",
    ]
    for row in rows:
        c1, c8 = row["c1"], row["c8"]
        sql = fmt(row["sql_p50_ms"]) if row["sql_p50_ms"] is not None else "no SQL"
        ratio = f"{row['ratio']:.1f}x" if row["ratio"] is not None else "-"
        if row["ratio_met"] is not None:
            ratio += f" {met(row['ratio_met'])} (≤ 2x)"
        check = (
            "✅ all answers as expected"
            if not row["problems"]
            else "❌ " + "; ".join(f"{name}: {', '.join(p)}" for name, p in row["problems"].items())
        )
        if "capture" in row:
            check += (
                " ("
                + ", ".join(
                    f"{name}: {c['accepted']:,} accepted, {c['stored']:,} stored" for name, c in row["capture"].items()
                )
                + ")"
            )
        target = f"{row['target']} {met(row['target_met'])}" if row["target"] else ""
        lines.append(
            f"| {row['label']} | {row['stack']} | {c1['rate']:,.0f} | {fmt(c1['p50_ms'])} | {fmt(c1['p99_ms'])} "
            f"| {c8['rate']:,.0f} | {fmt(c8['p50_ms'])} | {fmt(c8['p99_ms'])} | {sql} | {ratio} | {check} "
            f"| {target} |"
        )
    return "\n".join(lines)


# --- main -----------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.UTC)
    t_start = time.monotonic()
    log = logger("bench throughput", t_start, width=6)

    from bench.throughput import servers, wrk

    binary = wrk.ensure()
    wrk_version = wrk.version(binary)
    log(f"{wrk_version} at {binary}")
    stacks, skipped = [], {}
    for stack in args.stack_list:
        why = servers.missing(stack)
        if why:
            skipped[stack] = why
            log(f"stack {stack!r} ({servers.DESCRIPTIONS[stack]}) NOT MEASURED: {why}")
        else:
            stacks.append(stack)
    if not stacks and not args.seed_only:
        raise SystemExit("bench: no stack to measure")

    url, redis = database_url(), redis_url()
    os.environ.update(REDIS_URL=redis, CELERY_BROKER_URL=redis)  # this process and the servers
    env.flush_redis(redis)
    log(f"flushed Redis database {redis}")

    from bench.crm import seed as crm_seed
    from bench.patients import prepare

    info = prepare.prepare(
        url,
        patients=args.patients,
        others=args.others,
        other_patients=args.other_patients,
        reseed=args.reseed,
        skip_seed=False,
        log=log,
    )
    env.setup_django(url, server_environ(url))
    crm = crm_seed.prepare_crm(url, info, reseed=args.reseed, log=log)
    if args.seed_only:
        return 0

    from bench.measure import code_version
    from bench.measure import machine as machine_info
    from bench.paths import RESULTS
    from bench.throughput import doc, scenarios

    with env.connect(url) as conn:
        conn.execute("VACUUM (ANALYZE) " + ", ".join(crm_seed.CRM_TABLES) + ", patients_patient")
        machine = machine_info(conn)
        patient_ids = scenarios.pick_patient_ids(conn, info.organization_id)
    machine["code"] = code_version()
    form = create_form(info.api_key)
    log(f"signed capture form {form['id']} made through the settings API")
    chosen = [s for s in scenarios.build(patient_ids=patient_ids, form=form) if s.key in args.keys]

    log(f"direct SQL: {args.sql_iterations} replays per scenario")
    direct_sql(chosen, url=url, api_key=info.api_key, iterations=args.sql_iterations, log=log)

    stack_info = {}
    try:
        for stack in stacks:
            stack_info[stack] = measure_stack(stack, chosen, url=url, api_key=info.api_key, args=args, log=log)
    finally:
        # The form's submissions (the in-process ones of the direct SQL; the runs' are deleted after each) are
        # never processed: no worker runs here, and the queued drain goes with the Redis database.
        with env.connect(url) as conn:
            conn.execute("DELETE FROM capture_capturesubmission WHERE form_id = %s", [form["id"]])
        env.flush_redis(redis)

    rows = [summarise(s, stack) for s in chosen for stack in stacks]
    figures = {
        "started": started.isoformat(),
        "seconds": time.monotonic() - t_start,
        "machine": machine,
        "wrk": wrk_version,
        "patients": info.patients,
        "others": info.others,
        "other_patients": info.other_patients,
        "crm_counts": crm.counts,
        "duration": args.duration,
        "warmup": args.warmup,
        "sql_iterations": args.sql_iterations,
        "stacks": stacks,
        "skipped": skipped,
        "stack_info": stack_info,
        "rows": rows,
    }
    raw = {
        **figures,
        "scenarios": [
            {
                "key": s.key,
                "paths": s.paths[:3] + ([f"… {len(s.paths)} paths"] if len(s.paths) > 3 else []),
                "statements": s.statements[:1],
                "sql": s.sql,
                "runs": s.runs,
            }
            for s in chosen
        ],
    }
    print()
    print(table(rows))
    partial = args.only or set(stacks) != set(servers.STACKS)
    publish(
        doc.section(figures, table(rows)),
        RESULTS / f"throughput-{info.patients}.json",
        raw,
        title="Serving throughput",
        write=doc.write,
        skipped="--only" if args.only else "--no-doc" if args.no_doc else "",
        log=log,
    )
    if partial:
        log("not every stack or scenario was measured: " + json.dumps(skipped or {"only": args.keys}))
    failed = [r for r in rows if r["problems"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
