"""python -m bench leadads — native lead ads: batched short-video lead bodies of 100 leads, processed leads per second
(issue 22). Two figures, kept apart: the intake (signed bodies saved through the real server) and the processing
(the Celery task function turning saved bodies into patients, journeys, touches and consent).

1. Database practice_crm_bench_leadads (BENCH_LEADADS_DATABASE_URL overrides) rebuilt and migrated; Redis database
   12 (BENCH_LEADADS_REDIS_URL) flushed and used by the server and the worker (broker, cache, limits). Settings
   bench.settings (dev settings: the short-video app secret is the fixed development one).
2. A practice (manage.py create_practice --api-key) and a short-video lead-ad connection made through
   POST /lead-ads/connections on the serving stack `python -m config.serve` (nginx, a gunicorn worker per core).
3. Intake: --bodies bodies of 100 leads each (distinct lead ids, e-mails and phones), each signed as the platform
   signs (TikTok-Signature over "t.body"), posted once each by --connections threads (httpx) with no worker
   running. Bodies/s and leads/s acknowledged = answered 200 / wall time; latency p50/p99 per body.
4. Processing, task function: this process calls apps.leadads.tasks.process_intake(id) for each saved body, one after
   another (what a worker's task does): leads/s = leads made / time.
5. Processing, worker: a real Celery worker (prefork, concurrency 2) is started, --worker-bodies more bodies are
   posted, and the clock runs from the first post until every body is settled: end-to-end leads/s.
Every lead must end processed. Figures go to bench/results/leadads.json.
"""

import argparse
import datetime
import json
import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench import env
from bench.measure import quantile
from bench.paths import RESULTS, VENV_BIN
from bench.throughput.servers import StackServer

DEFAULT_URL = env.DEFAULT_URL + "_leadads"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
ADVERTISER = "7000000000001"
LEADS_PER_BODY = 100


def log(message: str) -> None:
    print(f"[bench leadads] {message}", flush=True)


def body(batch: str) -> bytes:
    leads = [
        {
            "lead_id": f"bench-{batch}-{n}",
            "advertiser_id": ADVERTISER,
            "campaign_id": "bench-campaign",
            "ad_id": "bench-ad",
            "form_id": "bench-form",
            "create_time": int(time.time()),
            "is_test": False,
            "ttclid": f"E.C.P.{batch}{n}",
            "fields": [
                {"name": "name", "value": f"Bench Lead{n}"},
                {"name": "email", "value": f"lead-{batch}-{n}@bench.example"},
                {"name": "phone_number", "value": f"+4477{abs(hash((batch, n))) % 10**8:08d}"},
            ],
            "consent": n % 2 == 0,
        }
        for n in range(LEADS_PER_BODY)
    ]
    return json.dumps({"leads": leads}).encode()


