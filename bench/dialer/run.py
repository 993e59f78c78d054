"""python -m bench dialer — signed telephony call events acknowledged per second through the real stack (issue 22;
target ≥ 500 acknowledged/s), and how long the worker takes to apply them.

1. Database practice_crm_bench_dialer (BENCH_DIALER_DATABASE_URL overrides) rebuilt and migrated; Redis database 10
   (BENCH_DIALER_REDIS_URL) flushed and used by the server and the worker (broker, cache, drain flags). Settings
   bench.settings (the development settings: the telephony provider is the sandbox, so nothing leaves the machine).
2. A practice (manage.py create_practice --api-key), a dialer connection made through POST /dialer/connections with
   the public key of an Ed25519 pair generated here, one practice number ordered through POST /dialer/numbers, and
   --patients patients with distinct mobile numbers (through the services).
3. The serving stack `python -m config.serve` (nginx, a gunicorn worker per core, daphne). --count call events are
   prepared and signed as Telnyx signs them (telnyx-signature-ed25519 over "timestamp|body"), each with a new event
   id: calls of three events each (call.initiated, call.answered, call.hangup; every fifth call missed: initiated
   and hangup only), 90 % from the patients' numbers. wrk sends each once (bench/throughput/requests.lua, mode
   "once") on --connections connections for at most --seconds seconds.
4. Phase "alone": no worker runs (the acknowledging path alone: workers run on other machines in production).
   Phase "with worker": the same load with one real Celery worker (prefork, concurrency 2) on the same cores.
   Acknowledged/s = 200 answers / the window; latency p50/p99 from wrk; every answer must be 200.
5. After each phase the worker applies what arrived: the seconds until no event is left waiting are reported.
The signatures carry the time they were made: a run must start within five minutes of the preparation (it does).
Figures go to bench/results/dialer.json.
"""

import argparse
import base64
import datetime
import json
import os
import time
import uuid

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bench import env
from bench.paths import RESULTS, VENV_BIN
from bench.throughput import wrk
from bench.throughput.servers import StackServer

DEFAULT_URL = env.DEFAULT_URL + "_dialer"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/10"
PRACTICE_NUMBER = "+390200000000"


def log(message: str) -> None:
    print(f"[bench dialer] {message}", flush=True)


