"""python -m bench webhooks — outbound-webhook throughput and latency against a local receiver (issue 4).

Method (docs/benchmarks.md, "Outbound webhooks", says the same for readers):

1. Database `practice_crm_bench_webhooks` (BENCH_WEBHOOKS_DATABASE_URL overrides) dropped, created and migrated
   afresh; Redis database 13 (BENCH_WEBHOOKS_REDIS_URL) flushed and used as broker, cache and channel layer.
2. One practice, 5 endpoints made with apps.webhooks.services.endpoint_create (secrets kept), subscribed to
   patient.created/patient.updated, pointing at http://127.0.0.1:<port>/hooks/<n> on the receiver process
   (bench/webhooks/receiver.py), then marked enabled and verified.
3. For each worker count: tables of events and deliveries emptied (VACUUM ANALYZE), N Celery worker processes
   (`--pool solo`, one task at a time each), a warm-up of 20 events, a wait for a quiet machine, then EVENTS events
   recorded with apps.events.services.emit_many in one transaction. The commit time is stamped by an on_commit
   hook registered before the app's own (which publishes the fan_out task). The run ends when the receiver has
   seen EVENTS x 5 deliveries; deliveries/s = EVENTS x 5 / (last receipt - commit). Then every delivery must be
   DELIVERED with one attempt, the receiver must have seen every (event, endpoint) exactly once with no duplicate
   delivery id, and every signature must verify with its endpoint's secret.
4. Idle latency, same workers: single events, each in its own transaction, spaced; commit-to-receipt per delivery
   (receiver's receive time - commit stamp, both time.monotonic(), the machine-wide CLOCK_MONOTONIC); each event is
   committed LATENCY_SPACING after the previous event's deliveries have all arrived, so nothing is queued.
5. In-process, workers stopped: the statements of one drain batch (CaptureQueriesContext, CLAIM_BATCH deliveries),
   a timed drain of 200 deliveries split into database / HTTP / rest, and EXPLAIN ANALYZE of the claim.
"""

import argparse
import datetime
import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict

from bench import env
from bench.doc import publish
from bench.measure import Sampler, load1, logger, quantile, wait_quiet
from bench.paths import RESULTS, ROOT

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/practice_crm_bench_webhooks"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
SETTINGS_MODULE = "bench.webhooks.settings"
ENDPOINTS = 5
SUBSCRIBED = ["patient.created", "patient.updated", "patient.archived"]
EMIT_CHUNK = 1000
WARMUP_EVENTS = 20
TARGET_RATE = 300.0  # deliveries/s with 2 workers (issue 4)
TARGET_P50_S = 1.0  # idle commit-to-receipt p50 (issue 4)

