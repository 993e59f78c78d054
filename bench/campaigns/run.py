"""python -m bench campaigns — a campaign of 100,000 recipients launched at 100,000 patients (issue 19; targets: the
audience frozen in < 5 s, ≥ 500 messages/s sent through the sandbox transport with 2 Celery workers, memory flat).

1. Database practice_crm_bench_campaigns (BENCH_CAMPAIGNS_DATABASE_URL overrides) rebuilt and migrated; Redis
   database 15 (BENCH_CAMPAIGNS_REDIS_URL) flushed and used by the server and the workers (broker, cache, limits).
2. A practice (manage.py create_practice --api-key) and --patients patients written by one set-based INSERT …
   SELECT generate_series (each with an Italian mobile number; 1 % opted out of SMS, 1 % without SMS consent, the
   others with a granted SMS consent record), so the freeze has skips to record.
3. The serving stack `python -m config.serve` and 2 Celery workers (2 processes, prefork, concurrency 1 each) on that
   database and broker, outbound transport "sandbox" (the provider request is built and recorded, nothing leaves the
   machine). Through the API: an SMS connection, quiet hours off, a marketing template, a campaign whose audience is
   every patient (PatientFilters {}).
4. Freeze: POST /campaigns/{id}/launch timed from the client (the INSERT … SELECT of the audience, the campaign row,
   the totals of the answer). Afterwards, on the quiet machine, the same INSERT … SELECT run directly with psql
   (\\timing, JIT off as on the app's connections, in a transaction rolled back, --sql-runs times, for a second
   draft campaign).
5. Sending: the workers release the recipients (batches of 500 into queue_messages) and send the messages (batches
   of 100 through the sandbox) while this process polls every 0.5 s how many of the campaign's messages are no longer
   queued. Messages/s = messages sent / (the last one sent minus the launch's answer); steady = between 10 % and 90 %.
6. Memory: the resident set (VmRSS, /proc) of each worker's process tree, sampled every second from before the launch
   to the end; flat = what it grew between 25 % of the messages sent and the end.
7. Checks: every pending recipient released, every message sent (sandbox), none failed; else exit status 1.
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import time

import httpx

from bench import doc, env
from bench.paths import RESULTS, VENV_BIN

DEFAULT_URL = env.DEFAULT_URL + "_campaigns"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
PRACTICE_NUMBER = "+390200000000"
NAME = "campaigns"
WORKERS = ("benchcampaigns1", "benchcampaigns2")

SEED_SQL = """
INSERT INTO patients_patient (
    id, organization_id, created_at, updated_at, first_name, last_name, sts_opposition, email, phone_mobile,
    sms_opt_out, email_opt_out, whatsapp_opt_out, custom_fields, status, status_before_archive, contact_attempts,
    country
)
SELECT gen_random_uuid(), %(org)s, now() - n * interval '1 minute', now(), 'Paziente' || n, 'Bench', false,
       'p' || n || '@bench.example', '+39 333 ' || lpad(n::text, 7, '0'), n %% 100 = 1, false, false, '{}'::jsonb,
       'patient', '', 0, 'IT'
FROM generate_series(1, %(patients)s) AS n
"""
CONSENT_SQL = """
INSERT INTO patients_marketingconsent (id, organization_id, patient_id, channel, status, source, evidence,
                                       recorded_at, created_at, updated_at)
