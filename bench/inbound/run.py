"""python -m bench inbound — inbound SMS callbacks acknowledged per second through the real stack, and the lag from
callback to inbox (issue 18; targets ≥ 500 acknowledged/s with p99 < 100 ms, lag p50 < 1 s when idle).

1. Database practice_crm_bench_inbound (BENCH_INBOUND_DATABASE_URL overrides) rebuilt and migrated; Redis database
   13 (BENCH_INBOUND_REDIS_URL) flushed and used by the servers and the worker (broker, cache, rate limits).
2. A practice (manage.py create_practice --api-key), an SMS connection made through POST
   /settings/channel-connections, and --patients patients with distinct mobile numbers (through the services).
3. The serving stack `python -m config.serve` (nginx, a gunicorn worker per core, daphne) and one real Celery worker
   (prefork, concurrency 2) on that database and broker, competing for the same 2 cores as PostgreSQL.
4. --count callbacks signed as Twilio signs them (X-Twilio-Signature over the URL and the sorted form), each with a
   new MessageSid; 90 % from the patients' numbers, 10 % from unknown numbers (an enquiry each). wrk sends each once
   (bench/throughput/requests.lua, mode "once") on --connections connections for at most --seconds seconds.
5. Acknowledged/s = 200 answers / the window; latency p50/p99 from wrk. Every answer must be 200. Then the same
   load again with the Celery worker stopped (the acknowledging path alone, as when workers run on other
   machines), and the worker started again to work it off.
6. Lag: the workers go on until no delivery is left; callback-to-inbox lag = the message row's created_at minus its
   receipt's created_at (the receipt is claimed when the callback arrives), p50/p95/p99 over the loaded run, then
   again for --idle callbacks sent one at a time, half a second apart, on the quiet machine.
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import secrets
import statistics
import time
from urllib.parse import urlencode

import httpx

from bench import env
from bench.measure import quantile
from bench.paths import RESULTS, VENV_BIN
from bench.throughput import wrk
from bench.throughput.servers import StackServer

DEFAULT_URL = env.DEFAULT_URL + "_inbound"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
AUTH_TOKEN = "bench-inbound-auth-token"
PRACTICE_NUMBER = "+390200000000"


def log(message: str) -> None:
    print(f"[bench inbound] {message}", flush=True)


def signature(url: str, params: dict) -> str:
    """As Twilio signs a callback (twilio-python's RequestValidator), written out here independently of the app."""
    signed = url + "".join(f"{name}{params[name]}" for name in sorted(params))
    return base64.b64encode(hmac.new(AUTH_TOKEN.encode(), signed.encode(), hashlib.sha1).digest()).decode()


def signed_request(host: str, path: str, params: dict) -> bytes:
    body = urlencode(params).encode()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Twilio-Signature": signature(f"http://{host}{path}", params),
    }
    return wrk.raw_request("POST", path, host=host, headers=headers, body=body)


def sms(sender: str) -> dict:
    return {
        "MessageSid": "SM" + secrets.token_hex(16),
        "AccountSid": "AC" + "0" * 32,
        "From": sender,
        "To": PRACTICE_NUMBER,
        "Body": "Buongiorno, vorrei spostare l'appuntamento di giovedì",
        "NumMedia": "0",
    }


def lags_ms(conn, since: datetime.datetime) -> list[float]:
    """created_at of each inbound message row (when the worker stored it) minus the created_at of its receipt."""
    rows = conn.execute(
        """
        SELECT extract(epoch FROM m.created_at - r.created_at) * 1000
        FROM conversations_message m
        JOIN conversations_providerreceipt r
          ON r.digest = encode(sha256(convert_to(m.provider_message_id, 'UTF8')), 'hex')
        WHERE m.created_at >= %s
        """,
        [since],
    ).fetchall()
    return [float(row[0]) for row in rows]