def iso(moment: datetime.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def call_events(caller: str, *, missed: bool) -> list[dict]:
    """One inbound call's events as the provider sends them (each with its own event id)."""
    leg, session = str(uuid.uuid4()), str(uuid.uuid4())
    start = datetime.datetime.now(datetime.UTC)
    base = {
        "call_control_id": f"v3:{leg}",
        "call_leg_id": leg,
        "call_session_id": session,
        "connection_id": "bench-app",
        "direction": "incoming",
        "from": caller,
        "to": PRACTICE_NUMBER,
    }
    moments = [("call.initiated", 0)] + ([] if missed else [("call.answered", 4)]) + [("call.hangup", 64)]
    events = []
    for kind, offset in moments:
        at = start + datetime.timedelta(seconds=offset)
        payload = {**base, "start_time": iso(start)}
        if kind == "call.hangup":
            payload.update(hangup_cause="originator_cancel" if missed else "normal_clearing", end_time=iso(at))
        events.append(
            {
                "data": {
                    "event_type": kind,
                    "id": str(uuid.uuid4()),
                    "occurred_at": iso(at),
                    "payload": payload,
                    "record_type": "event",
                },
                "meta": {"attempt": 1, "delivered_to": "https://bench.example/webhooks/telephony"},
            }
        )
    return events


def signed_requests(key: Ed25519PrivateKey, host: str, path: str, callers: list[str], count: int) -> list[bytes]:
    requests, n = [], 0
    timestamp = str(int(time.time()))
    while len(requests) < count:
        for event in call_events(callers[n % len(callers)], missed=n % 5 == 0):
            raw = json.dumps(event).encode()
            signature = base64.b64encode(key.sign(timestamp.encode() + b"|" + raw)).decode()
            headers = {
                "Content-Type": "application/json",
                "telnyx-signature-ed25519": signature,
                "telnyx-timestamp": timestamp,
            }
            requests.append(wrk.raw_request("POST", path, host=host, headers=headers, body=raw))
        n += 1
    return requests[:count]


def wait_applied(conn, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        left = conn.execute("SELECT count(*) FROM dialer_telephonyevent WHERE state = 'received'").fetchone()[0]
        if not left:
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit(f"bench dialer: events still waiting after {timeout:.0f}s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dialer", description=__doc__)
    parser.add_argument("--patients", type=int, default=1000)
    parser.add_argument("--count", type=int, default=20000, help="callbacks prepared per phase (each sent once)")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alone-only", action="store_true", help="skip the phase with the worker on the same cores")
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_DIALER_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_DIALER_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    binary = wrk.ensure()
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    created = json.loads(
        env.manage(
            url,
            "create_practice",
            "--name",
            "Dialer bench",
            "--owner-email",
            "owner@dialer.example",
            "--owner-password",
            "bench-password-1",
            "--api-key",
            "--json",
        )
        .strip()
        .splitlines()[-1]
    )
    env.setup_django(url)
    from apps.accounts.models import Organization
    from apps.patients.services import patient_create

    organization = Organization.objects.get(pk=created["organizationId"])
    callers = [f"+39333{n:07d}" for n in range(args.patients)]
    for n, number in enumerate(callers):
        patient_create(organization=organization, user=None, data={"first_name": f"P{n}", "phone_mobile": number})
    callers = [c if i % 10 else f"+39347{i:07d}" for i, c in enumerate(callers)]  # 10 % unknown numbers
    log(f"{args.patients} patients created")

    key = Ed25519PrivateKey.generate()
    public_key = base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
    server = StackServer("new", env.server_env(url))

    def start_worker():
        return env.CeleryWorkers(
            ["benchdialer"],
            env=env.server_env(url),
            log_paths=[RESULTS / "dialer-worker.log"],
            commands=[
                [
                    str(VENV_BIN / "celery"),
                    "-A",
                    "config",
                    *env.worker_arguments("benchdialer", pool="prefork", concurrency=2),
                ]
            ],
        )

    worker = None
    figures: dict = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        server.start()
        headers = {"Authorization": f"Bearer {created['apiKey']}"}
        made = httpx.post(
            server.base_url + "/dialer/connections",
            json={
                "name": "Bench line",
                "apiKey": "KEY-bench-0123456789",
                "publicKey": public_key,
                "callControlAppId": "bench-app",
            },
            headers=headers,
            timeout=30,
        )
        if made.status_code != 201:
            raise SystemExit(f"bench dialer: connection not made ({made.status_code}): {made.text[:300]}")
        ordered = httpx.post(
            server.base_url + "/dialer/numbers", json={"phoneNumber": PRACTICE_NUMBER}, headers=headers, timeout=30
        )
        if ordered.status_code != 201:
            raise SystemExit(f"bench dialer: number not ordered ({ordered.status_code}): {ordered.text[:300]}")
        path = "/webhooks/telephony/" + made.json()["webhookUrl"].rsplit("/", 1)[1]
        host = f"127.0.0.1:{server.port}"
        conn = env.connect(url)

        def load(name: str) -> wrk.Result:
            file = wrk.write_requests(RESULTS / name, signed_requests(key, host, path, callers, args.count))
            log(f"wrk: {args.count} signed call events, {args.connections} connections, at most {args.seconds:g}s")
            result, _ = wrk.run(
                server.base_url,
                file,
                threads=args.threads,
                connections=args.connections,
                seconds=args.seconds,
                once=True,
                binary=binary,
            )
            others = {code: n for code, n in result.statuses.items() if code != "200"}
            if others or result.errors:
                raise SystemExit(f"bench dialer: answers other than 200: {others}, socket errors {result.errors}")
            return result

        def report(name: str, result: wrk.Result) -> None:
            figures[name] = {
                "acknowledged_per_second": round(result.statuses.get("200", 0) / result.seconds, 1),
                "answered": result.statuses.get("200", 0),
                "window_seconds": result.seconds,
                "latency_p50_ms": result.p50_ms,
                "latency_p99_ms": result.p99_ms,
            }
            log(f"{name}: {json.dumps(figures[name])}")

        # Phase 1: the acknowledging path alone; then a worker applies the backlog.
        alone = load("dialer-requests-alone.bin")
        report("alone", alone)
        worker = start_worker()
        worker.wait_ready()
        figures["alone"]["apply_seconds_after"] = round(wait_applied(conn, timeout=900), 1)
        # Phase 2: the same load with the worker on the same cores.
        if not args.alone_only:
            loaded = load("dialer-requests-worker.bin")
            report("with_worker", loaded)
            figures["with_worker"]["apply_seconds_after"] = round(wait_applied(conn, timeout=900), 1)
        totals = conn.execute("SELECT status, count(*) FROM dialer_call GROUP BY status ORDER BY status").fetchall()
        figures["calls_by_status"] = dict(totals)
        figures["failed_events"] = conn.execute(
            "SELECT count(*) FROM dialer_telephonyevent WHERE state = 'failed'"
        ).fetchone()[0]
    finally:
        if worker is not None:
            worker.stop()
        server.stop()
    figures.update(connections=args.connections, threads=args.threads, count=args.count, patients=args.patients)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "dialer.json").write_text(json.dumps(figures, indent=2))
    log(json.dumps(figures))
    return 0