SELECT gen_random_uuid(), p.organization_id, p.id, 'sms', 'granted', 'form', 'bench seed', now(), now(), now()
FROM patients_patient p
WHERE p.organization_id = %(org)s AND right(p.phone_mobile, 2) <> '02'
"""


def log(message: str) -> None:
    print(f"[bench campaigns] {message}", flush=True)


def tree(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    queue.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return found


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def worker_rss_mib(workers: env.CeleryWorkers) -> list[float]:
    return [round(sum(rss_kib(pid) for pid in tree(p.pid)) / 1024, 1) for p in workers.processes]


def psql_freeze(url: str, statement: str, runs: int) -> list[float]:
    """The INSERT … SELECT run by psql, \\timing on, in a transaction rolled back each time: its milliseconds."""
    timings = []
    for _ in range(runs):
        script = f"\\timing on\nBEGIN;\n{statement};\nROLLBACK;\n"
        result = subprocess.run(
            ["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1"],
            input=script,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PGOPTIONS": "-c jit=off"},  # as the app's connections (config.settings.base)
        )
        times = [float(x) for x in re.findall(r"Time: ([0-9.]+) ms", result.stdout)]
        if len(times) < 2:
            raise SystemExit(f"bench campaigns: psql printed no timing: {result.stdout} {result.stderr}")
        timings.append(times[1])  # BEGIN, the INSERT, ROLLBACK
    return timings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench campaigns", description=__doc__)
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--sql-runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for every message to be sent")
    parser.add_argument("--no-doc", action="store_true", help="leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_CAMPAIGNS_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_CAMPAIGNS_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url, SVC_OUTBOUND_TRANSPORT="sandbox")
    env.flush_redis(redis_url)
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    created = json.loads(
        env.manage(
            url,
            "create_practice",
            "--name",
            "Campaigns bench",
            "--owner-email",
            "owner@campaigns.example",
            "--owner-password",
            "bench-password-1",
            "--api-key",
            "--json",
        )
        .strip()
        .splitlines()[-1]
    )
    org = created["organizationId"]
    conn = env.connect(url)
    started = time.monotonic()
    conn.execute(SEED_SQL, {"org": org, "patients": args.patients})
    conn.execute(CONSENT_SQL, {"org": org})
    conn.execute("VACUUM ANALYZE")
    log(f"{args.patients} patients seeded in {time.monotonic() - started:.1f}s")

    server = env.Server(url, RESULTS / "campaigns-serve.log")
    workers = env.CeleryWorkers(
        list(WORKERS),
        env=env.server_env(url),
        log_paths=[RESULTS / f"campaigns-{name}.log" for name in WORKERS],
        commands=[
            [str(VENV_BIN / "celery"), "-A", "config", *env.worker_arguments(name, pool="prefork", concurrency=1)]
            for name in WORKERS
        ],
    )
    env.setup_django(url)
    samples: list[tuple[float, int, list[float]]] = []  # (seconds since launch, messages sent, RSS per worker)
    try:
        server.start()
        workers.wait_ready()
        api = httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}",
            headers={"Authorization": f"Bearer {created['apiKey']}"},
            timeout=120,
        )

        def call(method: str, path: str, body=None, expect: int = 200) -> dict:
            answer = api.request(method, path, json=body)
            if answer.status_code != expect:
                raise SystemExit(f"bench campaigns: {method} {path} answered {answer.status_code}: {answer.text[:300]}")
            return answer.json() if answer.content else {}

        connection = call(
            "POST",
            "/settings/channel-connections",
            {
                "kind": "sms",
                "name": "Bench SMS",
                "address": PRACTICE_NUMBER,
                "credentials": {"accountSid": "AC" + "0" * 32, "authToken": "bench-campaigns"},
            },
            expect=201,
        )
        call("PUT", "/settings/messaging", {"quietHoursEnabled": False})
        template = call(
            "POST",
            "/templates",
            {"channel": "sms", "name": "Bench", "body": "Ciao {{patient.first_name}}, {{practice.name}} ti aspetta."},
            expect=201,
        )
        campaign_body = {
            "name": "Bench campaign",
            "connectionId": connection["id"],
            "templateId": template["id"],
            "audience": {"filters": {}},
        }
        campaign = call("POST", "/campaigns", campaign_body, expect=201)
        spare = call("POST", "/campaigns", {**campaign_body, "name": "Bench spare"}, expect=201)

        before_rss = worker_rss_mib(workers)
        log(f"launching (worker RSS {before_rss} MiB)")
        t0 = time.monotonic()
        launched = call("POST", f"/campaigns/{campaign['id']}/launch", {})
        launch_seconds = time.monotonic() - t0
        totals = launched["totals"]
        expected = totals["pending"]
        log(f"launched in {launch_seconds:.2f}s: {totals['recipients']} recipients, {expected} to send")

        progress = """SELECT count(*) FILTER (WHERE status <> 'queued')
                      FROM conversations_message WHERE organization_id = %s AND source = 'campaign'"""
        done_at = None
        last_sample = 0.0
        while True:
            now = time.monotonic() - t0
            (sent,) = conn.execute(progress, [org]).fetchone()
            if now - last_sample >= 1.0 or sent >= expected:
                samples.append((round(now, 2), sent, worker_rss_mib(workers)))
                last_sample = now
            if sent >= expected:
                done_at = now
                break
            if now > args.timeout:
                raise SystemExit(f"bench campaigns: {sent}/{expected} sent after {args.timeout:.0f}s")
            workers.check()
            time.sleep(0.5)
        log(f"{expected} messages sent {done_at:.1f}s after the launch began")

        # The freeze SQL directly, on the quiet machine, for the spare draft campaign (rolled back).
        from apps.accounts.models import Organization
        from apps.campaigns import audience
        from apps.campaigns.models import Campaign

        organization = Organization.objects.get(pk=org)
        draft = Campaign.objects.for_org(organization).select_related("connection").get(id=spare["id"])
        statement, params = audience.freeze_statement(
            campaign=draft,
            organization=organization,
            connection=draft.connection,
            filters={},
            now=datetime.datetime.now(datetime.UTC),
        )
        with conn.cursor() as cursor:
            literal = cursor.mogrify(statement, params)
        sql_ms = psql_freeze(url, literal, args.sql_runs)
        released_at = conn.execute(
            "SELECT max(released_at) - min(released_at), count(*) FILTER (WHERE state = 'released'), "
            "count(*) FILTER (WHERE state = 'pending') FROM campaigns_campaignrecipient WHERE campaign_id = %s",
            [campaign["id"]],
        ).fetchone()
        final = conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'sent' AND sandbox), count(*) FILTER (WHERE status = 'failed') "
            "FROM conversations_message WHERE organization_id = %s AND source = 'campaign'",
            [org],
        ).fetchone()
    finally:
        workers.stop()
        server.stop()

    problems = []
    if released_at[1] != expected or released_at[2]:
        problems.append(f"{released_at[1]} released of {expected}, {released_at[2]} still pending")
    if final[0] != expected or final[1]:
        problems.append(f"{final[0]} sent of {expected}, {final[1]} failed")

    def at_fraction(fraction: float) -> tuple[float, int, list[float]]:
        return next(sample for sample in samples if sample[1] >= fraction * expected)

    t10, t90 = at_fraction(0.10), at_fraction(0.90)
    quarter, last = at_fraction(0.25), samples[-1]
    send_window = done_at - launch_seconds
    figures = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "patients": args.patients,
        "recipients": totals["recipients"],
        "to_send": expected,
        "skipped": totals["skipped"],
        "launch_seconds": round(launch_seconds, 3),
        "freeze_sql_ms": [round(ms, 1) for ms in sql_ms],
        "freeze_sql_ms_median": round(statistics.median(sql_ms), 1),
        "release_seconds": round(released_at[0].total_seconds(), 1) if released_at[0] else None,
        "all_sent_seconds_after_launch": round(send_window, 1),
        "messages_per_second": round(expected / send_window, 1),
        "steady_messages_per_second": round((t90[1] - t10[1]) / (t90[0] - t10[0]), 1),
        "rss_mib_before": before_rss,
        "rss_mib_at_25_percent": quarter[2],
        "rss_mib_at_end": last[2],
        "rss_mib_max": [max(sample[2][i] for sample in samples) for i in range(len(WORKERS))],
        "rss_growth_mib_25_to_end": [round(last[2][i] - quarter[2][i], 1) for i in range(len(WORKERS))],
        "samples": samples,
        "problems": problems,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "campaigns.json").write_text(json.dumps(figures, indent=2))
    log(json.dumps({k: v for k, v in figures.items() if k != "samples"}))
    if not args.no_doc:
        write_doc(figures)
    if problems:
        log("FAILED: " + "; ".join(problems))
        return 1
    return 0


def _mark(ok: bool) -> str:
    return "✅" if ok else "❌"


def write_doc(f: dict) -> None:
    start, end = doc.markers(NAME)
    rss_rows = []
    for i, name in enumerate(WORKERS):
        rss_rows.append(
            f"| {name} | {f['rss_mib_before'][i]:,.1f} | {f['rss_mib_at_25_percent'][i]:,.1f} | "
            f"{f['rss_mib_at_end'][i]:,.1f} | {f['rss_mib_max'][i]:,.1f} | {f['rss_growth_mib_25_to_end'][i]:+,.1f} |"
        )
    growth = max(f["rss_growth_mib_25_to_end"])
    runs = ", ".join(f"{ms / 1000:.2f}" for ms in f["freeze_sql_ms"])
    lines = [
        start,
        "## Campaigns (issue 19)",
        "",
        "`make bench BENCH_ARGS=campaigns` (method in `bench/campaigns/run.py`'s docstring): a fresh",
        f"`practice_crm_bench_campaigns` with one practice of {f['patients']:,} patients (1 % opted out of SMS, 1 %",
        "without SMS consent), the serving stack `python -m config.serve` and 2 Celery workers (prefork, one process",
        "each) with the sandbox transport; an SMS campaign to every patient launched through the API while the workers",
        "run. The freeze is timed around `POST /campaigns/{id}/launch` (the INSERT … SELECT, the campaign row, the",
        "commit, the answer) and, beside it, its INSERT … SELECT run directly by psql on the quiet machine (JIT off as",
        "on the app's connections, in a transaction rolled back). Messages/s counts from the launch's answer to the",
        "last message sent.",
        "",
        f"Run {f['date']}, this 2-core machine (PostgreSQL, Redis, the server and both workers on the same cores):",
        "",
        "| Figure | Measured | Same work in SQL (psql) | Target |",
        "|---|--:|--:|---|",
        f"| Audience frozen: `POST /campaigns/{{id}}/launch` | {f['launch_seconds']:.2f} s "
        f"({f['recipients']:,} recipients, {f['skipped']:,} skipped with their reason) | "
        f"{f['freeze_sql_ms_median'] / 1000:.2f} s (median of {runs}) "
        f"| < 5 s {_mark(f['launch_seconds'] < 5)} |",
        f"| Messages sent per second, launch to last | {f['messages_per_second']:,.1f} "
        f"({f['to_send']:,} in {f['all_sent_seconds_after_launch']:.1f} s) | | ≥ 500 "
        f"{_mark(f['messages_per_second'] >= 500)} |",
        f"| Messages sent per second, 10 % → 90 % | {f['steady_messages_per_second']:,.1f} | | |",
        f"| Recipients released (first to last release) | {f['release_seconds']} s | | |",
        f"| Worker memory growth, 25 % → end | {growth:+.1f} MiB (largest of the two) | | flat {_mark(growth < 50)} |",
        "",
        "Resident memory of each worker's process tree (MiB):",
        "",
        "| Worker | Before launch | At 25 % sent | At the end | Max | 25 % → end |",
        "|---|--:|--:|--:|--:|--:|",
        *rss_rows,
        "",
        *doc.notes_block(
            "campaigns-findings",
            "- *Findings.* (written by hand after a run)",
        ),
        end,
    ]
    doc.write_section("\n".join(lines), start, end)