DESCRIPTION = __doc__.split("\n\n", 1)[1]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench webhooks", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000, help="events per throughput run (default 10000)")
    parser.add_argument("--workers", default="1,2", help="worker process counts to run, in order (default 1,2)")
    parser.add_argument("--latency-events", type=int, default=100, help="single events of the idle latency run")
    parser.add_argument("--latency-spacing", type=float, default=0.1, help="seconds between them (default 0.1)")
    parser.add_argument(
        "--timeout", type=float, default=900, help="seconds a throughput run may take before it is cut (default 900)"
    )
    parser.add_argument(
        "--max-load",
        type=float,
        default=1.5,
        help="wait before each measurement until the 1-minute load average is below this (default 1.5)",
    )
    parser.add_argument(
        "--max-wait", type=float, default=240, help="…but at most this many seconds, then measure anyway (default 240)"
    )
    parser.add_argument(
        "--what-if",
        default="",
        help="comma-separated proposed fixes to also measure (one run each; combine with +), applied only inside the "
        "benchmark's worker processes (bench/webhooks/worker.py KNOWN; none pending at present). Their runs are "
        "labelled as such; apps/ is not changed.",
    )
    parser.add_argument("--what-if-workers", default="2", help="worker counts of the what-if runs (default 2)")
    parser.add_argument(
        "--what-if-events", type=int, default=0, help="events per what-if throughput run (default: --events)"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the runs of the previous bench/results/webhooks.json that this invocation does not measure "
        "(another worker count or what-if), e.g. to re-measure the app as it is at a quieter moment",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=200_000,
        help="at the end, run bench.webhooks.history with this many rows of delivery history (0: skip; default 200000)",
    )
    parser.add_argument("--no-doc", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    try:
        args.worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
        args.what_if_counts = [int(w) for w in args.what_if_workers.split(",") if w.strip()]
    except ValueError:
        parser.error("--workers / --what-if-workers: comma-separated integers")
    args.what_ifs = [w.strip() for w in args.what_if.split(",") if w.strip()]
    from bench.webhooks.worker import KNOWN

    unknown = {n for w in args.what_ifs for n in w.split("+")} - set(KNOWN)
    if unknown:
        parser.error(f"--what-if: unknown {sorted(unknown)}; known: {', '.join(KNOWN) or 'none'}")
    if args.events < 1 or not args.worker_counts or min(args.worker_counts) < 1:
        parser.error("--events ≥ 1 and at least one worker count ≥ 1")
    return args


# --- environment ----------------------------------------------------------------------------------------------


def database_url() -> str:
    return env.database_url("BENCH_WEBHOOKS_DATABASE_URL", DEFAULT_URL)


def redis_url() -> str:
    return env.flushable_redis_url("BENCH_WEBHOOKS_REDIS_URL", DEFAULT_REDIS_URL)


def process_env(url: str, redis: str, what_if: str = "") -> dict[str, str]:
    environ = env.server_env(url)
    environ.update(
        DJANGO_SETTINGS_MODULE=SETTINGS_MODULE,
        DEBUG="1",
        SVC_WEBHOOKS_ALLOW_LOOPBACK="1",
        BENCH_WEBHOOKS_REDIS_URL=redis,
        REDIS_URL=redis,
        CELERY_BROKER_URL=redis,
        BENCH_WEBHOOKS_WHATIF=what_if,
        PYTHONUNBUFFERED="1",
    )
    return environ


# --- receiver -------------------------------------------------------------------------------------------------


class Receiver:
    """The receiver process and a thread collecting its records (receive time, path, ids, signature, body)."""

    def __init__(self, environ: dict[str, str]):
        self.records: list[tuple] = []
        self._cond = threading.Condition()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.webhooks.receiver", "--port", "0"],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=(RESULTS / "webhooks-receiver.log").open("w"),
        )
        line = self.process.stdout.readline().decode()
        if not line.startswith("ready "):
            raise SystemExit(f"bench: the receiver did not start ({line!r}); see bench/results/webhooks-receiver.log")
        self.port = int(line.split()[1])
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for raw in self.process.stdout:
            received, path, delivery_id, timestamp, signature, body = raw.rstrip(b"\n").split(b"\t", 5)
            record = (
                float(received),
                path.decode(),
                delivery_id.decode(),
                timestamp.decode(),
                signature.decode(),
                body.replace(b"\\n", b"\n").replace(b"\\t", b"\t"),
            )
            with self._cond:
                self.records.append(record)
                self._cond.notify_all()

    def count(self) -> int:
        with self._cond:
            return len(self.records)

    def wait_for(self, total: int, timeout: float, progress=None) -> bool:
        deadline = time.monotonic() + timeout
        next_tick = time.monotonic() + 10
        with self._cond:
            while len(self.records) < total:
                now = time.monotonic()
                if now >= deadline:
                    return False
                if progress and now >= next_tick:
                    progress(len(self.records))
                    next_tick = now + 10
                self._cond.wait(timeout=min(1.0, deadline - now))
            return True

    def since(self, start: int) -> list[tuple]:
        with self._cond:
            return self.records[start:]

    def stop(self) -> None:
        env.stop_processes([self.process], timeout=10)


# --- workers --------------------------------------------------------------------------------------------------


