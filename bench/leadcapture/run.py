"""python -m bench capture — sustained signed lead captures per second through the real HTTP stack (issue 9).

Method (docs/benchmarks.md, "Lead capture", says the same for readers):

1. Database `practice_crm_bench_capture` (BENCH_CAPTURE_DATABASE_URL overrides) dropped, created, migrated and
   seeded afresh with the patients benchmark's seed (bench.patients.seed): a measured practice of --patients patients
   (its owner and API key made by `manage.py create_practice --api-key`) and --others practices of --other-patients.
   Redis database 12 (BENCH_CAPTURE_REDIS_URL) flushed and used by the servers and the workers for rate limits,
   cache, channel layer and broker, so the tasks every capture queues stay out of everybody else's queue.
2. --servers daphne processes (default 2) serving config.asgi:application on ports of their own (settings
   bench.settings, DEBUG=0). The per-form bucket stays as configured (200 burst + 5/s); signed posts do not pass
   the per-address abuse screen, so nothing is lifted for the load all coming from 127.0.0.1.
3. The design measured: POST /capture/{token} looks the form up, takes a token of its bucket, checks the HMAC, stores
   the submission (one INSERT) and asks for a drain of the practice (apps.capture.tasks.drain_practice, one Celery
   message while one is pending or running), which a worker runs moments later (match or create the patient, open the
   journey, touch, timeline, consent, events); the beat sweep apps.capture.tasks.sweep retries what is left
   `received`. --workers real Celery worker processes (default 1, prefork, --worker-concurrency 2, the first with the
   embedded beat) run on the benchmark database and broker during the whole run, competing for the same cores as the
   servers and PostgreSQL.
4. --forms signed capture forms (default 64) made through the settings API (POST /settings/capture-forms with the
   owner's API key, deliveryMode signed, mapping confirmed), their capture URLs and signing secrets kept.
5. A wait for a quiet machine, then --concurrency threads (default 8, spread over the servers), each with one
   keep-alive connection, posting signed JSON leads (bench.leadcapture.load: ~85% new leads, ~12% repeats of a
   known e-mail, ~3% retries of a delivery id already answered) to the forms round-robin, within each form's
   bucket: --warmup seconds untimed, then --duration seconds measured. Every answer must be 201 {"ok": true}.
6. Accepted captures/s = 201 answers of the measured window / its length; p50/p95/p99 of the request times
   (sending to the last byte). CPU time of the servers, the workers, PostgreSQL (its backends split by
   application_name between the servers' and the workers' connections) and the rest of the machine over the
   window.
7. Processing: after the window the load stops and the workers go on until no submission of the run is
   `received` (at most --drain-timeout seconds). processed/s = submissions processed / (last processed_at - first
   created_at); capture-to-lead lag = processed_at - created_at, p50/p95/p99, from the database.
8. The database afterwards: every delivery answered 201 stored once and processed, a patient created for each new
   lead and matched for each repeat, a journey and an attribution touch for each submission; mismatches reported.
9. Direct SQL: the statements of one capture request (form lookup + submission INSERT) and of its processing
   (the task body), captured in-process with the transactions marked, replayed on psycopg with fresh row ids, in
   the same transactions, committed; the rows are removed untimed after each replay. Also the patient-match
   SELECT on its own.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time
import uuid
from urllib.parse import urlsplit

from bench import env
from bench.doc import publish
from bench.leadcapture.workers import DAPHNE_APP_NAME, WORKER_APP_NAME, Workers, with_application_name
from bench.measure import Background, Sampler, code_version, logger, proc_stat, uptime, wait_quiet
from bench.measure import machine as machine_info
from bench.paths import RESULTS

DEFAULT_URL = env.DEFAULT_URL + "_capture"  # practice_crm_bench_capture
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
TARGET_RATE = 300.0  # captures/s with 2 server processes (issue 9)

DESCRIPTION = __doc__.split("\n\n", 1)[1]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench capture", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--forms", type=int, default=64, help="signed capture forms the load is spread over (64)")
    parser.add_argument("--servers", type=int, default=2, help="daphne processes (2)")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads/connections, over all servers (8)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured (30)")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds of untimed load first (8)")
    parser.add_argument("--patients", type=int, default=20_000, help="patients already in the practice (20000)")
    parser.add_argument("--others", type=int, default=2, help="other practices (2)")
    parser.add_argument("--other-patients", type=int, default=5_000, help="patients in each other practice (5000)")
    parser.add_argument("--sql-iterations", type=int, default=200, help="direct-SQL replays (200)")
    parser.add_argument(
        "--profile",
        type=int,
        default=120,
        help="also run this many captures in-process under cProfile (Django test client, same settings) and print "
        "where the time goes: half timed plainly, half profiled (default 120; 0: skip)",
    )
    parser.add_argument("--max-load", type=float, default=1.5, help="wait for a 1-minute load below this (1.5)")
    parser.add_argument("--max-wait", type=float, default=180, help="…for at most this many seconds (180)")
    parser.add_argument("--workers", type=int, default=1, help="Celery worker processes (1)")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="prefork pool processes per worker (2)")
    parser.add_argument(
        "--no-beat", action="store_true", help="no embedded beat in the first worker (no capture sweep during the run)"
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=600,
        help="after the window, wait at most this many seconds for every submission to be processed (600)",
    )
    parser.add_argument(
        "--no-doc", action="store_true", help="do not rewrite the capture section of docs/benchmarks.md"
    )
    args = parser.parse_args(argv)
    if args.forms < 1 or args.servers < 1 or args.concurrency < 1 or args.duration < 5 or args.sql_iterations < 10:
        parser.error("--forms, --servers, --concurrency ≥ 1, --duration ≥ 5, --sql-iterations ≥ 10")
    if args.workers < 1 or args.worker_concurrency < 1:
        parser.error("--workers, --worker-concurrency ≥ 1")
    return args


def database_url() -> str:
    return env.database_url("BENCH_CAPTURE_DATABASE_URL", DEFAULT_URL)


def redis_url() -> str:
    return env.flushable_redis_url("BENCH_CAPTURE_REDIS_URL", DEFAULT_REDIS_URL)


def quantiles(values: list[float]) -> dict:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": cuts[49], "p95": cuts[94], "p99": cuts[98], "mean": statistics.fmean(values)}


# --- forms, through the settings API ---------------------------------------------------------------------------------


def create_forms(http, count: int, *, prefix: str) -> list[dict]:
    forms = []
    for n in range(1, count + 1):
        body = {"name": f"{prefix} {n}", "deliveryMode": "signed", "confirmMapping": True}
        status, raw, _ = http.request("POST", "/settings/capture-forms", body)
        if status != 201:
            raise SystemExit(f"bench: POST /settings/capture-forms answered {status}: {raw[:500]!r}")
        created = json.loads(raw)
        path = urlsplit(created["captureUrl"]).path
        if not path.startswith("/capture/") or not created.get("signingSecret"):
            raise SystemExit(f"bench: unexpected form creation answer: {raw[:500]!r}")
        forms.append({"id": created["id"], "path": path, "secret": created["signingSecret"]})
    return forms


def seeded_emails(url: str, organization_id: str, limit: int = 2000) -> list[str]:
    """E-mails of active patients of the seed (the repeats' matches)."""
    with env.connect(url) as conn:
        rows = conn.execute(
            "SELECT email FROM patients_patient WHERE organization_id = %s AND email <> '' AND archived_at IS NULL "
            "AND merged_into_id IS NULL AND status IN ('lead', 'patient') ORDER BY id LIMIT %s",
            [organization_id, limit],
        ).fetchall()
    return [r[0] for r in rows]


# --- verification --------------------------------------------------------------------------------------------------


def verify(url: str, organization_id: str, form_ids: list[str], sent: list, patients_before: int) -> dict:
    """What the database holds after the run against what was answered 201."""
    accepted = [s for s in sent if s.status == 201]
    originals = {(s.form, s.delivery_id): s for s in accepted if s.kind != "retry"}
    new = sum(1 for s in originals.values() if s.kind == "new")
    repeats = sum(1 for s in originals.values() if s.kind == "repeat")
    repeat_ids = [s.delivery_id for s in originals.values() if s.kind == "repeat"]
    new_emails = sorted({s.email for s in originals.values() if s.kind == "new"})
    with env.connect(url) as conn:
        row = conn.execute(
            """
            SELECT count(*),
                   count(*) FILTER (WHERE s.status = 'processed'),
                   count(*) FILTER (WHERE s.patient_created),
                   count(*) FILTER (WHERE s.status = 'processed' AND NOT s.patient_created),
                   count(*) FILTER (WHERE s.patient_id IS NULL),
                   count(*) FILTER (WHERE s.journey_id IS NULL),
                   count(*) FILTER (WHERE s.journey_id IS NOT NULL AND j.id IS NULL),
                   count(DISTINCT (s.form_id, s.delivery_id)),
                   count(*) FILTER (WHERE s.patient_created AND s.delivery_id = ANY(%s)),
                   count(*) FILTER (WHERE s.status = 'received'),
                   count(*) FILTER (WHERE s.attempts > 1)
            FROM capture_capturesubmission s
            LEFT JOIN journeys_journey j ON j.id = s.journey_id
            WHERE s.organization_id = %s AND s.form_id = ANY(%s::uuid[])
            """,
            [repeat_ids, organization_id, form_ids],
        ).fetchone()
        touches = conn.execute(
            "SELECT count(*) FROM capture_attributiontouch WHERE organization_id = %s AND form_id = ANY(%s::uuid[])",
            [organization_id, form_ids],
        ).fetchone()[0]
        patients_after = conn.execute(
            "SELECT count(*) FROM patients_patient WHERE organization_id = %s", [organization_id]
        ).fetchone()[0]
        # Two patients for one new lead's e-mail: two submissions of that e-mail processed at the same time by two
        # worker processes, each finding no patient yet.
        duplicated = conn.execute(
            "SELECT count(*) - count(DISTINCT upper(email)) FROM patients_patient "
            "WHERE organization_id = %s AND upper(email) = ANY(%s)",
            [organization_id, [e.upper() for e in new_emails]],
        ).fetchone()[0]
        journeys = conn.execute(
            "SELECT count(*) FROM journeys_journey WHERE organization_id = %s", [organization_id]
        ).fetchone()[0]
        review = conn.execute(
            "SELECT count(*) FROM capture_intakereviewitem WHERE organization_id = %s", [organization_id]
        ).fetchone()[0]
    (
        stored,
        processed,
        created,
        matched,
        no_patient,
        no_journey,
        missing_journey,
        distinct,
        repeats_created,
        received,
        retried,
    ) = row
    checks = {
        "submissions stored = originals answered 201": (stored, len(originals)),
        "distinct (form, delivery id) = stored": (distinct, stored),
        "processed = stored": (processed, stored),
        "patients created = new leads": (created, new),
        "patients matched = repeats": (matched, repeats),
        "patients in the practice = before + new leads": (patients_after, patients_before + new),
        "duplicate patients (one new lead's e-mail, two patients)": (duplicated, 0),
        "submissions without a patient": (no_patient, 0),
        "submissions without a journey": (no_journey, 0),
        "journey ids without a journey row": (missing_journey, 0),
        "attribution touches = stored": (touches, stored),
    }
    mismatches = {name: pair for name, pair in checks.items() if pair[0] != pair[1]}
    return {
        "checks": {name: list(pair) for name, pair in checks.items()},
        "mismatches": {name: list(pair) for name, pair in mismatches.items()},
        "retries_answered_201": sum(1 for s in accepted if s.kind == "retry"),
        # A repeat of a lead of this run processed before that lead: it created the patient, the lead matched it.
        "repeats_processed_first": repeats_created,
        "still_received": received,
        "processed_after_a_failed_attempt": retried,
        "journeys_in_practice": journeys,
        "review_items": review,
    }


def processing_figures(url: str, form_ids: list[str], window: tuple[datetime.datetime, datetime.datetime]) -> dict:
    """From the database: how fast the workers turned the run's submissions into leads, and how late."""
    with env.connect(url) as conn:
        row = conn.execute(
            """
            SELECT count(*), min(created_at), max(processed_at),
                   percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY lag),
                   max(lag),
                   count(*) FILTER (WHERE lag > 30),
                   count(*) FILTER (WHERE processed_at >= %s AND processed_at < %s),
                   percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY lag)
                       FILTER (WHERE created_at >= %s AND created_at < %s)
            FROM (
                SELECT created_at, processed_at, extract(epoch FROM processed_at - created_at)::float8 AS lag
                FROM capture_capturesubmission
                WHERE form_id = ANY(%s::uuid[]) AND status = 'processed'
            ) s
            """,
            [window[0], window[1], window[0], window[1], form_ids],
        ).fetchone()
    count, first_created, last_processed, lag, lag_max, over_30, in_window, lag_window = row
    span = (last_processed - first_created).total_seconds() if count else 0.0
    window_s = (window[1] - window[0]).total_seconds()
    return {
        "processed": count,
        "first_created": first_created.isoformat() if first_created else None,
        "last_processed": last_processed.isoformat() if last_processed else None,
        "span_s": span,
        "rate": count / span if span else 0.0,
        "processed_in_window": in_window,
        "rate_in_window": in_window / window_s if window_s else 0.0,
        "lag_s": dict(zip(("p50", "p95", "p99"), lag or (None,) * 3, strict=True)) | {"max": lag_max},
        "lag_window_s": dict(zip(("p50", "p95", "p99"), lag_window or (None,) * 3, strict=True)),
        "lag_over_30s": over_30,
    }


def received_count(url: str, form_ids: list[str]) -> tuple[int, int]:
    with env.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'received'), count(*) FILTER (WHERE status = 'processed') "
            "FROM capture_capturesubmission WHERE form_id = ANY(%s::uuid[])",
            [form_ids],
        ).fetchone()