def wait_processed(conn, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        left = conn.execute("SELECT count(*) FROM conversations_inbounddelivery WHERE state = 'received'").fetchone()
        if not left[0]:
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit(f"bench inbound: deliveries still waiting after {timeout:.0f}s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench inbound", description=__doc__)
    parser.add_argument("--patients", type=int, default=1000)
    parser.add_argument("--count", type=int, default=20000, help="callbacks prepared (each sent once)")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--idle", type=int, default=20, help="callbacks sent one at a time afterwards")
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_INBOUND_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_INBOUND_REDIS_URL", DEFAULT_REDIS_URL)
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
            "Inbound bench",
            "--owner-email",
            "owner@inbound.example",
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
    numbers = [f"+39333{n:07d}" for n in range(args.patients)]
    for n, number in enumerate(numbers):
        patient_create(organization=organization, user=None, data={"first_name": f"P{n}", "phone_mobile": number})
    log(f"{args.patients} patients created")

    server = StackServer("new", env.server_env(url))

    def start_workers():
        return env.CeleryWorkers(
            ["benchinbound"],
            env=env.server_env(url),
            log_paths=[RESULTS / "inbound-worker.log"],
            commands=[
                [
                    str(VENV_BIN / "celery"),
                    "-A",
                    "config",
                    *env.worker_arguments("benchinbound", pool="prefork", concurrency=2),
                ]
            ],
        )

    workers = start_workers()
    try:
        server.start()
        workers.wait_ready()
        made = httpx.post(
            server.base_url + "/settings/channel-connections",
            json={
                "kind": "sms",
                "name": "Bench SMS",
                "address": PRACTICE_NUMBER,
                "credentials": {"accountSid": "AC" + "0" * 32, "authToken": AUTH_TOKEN},
            },
            headers={"Authorization": f"Bearer {created['apiKey']}"},
            timeout=30,
        )
        if made.status_code != 201:
            raise SystemExit(f"bench inbound: connection not made ({made.status_code}): {made.text[:300]}")
        path = f"/webhooks/sms/{made.json()['routingToken']}"
        host = f"127.0.0.1:{server.port}"

        def load(name: str, senders: list[str]):
            """wrk sends one signed callback from each sender, each once; every answer must be 200."""
            file = wrk.write_requests(RESULTS / name, [signed_request(host, path, sms(sender)) for sender in senders])
            log(f"wrk: {len(senders)} signed callbacks, {args.connections} connections, at most {args.seconds:g}s")
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
            if others:
                raise SystemExit(f"bench inbound: answers other than 200: {others}")
            return result

        conn = env.connect(url)
        started_at = datetime.datetime.now(datetime.UTC)
        result = load(
            "inbound-requests.bin",
            [numbers[i % len(numbers)] if i % 10 else f"+39347{i:07d}" for i in range(args.count)],
        )
        drained = wait_processed(conn, timeout=600)
        loaded = lags_ms(conn, started_at)

        # The acknowledging path alone: the same load with the worker stopped (processing on other machines, as in
        # production), then the worker started again to work off what arrived.
        workers.stop()
        alone = load("inbound-requests-alone.bin", [numbers[(i * 7) % len(numbers)] for i in range(args.count)])
        workers = start_workers()
        workers.wait_ready()
        wait_processed(conn, timeout=600)
        idle_since = datetime.datetime.now(datetime.UTC)
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            for i in range(args.idle):
                params = sms(numbers[i % len(numbers)])
                answer = client.post(
                    path,
                    content=urlencode(params),
                    headers={
                        "Content-Type": "application/x-www-form-urlencoded",
                        "X-Twilio-Signature": signature(f"http://{host}{path}", params),
                    },
                )
                if answer.status_code != 200:
                    raise SystemExit(f"bench inbound: idle callback answered {answer.status_code}")
                time.sleep(0.5)
        wait_processed(conn, timeout=60)
        idle = lags_ms(conn, idle_since)
    finally:
        workers.stop()
        server.stop()
    figures = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "acknowledged_per_second": round(result.statuses.get("200", 0) / result.seconds, 1),
        "answered": result.statuses.get("200", 0),
        "window_seconds": result.seconds,
        "latency_p50_ms": result.p50_ms,
        "latency_p99_ms": result.p99_ms,
        "drain_seconds_after_load": round(drained, 1),
        "acknowledged_per_second_no_worker": round(alone.statuses.get("200", 0) / alone.seconds, 1),
        "latency_p50_ms_no_worker": alone.p50_ms,
        "latency_p99_ms_no_worker": alone.p99_ms,
        "loaded_lag_ms": {p: round(quantile(loaded, p), 1) if loaded else None for p in (50, 95, 99)},
        "idle_lag_ms": {p: round(quantile(idle, p), 1) if idle else None for p in (50, 95, 99)},
        "messages": len(loaded) + len(idle),
        "connections": args.connections,
        "mean_loaded_lag_ms": round(statistics.mean(loaded), 1) if loaded else None,
    }
    (RESULTS / "inbound.json").write_text(json.dumps(figures, indent=2))
    log(json.dumps(figures))
    return 0