class Workers(env.CeleryWorkers):
    """`python -m bench.webhooks.worker NAME` processes (--pool solo, one task at a time each)."""

    def __init__(self, count: int, environ: dict[str, str], tag: str):
        names = [f"bench{tag}{i}" for i in range(1, count + 1)]
        super().__init__(
            names,
            env=environ,
            log_paths=[RESULTS / f"webhooks-worker-{name}.log" for name in names],
            commands=[[sys.executable, "-m", "bench.webhooks.worker", name] for name in names],
        )

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in zip(self.names, self.processes, strict=True)}


# --- the app, in-process ---------------------------------------------------------------------------------------


def setup_django(url: str, redis: str) -> None:
    env.setup_django(url, process_env(url, redis))


def create_practice(port: int) -> dict:
    """One practice, 5 endpoints through endpoint_create (their secrets kept), enabled and verified."""
    from django.utils import timezone

    from apps.accounts import services as accounts
    from apps.webhooks import services
    from apps.webhooks.models import WebhookEndpoint

    owner, _ = accounts.user_get_or_create(email="bench-webhooks@example.com", password=None, name="Bench")
    organization = accounts.organization_create(name="Webhook bench practice", owner=owner)
    endpoints = []
    for n in range(1, ENDPOINTS + 1):
        created = services.endpoint_create(
            organization=organization,
            user=owner,
            name=f"bench receiver {n}",
            url=f"http://127.0.0.1:{port}/hooks/{n}",
            events=SUBSCRIBED,
        )
        endpoints.append(
            {"id": str(created.endpoint.id), "path": f"/hooks/{n}", "secret": created.signing_secret, "n": n}
        )
    WebhookEndpoint.objects.for_org(organization).update(enabled=True, verified_at=timezone.now())
    return {"organization": organization, "endpoints": endpoints}


def reset_tables(url: str) -> None:
    """Empty events and deliveries and free the leases, so every run starts from the same state."""
    from django.db import close_old_connections

    close_old_connections()
    with env.connect(url) as conn:
        conn.execute("TRUNCATE webhooks_webhookdelivery, events_event CASCADE")
        conn.execute("UPDATE webhooks_webhookendpoint SET lease_until = NULL, consecutive_failures = 0")
        conn.execute("VACUUM (ANALYZE) webhooks_webhookdelivery")
        conn.execute("VACUUM (ANALYZE) events_event")
        conn.execute("VACUUM (ANALYZE) webhooks_webhookendpoint")


def emit_events(organization, count: int) -> tuple[float, float, list[str]]:
    """Record `count` events in one transaction (emit_many in chunks). Returns (commit monotonic, commit wall, ids)."""
    from django.db import transaction

    from apps.events.models import Event
    from apps.events.services import Actor, PendingEvent, emit_many

    stamp: dict = {}
    with transaction.atomic():
        # Registered before the app's listener (added by the first emit_many), so it runs first after COMMIT.
        transaction.on_commit(lambda: stamp.update(mono=time.monotonic(), wall=time.time()))
        for start in range(0, count, EMIT_CHUNK):
            pending = []
            for i in range(start, min(count, start + EMIT_CHUNK)):
                if i % 2:
                    pending.append(PendingEvent("patient.created", "patient", uuid.uuid4()))
                else:
                    pending.append(
                        PendingEvent("patient.updated", "patient", uuid.uuid4(), changed_fields=("phone", "email"))
                    )
            emit_many(organization=organization, actor=Actor.system("bench"), events=pending)
    ids = [str(i) for i in Event.objects.for_org(organization).values_list("id", flat=True)]
    return stamp["mono"], stamp["wall"], ids


def emit_one(organization) -> tuple[str, float]:
    from django.db import transaction

    from apps.events.services import Actor, emit

    stamp: dict = {}
    with transaction.atomic():
        transaction.on_commit(lambda: stamp.update(mono=time.monotonic()))
        event = emit(
            organization=organization,
            type="patient.updated",
            subject_type="patient",
            subject_id=uuid.uuid4(),
            actor=Actor.system("bench"),
            changed_fields=["phone"],
        )
    return str(event.id), stamp["mono"]