class WaitSampler(Background):
    """Every 50 ms during the window: what the benchmark database's active backends are waiting on
    (pg_stat_activity.wait_event_type/wait_event; "running" when on CPU or not waiting), to show lock waits; and,
    every 0.5 s, each backend's application_name (to split their CPU between the servers and the workers)."""

    def __init__(self, url: str):
        self.url = url
        self.samples: dict[str, int] = {}
        self.blocked: dict[str, int] = {}
        self.app_names: dict[int, str] = {}
        self.total = 0
        super().__init__()

    def _names(self, conn) -> None:
        for pid, name in conn.execute(
            "SELECT pid, application_name FROM pg_stat_activity WHERE datname = current_database()"
        ).fetchall():
            self.app_names[pid] = name

    def _run(self) -> None:
        with env.connect(self.url) as conn:
            self._names(conn)
            tick = 0
            while not self._stop.wait(0.05):
                tick += 1
                if tick % 10 == 0:
                    self._names(conn)
                rows = conn.execute(
                    "SELECT coalesce(wait_event_type || ':' || wait_event, 'running'), count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() GROUP BY 1"
                ).fetchall()
                for name, count in rows:
                    self.samples[name] = self.samples.get(name, 0) + count
                    self.total += count
                # The statements waiting on a lock, and what the backend holding it is running.
                for waiting, holding in conn.execute(
                    "SELECT left(regexp_replace(w.query, '\\s+', ' ', 'g'), 90), "
                    "left(regexp_replace(coalesce(h.query, ''), '\\s+', ' ', 'g'), 90) || ' [' || "
                    "coalesce(h.state, '?') || ']' FROM pg_stat_activity w "
                    "LEFT JOIN pg_stat_activity h ON h.pid = (pg_blocking_pids(w.pid))[1] "
                    "WHERE w.datname = current_database() AND w.wait_event_type = 'Lock'"
                ).fetchall():
                    key = f"{waiting} ⟵ {holding}"
                    self.blocked[key] = self.blocked.get(key, 0) + 1
            self._names(conn)

    def summary(self) -> list:
        return [[name, count / max(self.total, 1)] for name, count in sorted(self.samples.items(), key=lambda x: -x[1])]

    def blockers(self) -> list:
        return [[name, count] for name, count in sorted(self.blocked.items(), key=lambda x: -x[1])[:8]]