def post_all(base_url: str, secret: str, bodies: list[bytes], connections: int) -> tuple[float, list[float], dict]:
    """Each body posted once, signed; (wall seconds, latencies in ms, status counts)."""
    from apps.leadads import signatures

    statuses: dict[int, int] = {}
    latencies: list[float] = []

    def send(raw: bytes, client: httpx.Client) -> tuple[int, float]:
        started = time.perf_counter()
        response = client.post(
            "/webhooks/lead-ads/short-video",
            content=raw,
            headers={"Content-Type": "application/json",
                     signatures.SHORT_VIDEO_HEADER: signatures.short_video_header(secret, raw)},
        )  # fmt: skip
        return response.status_code, (time.perf_counter() - started) * 1000

    clients = [httpx.Client(base_url=base_url, timeout=60) for _ in range(connections)]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=connections) as pool:
        futures = [pool.submit(send, raw, clients[i % connections]) for i, raw in enumerate(bodies)]
        for future in futures:
            status, ms = future.result()
            statuses[status] = statuses.get(status, 0) + 1
            latencies.append(ms)
    wall = time.perf_counter() - started
    for client in clients:
        client.close()
    return wall, latencies, statuses


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench leadads", description=__doc__)
    parser.add_argument("--bodies", type=int, default=40, help="bodies of 100 leads for the intake and task figures")
    parser.add_argument("--worker-bodies", type=int, default=20, help="bodies of 100 leads through a real worker")
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_LEADADS_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_LEADADS_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    created = json.loads(
        env.manage(url, "create_practice", "--name", "Lead ads bench", "--owner-email", "owner@leadads.example",
                   "--owner-password", "bench-password-1", "--api-key", "--json")
        .strip()
        .splitlines()[-1]
    )  # fmt: skip
    env.setup_django(url)
    from django.conf import settings

    from apps.leadads.models import LeadAdSubmission, LeadIntake
    from apps.leadads.tasks import process_intake

    secret = settings.SVC_LEAD_ADS_SHORT_VIDEO_SECRET
    server = StackServer("new", env.server_env(url))
    workers = None
    try:
        server.start()
        made = httpx.post(
            server.base_url + "/lead-ads/connections",
            json={"platform": "short_video", "name": "Bench advertiser", "externalId": ADVERTISER},
            headers={"Authorization": f"Bearer {created['apiKey']}"},
            timeout=30,
        )
        if made.status_code != 201:
            raise SystemExit(f"bench leadads: connection not made ({made.status_code}): {made.text[:300]}")

        # Intake alone (no worker consumes the queued messages).
        bodies = [body(f"a{i}-{secrets.token_hex(3)}") for i in range(args.bodies)]
        log(f"intake: {len(bodies)} bodies of {LEADS_PER_BODY} leads, {args.connections} connections")
        wall, latencies, statuses = post_all(server.base_url, secret, bodies, args.connections)
        if set(statuses) != {200}:
            raise SystemExit(f"bench leadads: answers other than 200: {statuses}")

        # Processing with the task function, in this process.
        waiting = list(LeadIntake.objects.filter(status="received").order_by("created_at").values_list("id", flat=True))
        log(f"task function: {len(waiting)} bodies")
        started = time.perf_counter()
        outcomes = [process_intake(str(intake_id)) for intake_id in waiting]
        task_seconds = time.perf_counter() - started
        if set(outcomes) != {"processed"}:
            raise SystemExit(f"bench leadads: task outcomes {outcomes}")
        processed = LeadAdSubmission.objects.unscoped().filter(status="processed").count()
        if processed != args.bodies * LEADS_PER_BODY:
            raise SystemExit(f"bench leadads: {processed} leads processed of {args.bodies * LEADS_PER_BODY}")

        # End to end through a real worker.
        workers = env.CeleryWorkers(
            ["benchleadads"],
            env=env.server_env(url),
            log_paths=[RESULTS / "leadads-worker.log"],
            commands=[[str(VENV_BIN / "celery"), "-A", "config",
                       *env.worker_arguments("benchleadads", pool="prefork", concurrency=2)]],
        )  # fmt: skip
        workers.wait_ready()
        more = [body(f"w{i}-{secrets.token_hex(3)}") for i in range(args.worker_bodies)]
        log(f"worker: {len(more)} bodies of {LEADS_PER_BODY} leads")
        started = time.perf_counter()
        _, worker_latencies, statuses = post_all(server.base_url, secret, more, args.connections)
        if set(statuses) != {200}:
            raise SystemExit(f"bench leadads: answers other than 200 with the worker: {statuses}")
        deadline = time.monotonic() + 1800
        while LeadIntake.objects.filter(status="received").exists():
            if time.monotonic() > deadline:
                raise SystemExit("bench leadads: bodies still waiting after 30 minutes")
            workers.check()
            time.sleep(0.2)
        worker_seconds = time.perf_counter() - started
        total = LeadAdSubmission.objects.unscoped().filter(status="processed").count()
        if total != (args.bodies + args.worker_bodies) * LEADS_PER_BODY:
            raise SystemExit(f"bench leadads: {total} leads processed in all")
    finally:
        if workers is not None:
            workers.stop()
        server.stop()

    leads = args.bodies * LEADS_PER_BODY
    figures = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "leads_per_body": LEADS_PER_BODY,
        "intake_bodies": args.bodies,
        "intake_bodies_per_second": round(args.bodies / wall, 1),
        "intake_leads_per_second": round(leads / wall, 1),
        "intake_latency_p50_ms": round(quantile(latencies, 50), 1),
        "intake_latency_p99_ms": round(quantile(latencies, 99), 1),
        "task_function_leads_per_second": round(leads / task_seconds, 1),
        "task_function_seconds": round(task_seconds, 2),
        "worker_bodies": args.worker_bodies,
        "worker_leads_per_second_end_to_end": round(args.worker_bodies * LEADS_PER_BODY / worker_seconds, 1),
        "worker_intake_latency_p50_ms": round(quantile(worker_latencies, 50), 1),
        "connections": args.connections,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "leadads.json").write_text(json.dumps(figures, indent=2))
    log(json.dumps(figures))
    return 0