def verify(records: list[tuple], endpoints: list[dict]) -> tuple[int, int]:
    """Every signature against its endpoint's secret (the README's recipe). Returns (verified, failed)."""
    secrets = {e["path"]: e["secret"] for e in endpoints}
    ok = bad = 0
    for _, path, delivery_id, timestamp, signature, body in records:
        message = f"{timestamp}.{delivery_id}.".encode() + body
        expected = "v1=" + hmac.new(secrets[path].encode(), message, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(expected, value.strip()) for value in signature.split(",")):
            ok += 1
        else:
            bad += 1
    return ok, bad


def db_outcomes(url: str) -> dict:
    with env.connect(url) as conn:
        rows = conn.execute(
            "SELECT status, count(*), min(attempts), max(attempts), max(publications) "
            "FROM webhooks_webhookdelivery WHERE kind = 'event' GROUP BY status"
        ).fetchall()
        fanned = conn.execute(
            "SELECT count(*) FILTER (WHERE fanned_out_at IS NULL), "
            "extract(epoch FROM min(fanned_out_at)), extract(epoch FROM max(fanned_out_at)) FROM events_event"
        ).fetchone()
        per_event = conn.execute(
            "SELECT count(*) FROM (SELECT event_id, endpoint_id FROM webhooks_webhookdelivery "
            "GROUP BY 1, 2 HAVING count(*) > 1) AS d"
        ).fetchone()[0]
    return {
        "by_status": {
            s: {"count": c, "min_attempts": a0, "max_attempts": a1, "max_publications": p} for s, c, a0, a1, p in rows
        },
        "unfanned_events": fanned[0],
        "fanned_first_wall": float(fanned[1]) if fanned[1] is not None else None,
        "fanned_last_wall": float(fanned[2]) if fanned[2] is not None else None,
        "duplicate_rows": per_event,
    }


def envelope_id(body: bytes) -> str:
    return json.loads(body)["id"]


# --- one configuration ----------------------------------------------------------------------------------------