def _reaped_cpu(pid: int) -> float:
    """CPU seconds of the children `pid` has reaped so far (cutime + cstime in /proc/<pid>/stat)."""
    fields = proc_stat(pid)
    if fields is None:
        return 0.0
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _postmaster(url: str) -> int:
    with env.connect(url) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        return int(proc_stat(backend)[1])


def cpu_sampler(app_names: dict[int, str], url: str):
    """bench.webhooks.run.Sampler (CPU of every process from /proc, sampled every 0.5 s), with the benchmark
    database's backends alive at the end split by the application_name of their connection (the servers', the
    workers', the rest: this driver's monitoring connections); and the CPU of the PostgreSQL backends that ended
    during the window, from the postmaster's reaped-children time (any database): the Celery workers open a new
    connection per task (celery's Django fix-up closes it after each), and such short-lived backends mostly end
    between two samples."""
    postmaster = _postmaster(url)

    def sessions() -> tuple[int, float]:
        with env.connect(url) as conn:
            return conn.execute(
                "SELECT sessions, active_time FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()

    class CpuSampler(Sampler):
        def __enter__(self):
            self.reaped_before = _reaped_cpu(postmaster)
            self.sessions_before = sessions()
            return super().__enter__()

        def __exit__(self, *exc) -> None:
            super().__exit__(*exc)
            self.reaped = _reaped_cpu(postmaster) - self.reaped_before
            after = sessions()
            self.sessions = after[0] - self.sessions_before[0]
            self.active_s = (after[1] - self.sessions_before[1]) / 1000
            split = {DAPHNE_APP_NAME: 0.0, WORKER_APP_NAME: 0.0, "other": 0.0}
            for pid, last in self._last.items():
                title = self._titles.get(pid, "")
                if not (title.startswith("postgres:") and f" {self.database} " in f" {title} "):
                    continue
                if not os.path.exists(f"/proc/{pid}"):
                    continue  # ended: counted in the postmaster's reaped time
                name = app_names.get(pid, "other")
                split[name if name in split else "other"] += last - self._first[pid]
            self.postgres_split = split

        def summary(self) -> dict:
            found = super().summary()
            found["postgres_by_client_s"] = {
                "servers": self.postgres_split[DAPHNE_APP_NAME],
                "workers": self.postgres_split[WORKER_APP_NAME],
                "other": self.postgres_split["other"],
                "ended_any_database": self.reaped,
            }
            # To the benchmark database (pg_stat_database): connections opened, and seconds its backends spent
            # running statements (wall time: CPU, I/O and lock waits).
            found["new_connections"] = self.sessions
            found["db_active_s"] = self.active_s
            return found

    return CpuSampler


# --- servers and one measurement -----------------------------------------------------------------------------------


class CaptureServer:
    """A daphne process of the benchmark (bench.env.Server: config.asgi:application, its start-up check), with
    a log of its own and its connections named `bench-capture-daphne`."""

    def __init__(self, url: str, name: str):
        self.server = env.Server(
            with_application_name(url, DAPHNE_APP_NAME), log_path=RESULTS / f"capture-daphne-{name}.log"
        )

    def start(self) -> None:
        self.server.start()

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def pid(self) -> int:
        return self.server.pid

    def stop(self) -> None:
        self.server.stop()


def _group_cpu(cpu: dict[str, float]) -> dict[str, float]:
    """Per-process CPU seconds summed into "daphne" and "workers"."""
    daphne = sum(v for k, v in cpu.items() if k.startswith("daphne"))
    workers = sum(v for k, v in cpu.items() if k.startswith("worker"))
    return {"daphne": daphne, "workers": workers}


def measure(url: str, info, forms: list[dict], emails: list[str], *, args, log, wait) -> dict:
    """One measurement: fresh servers and workers, warm-up, the measured window, the drain, the database check."""
    from bench.leadcapture import load

    form_ids = [f["id"] for f in forms]
    servers, workers = [], None
    drained = False
    try:
        workers = Workers(url, count=args.workers, concurrency=args.worker_concurrency, beat=not args.no_beat, log=log)
        for i in range(args.servers):
            server = CaptureServer(url, str(i + 1))
            server.start()
            servers.append(server)
            log(f"daphne {i + 1} on 127.0.0.1:{server.port} (pid {server.pid}, log {server.server.log_path})")
        workers.wait_ready()
        log(
            f"{args.workers} Celery worker(s), prefork x {args.worker_concurrency}"
            + ("" if args.no_beat else ", embedded beat in the first")
            + f": pids {workers.pids} (logs bench/results/capture-worker-*.log)"
        )
        with env.connect(url) as conn:
            patients_before = conn.execute(
                "SELECT count(*) FROM patients_patient WHERE organization_id = %s", [info.organization_id]
            ).fetchone()[0]
        plan = load.Plan(
            [load.Form(i, f["id"], f["path"], f["secret"]) for i, f in enumerate(forms)],
            emails,
            run=uuid.uuid4().hex[:8],
            phone_prefix="7410",
        )
        ports = [s.port for s in servers]
        run = {"uptime_before": uptime()}
        log(run["uptime_before"])
        run["load_before"] = wait(args.max_load, args.max_wait, log)
        log(f"warm-up: {args.warmup:.0f}s, {args.concurrency} connections over {len(ports)} servers")
        warm = load.run(plan, ports, concurrency=args.concurrency, seconds=args.warmup)
        log(f"warm-up: {len(warm.sent)} requests, {sum(1 for s in warm.sent if s.status == 201)} answered 201")
        log(f"measuring {args.duration:.0f}s")
        watched = {f"daphne {i + 1}": s.pid for i, s in enumerate(servers)} | workers.pids
        database = env.database_name(url)
        with WaitSampler(url) as waits, cpu_sampler(waits.app_names, url)(watched, database) as sampler:
            window_start = datetime.datetime.now(datetime.UTC)
            t_begin = time.monotonic()
            measured = load.run(plan, ports, concurrency=args.concurrency, seconds=args.duration)
            wall = time.monotonic() - t_begin
            window_end = datetime.datetime.now(datetime.UTC)
        run["uptime_end"] = uptime()
        log(run["uptime_end"])
        for server in servers:
            server.stop()
        servers = []
        # The drain: the load has stopped; the workers go on until no submission of the run is `received`.
        log(f"draining: waiting (at most {args.drain_timeout:.0f}s) until no submission of the run is 'received'")
        t_drain = time.monotonic()
        with (
            WaitSampler(url) as drain_waits,
            cpu_sampler(drain_waits.app_names, url)(workers.pids, database) as drain_sampler,
        ):
            next_log = time.monotonic() + 10
            while True:
                workers.check()
                received, processed = received_count(url, form_ids)
                if received == 0:
                    drained = True
                    break
                if time.monotonic() - t_drain > args.drain_timeout:
                    break
                if time.monotonic() >= next_log:
                    log(f"  {received:,} received, {processed:,} processed")
                    next_log = time.monotonic() + 10
                time.sleep(1)
        run["drain_s"] = time.monotonic() - t_drain
        run["drained"] = drained
        log(f"drain {'done' if drained else 'TIMED OUT'} after {run['drain_s']:.1f}s ({received:,} still received)")
    finally:
        for server in servers:
            server.stop()
        if workers is not None:
            workers.stop()
    ok = [s for s in measured.sent if s.status == 201]
    failed = [s for s in measured.sent if s.status != 201]
    figures = {
        "requests": len(measured.sent),
        "ok": len(ok),
        "failed": len(failed),
        "failed_statuses": {str(k): v for k, v in _count(s.status for s in failed).items()},
        "failures": [[status, delivery, body.decode(errors="replace")] for status, delivery, body in measured.failures],
        "errors": measured.errors[:10] + warm.errors[:10],
        "warmup_requests": len(warm.sent),
        "warmup_failed": sum(1 for s in warm.sent if s.status != 201),
        "wall_s": wall,
        "rate": len(ok) / wall,
        "latency_ms": quantiles([s.ns / 1e6 for s in ok]) if len(ok) > 1 else None,
        "by_kind": {
            kind: {"n": len(group), **quantiles([s.ns / 1e6 for s in group])}
            for kind in ("new", "repeat", "retry")
            if len(group := [s for s in ok if s.kind == kind]) > 1
        },
        "paced_waits": measured.paced_waits,
        "paced_seconds": measured.paced_seconds,
        "max_per_form": max(f.sent for f in plan.forms),
        "min_per_form": min(f.sent for f in plan.forms),
        "sampler": sampler.summary(),
        "waits": waits.summary(),
        "lock_waits": waits.blockers(),
        "drain_sampler": drain_sampler.summary(),
        "drain_waits": drain_waits.summary(),
    }
    run["figures"] = figures
    latency = {k: round(v, 1) for k, v in (figures["latency_ms"] or {}).items()}
    log(
        f"{figures['ok']} captures answered 201 in {wall:.1f}s = {figures['rate']:.0f}/s; "
        f"{figures['failed']} failed {figures['failed_statuses'] or ''}; latency ms {json.dumps(latency)}"
    )
    cpu = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in figures["sampler"].items()}
    log(f"CPU over the window: {json.dumps(cpu)}")
    log("active backends were: " + ", ".join(f"{n} {share:.0%}" for n, share in figures["waits"][:6]))
    for name, count in figures["lock_waits"][:5]:
        log(f"  {count:5d} x waiting: {name}")
    drain_cpu = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in figures["drain_sampler"].items()}
    log(f"CPU over the drain: {json.dumps(drain_cpu)}")
    run["processing"] = processing_figures(url, form_ids, (window_start, window_end))
    proc = run["processing"]
    log(
        f"processing: {proc['processed']:,} submissions in {proc['span_s']:.1f}s (first created → last processed) = "
        f"{proc['rate']:.1f}/s; {proc['processed_in_window']:,} processed during the window "
        f"({proc['rate_in_window']:.1f}/s); lag s "
        + json.dumps({k: v and round(v, 2) for k, v in proc["lag_s"].items()})
    )
    run["verification"] = verify(url, info.organization_id, form_ids, warm.sent + measured.sent, patients_before)
    mismatches = run["verification"]["mismatches"]
    log("database check: " + ("consistent" if not mismatches else f"MISMATCHES {json.dumps(mismatches)}"))
    return run