def measure(*, workers_count: int, what_if: str, events: int, args, url, redis, receiver, practice, log) -> dict:
    label = f"{workers_count} worker{'s' if workers_count > 1 else ''}" + (f" + what-if {what_if}" if what_if else "")
    log(f"=== {label}: resetting tables, flushing the broker database, starting workers")
    reset_tables(url)
    env.flush_redis(redis)
    organization, endpoints = practice["organization"], practice["endpoints"]
    workers = Workers(
        workers_count,
        process_env(url, redis, what_if),
        tag="".join(n[0] for n in what_if.replace("+", "_").split("_") if n),
    )
    try:
        workers.wait_ready()
        base = receiver.count()
        emit_events(organization, WARMUP_EVENTS)
        if not receiver.wait_for(base + WARMUP_EVENTS * ENDPOINTS, 120):
            raise SystemExit(f"bench: warm-up not delivered within 120 s ({receiver.count() - base} received)")
        log(f"warm-up delivered ({WARMUP_EVENTS * ENDPOINTS}); signatures {verify(receiver.since(base), endpoints)}")
        reset_tables(url)

        quiet = wait_quiet(args.max_load, args.max_wait, log)
        log(f"load {quiet:.2f}: recording {events:,} events in one transaction")
        base = receiver.count()
        expected = events * ENDPOINTS
        watched = {**workers.pids, "receiver": receiver.process.pid}
        with Sampler(watched, env.database_name(url)) as sampler:
            t_commit, wall_commit, event_ids = emit_events(organization, events)
            log(f"committed; waiting for {expected:,} deliveries")
            t_prev = [time.monotonic(), 0]

            def progress(count: int) -> None:
                now = time.monotonic()
                rate = (count - base - t_prev[1]) / (now - t_prev[0])
                t_prev[:] = [now, count - base]
                log(
                    f"  {count - base:,}/{expected:,} received ({rate:.0f}/s over the last interval), "
                    f"load {load1():.2f}"
                )

            complete = receiver.wait_for(base + expected, args.timeout, progress)
        records = receiver.since(base)
        if not complete:
            log(f"cut after {args.timeout:.0f}s with {len(records):,}/{expected:,} deliveries")
        times = sorted(r[0] for r in records)
        elapsed = (times[-1] - t_commit) if times else float("nan")
        rate = len(records) / elapsed if times else 0.0
        log(f"{len(records):,} deliveries in {elapsed:.1f}s after commit: {rate:.1f} deliveries/s")

        # checks
        time.sleep(1.0)
        outcomes = db_outcomes(url)
        pairs = Counter((envelope_id(r[5]), r[1]) for r in records)
        delivery_ids = Counter(r[2] for r in records)
        verified, failed = verify(records, endpoints)
        wanted_pairs = {(e, ep["path"]) for e in event_ids for ep in endpoints}
        checks = {
            "received": len(records),
            "expected": expected,
            "duplicate_delivery_ids": sum(c - 1 for c in delivery_ids.values() if c > 1),
            "duplicate_event_endpoint": sum(c - 1 for c in pairs.values() if c > 1),
            "missing_event_endpoint": len(wanted_pairs - set(pairs)),
            "unexpected_event_endpoint": len(set(pairs) - wanted_pairs),
            "signatures_verified": verified,
            "signatures_failed": failed,
            "db": outcomes,
        }
        delivered = outcomes["by_status"].get("delivered", {})
        checks["ok"] = (
            complete
            and checks["duplicate_delivery_ids"] == 0
            and checks["duplicate_event_endpoint"] == 0
            and checks["missing_event_endpoint"] == 0
            and failed == 0
            and delivered.get("count") == expected
            and delivered.get("max_attempts") == 1
            and set(outcomes["by_status"]) == {"delivered"}
            and outcomes["duplicate_rows"] == 0
        )
        log(f"checks: {'OK' if checks['ok'] else 'FAILED'} {json.dumps(checks, default=str)}")
        per_endpoint = {}
        for ep in endpoints:
            mine = [r[0] for r in records if r[1] == ep["path"]]
            if mine:
                per_endpoint[ep["path"]] = {"first_s": min(mine) - t_commit, "last_s": max(mine) - t_commit}
        fan_out_s = (outcomes["fanned_last_wall"] - wall_commit) if outcomes["fanned_last_wall"] else None
        worker_cpu = sum(v for k, v in sampler.cpu.items() if k != "receiver")
        throughput = {
            "label": label,
            "at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "workers": workers_count,
            "what_if": what_if,
            "events": events,
            "deliveries": len(records),
            "complete": complete,
            "elapsed_s": elapsed,
            "rate": rate,
            "first_receipt_s": times[0] - t_commit if times else None,
            "fan_out_last_batch_start_s": fan_out_s,
            "per_endpoint": per_endpoint,
            "worker_cpu_ms_per_delivery": 1000 * worker_cpu / len(records) if records else None,
            "postgres_cpu_ms_per_delivery": 1000 * sampler.postgres_cpu / len(records) if records else None,
            "other_work_cores": (sampler.postgres_other + sampler.other_cpu) / sampler.seconds,
            "receiver_cpu_ms_per_delivery": 1000 * sampler.cpu["receiver"] / len(records) if records else None,
            "sampler": sampler.summary(),
            "checks": checks,
        }

        # idle latency
        if args.latency_events:
            time.sleep(2.0)
            quiet = wait_quiet(args.max_load, args.max_wait, log)
            log(
                f"load {quiet:.2f}: idle latency, {args.latency_events} single events, each {args.latency_spacing}s "
                "after the previous one's deliveries all arrived"
            )
            base = receiver.count()
            commits: dict[str, float] = {}
            backlog = 0
            with Sampler(watched, env.database_name(url)) as lat_sampler:
                for i in range(args.latency_events):
                    # Idle: the previous event's 5 deliveries have all arrived before the pause and the next commit.
                    if not receiver.wait_for(base + i * ENDPOINTS, 30):
                        backlog += 1
                    time.sleep(args.latency_spacing)
                    event_id, t = emit_one(organization)
                    commits[event_id] = t
                done = receiver.wait_for(base + args.latency_events * ENDPOINTS, 120)
            records = receiver.since(base)
            latencies = [r[0] - commits[envelope_id(r[5])] for r in records if envelope_id(r[5]) in commits]
            by_event = defaultdict(list)
            for r in records:
                by_event[envelope_id(r[5])].append(r[0])
            last_of_event = [max(v) - commits[k] for k, v in by_event.items() if k in commits]
            latency = {
                "n": len(latencies),
                "complete": done,
                "p50_ms": 1000 * quantile(latencies, 50),
                "p95_ms": 1000 * quantile(latencies, 95),
                "max_ms": 1000 * max(latencies),
                "last_of_event_p50_ms": 1000 * quantile(last_of_event, 50),
                "last_of_event_p95_ms": 1000 * quantile(last_of_event, 95),
                "signatures": verify(records, endpoints),
                "not_idle": backlog,
                "sampler": lat_sampler.summary(),
            }
            log(
                f"commit-to-receipt p50 {latency['p50_ms']:.0f} ms, p95 {latency['p95_ms']:.0f} ms "
                f"(n={latency['n']}, all 5 of an event: p50 {latency['last_of_event_p50_ms']:.0f} ms)"
            )
        else:
            latency = None
    finally:
        workers.stop()
    return {"throughput": throughput, "latency": latency}


# --- in-process: statements, time split, plan -----------------------------------------------------------------


def in_process_profile(url: str, practice: dict, log) -> dict:
    """Workers stopped. The statements of one drain batch, a timed drain of 200 deliveries and the claim's plan."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from apps.webhooks import delivery as engine
    from apps.webhooks import sender
    from apps.webhooks.models import WebhookDelivery

    organization, endpoints = practice["organization"], practice["endpoints"]
    batch = engine.CLAIM_BATCH
    timed = 200
    emit_events(organization, batch + timed)  # publishes a fan_out nobody consumes (the broker db is flushed later)
    # (every endpoint gets batch + timed deliveries: the first is drained as is, the next ones with any what-ifs)
    while engine.fan_out()[0]:
        pass
    first = endpoints[0]["id"]
    rows_in_table = WebhookDelivery.objects.unscoped().count()

    # Statements of one drain of one claim batch.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(1.2)
    commits_before = _xact_commits(url)
    with CaptureQueriesContext(connection) as ctx:
        result = engine.drain_endpoint(first, max_deliveries=batch)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(1.2)
    commits = _xact_commits(url) - commits_before - 2  # the two flush calls commit too
    statements = [q["sql"] for q in ctx.captured_queries]
    kinds = Counter(_statement_kind(s) for s in statements)
    log(f"one drain of {result.sent} deliveries: {len(statements)} statements, {commits} commits: {dict(kinds)}")

    # EXPLAIN (ANALYZE, BUFFERS) of the first statement of each kind, exactly as sent (psycopg binds client-side,
    # so the captured text is what PostgreSQL received), each in a transaction rolled back.
    plans = {}
    for sql in statements:
        kind = _statement_kind(sql)
        if kind in plans or not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "WITH", "DELETE")):
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plans[kind] = (sql, "\n".join(row[0] for row in cursor.fetchall()))
            transaction.set_rollback(True)

    # A timed drain of 200 deliveries: database time (DEBUG's per-query timings), sender.post time (and the
    # httpx.Client construction inside it), the rest.
    spans = {"post": 0.0, "client": 0.0}
    original_post, original_client = sender.post, sender.httpx.Client

    def timed_post(*a, **k):
        t = time.perf_counter()
        try:
            return original_post(*a, **k)
        finally:
            spans["post"] += time.perf_counter() - t

    class TimedClient(original_client):
        def __init__(self, *a, **k):
            t = time.perf_counter()
            super().__init__(*a, **k)
            spans["client"] += time.perf_counter() - t

    import httpx

    sender.post = timed_post
    httpx.Client = TimedClient
    try:
        connection.queries_log.clear()
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        with CaptureQueriesContext(connection) as ctx:
            result = engine.drain_endpoint(first, max_deliveries=timed)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    finally:
        sender.post, httpx.Client = original_post, original_client
    db_s = sum(float(q["time"]) for q in ctx.captured_queries)
    profile = {
        "sent": result.sent,
        "wall_ms": 1000 * wall / result.sent,
        "cpu_ms": 1000 * cpu / result.sent,
        "db_ms": 1000 * db_s / result.sent,
        "post_ms": 1000 * spans["post"] / result.sent,
        "client_ms": 1000 * spans["client"] / result.sent,
        "statements": len(ctx.captured_queries) / result.sent,
        "load": load1(),
    }
    profile["other_ms"] = profile["wall_ms"] - profile["db_ms"] - profile["post_ms"]
    log(f"in-process drain of {result.sent}: {json.dumps({k: round(v, 2) for k, v in profile.items()})}")

    # The same with the proposed fixes applied in this process, each on an endpoint of its own.
    from bench.webhooks.worker import KNOWN, apply_what_if, what_if_names

    fixed = {}
    for index, spec in enumerate(KNOWN, start=1):
        undo = apply_what_if(what_if_names(spec))
        try:
            t0 = time.perf_counter()
            cpu0 = time.process_time()
            with CaptureQueriesContext(connection) as ctx:
                result = engine.drain_endpoint(endpoints[index]["id"], max_deliveries=timed)
            fixed[spec] = {
                "sent": result.sent,
                "wall_ms": 1000 * (time.perf_counter() - t0) / result.sent,
                "cpu_ms": 1000 * (time.process_time() - cpu0) / result.sent,
                "db_ms": 1000 * sum(float(q["time"]) for q in ctx.captured_queries) / result.sent,
                "statements": len(ctx.captured_queries) / result.sent,
                "load": load1(),
            }
        finally:
            undo()
        log(f"...what-if {spec}: {json.dumps({k: round(v, 2) for k, v in fixed[spec].items()})}")
    return {
        "batch": {
            "deliveries": batch,
            "statements": statements,
            "kinds": dict(kinds),
            "commits": commits,
        },
        "profile": profile,
        "profile_what_if": fixed,
        "plans": plans,
        "rows_in_table": rows_in_table,
    }


def _xact_commits(url: str) -> int:
    with env.connect(url) as conn:
        return conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()[0]


def _statement_kind(sql: str) -> str:
    """A short label for a statement of drain_endpoint (which function sends it)."""
    text = " ".join(sql.split())
    upper = text.upper()
    if upper.startswith("WITH DUE AS"):
        return "claim: WITH due … UPDATE delivery … RETURNING id"
    table = (
        "endpoint"
        if "WEBHOOKS_WEBHOOKENDPOINT" in upper[:120]
        else "delivery"
        if "WEBHOOKS_WEBHOOKDELIVERY" in upper[:120]
        else ""
    )
    verb = upper.split()[0]
    if table == "endpoint" and verb == "UPDATE":
        if "RETURNING ENABLED" in upper:
            return "UPDATE endpoint SET lease_until … RETURNING enabled, paused, url, archived_at (renew + re-read)"
        if 'SET "LEASE_UNTIL" = NULL' in upper:
            return "UPDATE endpoint SET lease_until = NULL (release)"
        if 'SET "LEASE_UNTIL"' in upper:
            return "UPDATE endpoint SET lease_until (take)"
        if '"CONSECUTIVE_FAILURES"' in upper:
            return "UPDATE endpoint SET consecutive_failures (_finish)"
        return "UPDATE endpoint (other)"
    if table == "endpoint" and verb == "SELECT":
        if '"SECRET_ENCRYPTED"' in upper:
            return "SELECT endpoint (every column)"
        return "SELECT endpoint (refresh_from_db)"
    if table == "delivery" and verb == "UPDATE":
        if "RETRIES EXHAUSTED" in upper:
            return "UPDATE delivery … retries exhausted (expire_exhausted)"
        if '"BODY"' in upper:
            return "UPDATE delivery SET every column (_finish: delivery.save())"
        if """"STATUS" = 'DELIVERED'""" in upper:
            return "UPDATE delivery SET changed columns (_finish)"
        return "UPDATE delivery (other)"
    if table == "delivery" and verb == "SELECT":
        return "SELECT delivery WHERE id IN (claimed)"
    return f"{verb} {table}".strip()


# --- main -----------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    started_at = datetime.datetime.now(datetime.UTC)
    t_start = time.monotonic()

    log = logger("bench webhooks", t_start)

    RESULTS.mkdir(parents=True, exist_ok=True)
    url, redis = database_url(), redis_url()
    env.flush_redis(redis)
    log(f"flushed the broker database {redis}")
    log(f"database {env.database_name(url)}: dropping, creating, migrating")
    environ = process_env(url, redis)
    log(f"migrated in {env.rebuild(url, environ):.1f}s")
    setup_django(url, redis)

    receiver = Receiver(environ)
    log(f"receiver on 127.0.0.1:{receiver.port} (pid {receiver.process.pid})")
    results = {"runs": [], "started": started_at.isoformat()}
    try:
        practice = create_practice(receiver.port)
        log(f"practice {practice['organization'].pk} with {ENDPOINTS} endpoints")
        plan = [(n, "", args.events) for n in args.worker_counts]
        plan += [(n, w, args.what_if_events or args.events) for w in args.what_ifs for n in args.what_if_counts]
        for count, what_if, events in plan:
            results["runs"].append(
                measure(
                    workers_count=count,
                    what_if=what_if,
                    events=events,
                    args=args,
                    url=url,
                    redis=redis,
                    receiver=receiver,
                    practice=practice,
                    log=log,
                )
            )
        log("in-process: statements of one drain batch, timed drain, claim plan")
        results["in_process"] = in_process_profile(url, practice, log)
        if args.history:
            from bench.webhooks import history

            results["history"] = history.run(url, args.history, log)
    finally:
        receiver.stop()
        env.flush_redis(redis)

    import redis as redis_client

    from bench.measure import machine
    from bench.webhooks import report

    with env.connect(url) as conn:
        results["machine"] = machine(conn)
        results["machine"]["redis"] = redis_client.Redis.from_url(redis).info("server")["redis_version"]
    import celery
    import httpx

    results["machine"]["celery"] = f"Celery {celery.__version__}, httpx {httpx.__version__}"
    results["seconds"] = time.monotonic() - t_start
    results["args"] = {k: v for k, v in vars(args).items()}
    raw = RESULTS / "webhooks.json"
    if args.merge and raw.exists():
        previous = json.loads(raw.read_text())
        measured = {run["throughput"]["label"] for run in results["runs"]}
        kept = [run for run in previous.get("runs", []) if run["throughput"]["label"] not in measured]
        for run in kept:
            if "at" not in run["throughput"]:
                at = datetime.datetime.fromisoformat(previous["started"])
                run["throughput"]["at"] = at.strftime("%Y-%m-%d %H:%M UTC")
        log(f"--merge: keeping {[r['throughput']['label'] for r in kept]} from {raw}")
        order = {label: i for i, label in enumerate(r["throughput"]["label"] for r in previous.get("runs", []))}
        results["runs"] = sorted(kept + results["runs"], key=lambda r: order.get(r["throughput"]["label"], len(order)))
        if "history" not in results and previous.get("history"):
            results["history"] = previous["history"]
    publish(
        report.section(results, started_at),
        raw,
        results,
        title="Outbound webhooks",
        write=report.write_doc,
        skipped="--no-doc" if args.no_doc else "",
        log=log,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