# --- main -----------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.UTC)
    t_start = time.monotonic()

    log = logger("bench capture", t_start)

    RESULTS.mkdir(parents=True, exist_ok=True)
    url, redis = database_url(), redis_url()
    # Every process of the run (this one, the daphne servers, the workers) uses the benchmark's Redis database.
    os.environ.update(REDIS_URL=redis, CELERY_BROKER_URL=redis)
    env.flush_redis(redis)
    log(f"flushed Redis database {redis}")

    from bench.patients import seed

    log(f"database {env.database_name(url)}: dropping, creating, migrating")
    seconds = env.rebuild(url)
    log(f"migrated in {seconds:.1f}s; seeding {args.patients:,} patients (+{args.others} practices)")
    info = seed.seed(url, patients=args.patients, others=args.others, other_patients=args.other_patients, log=log)

    from bench.client import Http
    from bench.leadcapture import direct, doc, load

    env.setup_django(url)
    from django.conf import settings

    if tuple(settings.SVC_CAPTURE_FORM_BUCKET) != (load.BUCKET_BURST, load.BUCKET_RATE):
        raise SystemExit(
            f"bench: SVC_CAPTURE_FORM_BUCKET is {settings.SVC_CAPTURE_FORM_BUCKET}, the load generator mirrors "
            f"{(load.BUCKET_BURST, load.BUCKET_RATE)}: update bench/leadcapture/load.py"
        )
    with env.connect(url) as conn:
        machine = machine_info(conn)
    machine["code"] = code_version(changes=False)
    import celery

    machine["celery"] = f"Celery {celery.__version__}"

    results = {"started": started.isoformat(), "args": vars(args), "runs": []}
    api_server = CaptureServer(url, "api")
    api_server.start()
    try:
        api = Http("127.0.0.1", api_server.port, headers={"Authorization": f"Bearer {info.api_key}"})
        t0 = time.monotonic()
        forms = create_forms(api, args.forms, prefix="Website enquiry form")
        (sql_form,) = create_forms(api, 1, prefix="Direct-SQL reference form")
        api.close()
    finally:
        api_server.stop()
    log(
        f"{args.forms} signed forms (+1 for the in-process capture) made through the settings API in "
        f"{time.monotonic() - t0:.1f}s"
    )
    emails = seeded_emails(url, info.organization_id)
    log(f"{len(emails)} e-mails of seeded patients for the repeats")
    # The statements of one capture request and of its processing, in-process (this commits two leads on the
    # reference form, processed here; the tasks their requests queued are no-ops when a worker gets to them).
    statements = direct.capture_statements(sql_form, email=emails[-1] if emails else None, log=log)

    results["runs"].append(measure(url, info, forms, emails, args=args, log=log, wait=wait_quiet))

    log(f"direct SQL: {args.sql_iterations} replays of one capture's request and processing")
    results["direct"] = direct.replay(url, statements, iterations=args.sql_iterations, log=log)
    results["statements"] = statements
    if args.profile:
        from bench.leadcapture import profile

        results["profile"] = profile.run(sql_form, emails, count=args.profile, log=log)

    results["machine"] = machine
    results["seconds"] = time.monotonic() - t_start
    results["patients"] = info.patients
    env.flush_redis(redis)
    publish(
        doc.section(results, target=TARGET_RATE),
        RESULTS / "capture.json",
        results,
        title="Lead capture",
        write=doc.write,
        skipped="--no-doc" if args.no_doc else "",
        log=log,
    )
    run = results["runs"][0]
    return 0 if not run["figures"]["failed"] and run["drained"] else 1


def _count(values) -> dict:
    counts: dict = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


if __name__ == "__main__":
    sys.exit(main())
