"""python -m bench pms — the connected PMS's historical import of 50,000 patients (issue 23): rows per second, the
import process's resident memory (flat: first-batch and last-batch RSS, and the peak sampled during the run), the
events it records (must be 0), and the import's main INSERT run directly in SQL beside it.

1. Database practice_crm_bench_pms (BENCH_PMS_DATABASE_URL overrides) rebuilt and migrated; Redis database 13
   (BENCH_PMS_REDIS_URL) flushed. Two practices (manage.py create_practice): one imports, the other takes the
   direct SQL.
2. A local PMS (bench/pms/server.py, its own process) serves --patients patients and one appointment each through
   the pmsconnect pull API, 500 items a page.
3. The import runs in this process through the real code path (apps.pms.imports.run_import: the httpx client,
   normalizing, matching by e-mail and phone, bulk INSERT of patients and links, practitioners created, appointments
   mirrored with INSERT … ON CONFLICT DO NOTHING, cursor and counts saved per page), one page per call so the RSS is
   read after every batch; a thread samples the peak RSS every 50 ms.
4. Direct SQL: the patients INSERT and the links INSERT the import issued for its first page (captured), replayed
   for as many pages with fresh ids in the second practice over a raw psycopg connection — the database's share of
   the patients phase.
Figures go to bench/results/pms.json and are printed as the table of docs/benchmarks.md."""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid

from bench import env
from bench.measure import PeakRss, rss_bytes
from bench.paths import RESULTS, ROOT

DEFAULT_URL = env.DEFAULT_URL + "_pms"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")


def log(message: str) -> None:
    print(f"[bench pms] {message}", flush=True)


def practice(url: str, name: str, email: str) -> str:
    out = env.manage(
        url, "create_practice", "--name", name, "--owner-email", email, "--owner-password", "bench-password-1", "--json"
    )
    return json.loads(out.strip().splitlines()[-1])["organizationId"]


def mib(value: int) -> float:
    return round(value / 1024 / 1024, 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench pms", description=__doc__)
    parser.add_argument("--patients", type=int, default=50_000)
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_PMS_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_PMS_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    importing = practice(url, "PMS import bench", "owner@pms-import.example")
    direct = practice(url, "PMS direct SQL bench", "owner@pms-direct.example")

    server = subprocess.Popen(
        [sys.executable, "-m", "bench.pms.server", "--patients", str(args.patients)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(server.stdout.readline().strip())
        return run(url, importing, direct, f"http://127.0.0.1:{port}", args.patients)
    finally:
        env.stop_processes([server], timeout=5)


def run(url: str, importing: str, direct: str, base_url: str, total: int) -> int:
    env.setup_django(url)
    import logging

    import httpx
    from django.db import connection as database
    from django.test.utils import CaptureQueriesContext

    from apps.appointments.public import Appointment
    from apps.core.crypto import encrypt
    from apps.events.models import Event
    from apps.patients.public import Patient
    from apps.pms import provider
    from apps.pms.imports import run_import
    from apps.pms.models import PmsConnection, PmsImport, PmsPatientLink
    from bench.pms.server import API_KEY

    def connection_for(org: str) -> PmsConnection:
        return PmsConnection.objects.create(
            organization_id=org,
            name="Bench PMS",
            base_url=base_url,
            api_key_encrypted=encrypt(API_KEY),
            signing_secret_encrypted=encrypt("bench-secret"),
            routing_token=uuid.uuid4().hex,
        )

    def client(base, key):  # the real client and transport; the loopback URL is the bench's own server
        return provider.Client(base, key, transport=httpx.HTTPTransport())

    logging.getLogger("httpx").setLevel(logging.WARNING)
    connection = connection_for(importing)
    run_row = PmsImport.objects.create(organization_id=importing, connection=connection)
    pid = os.getpid()
    rss, page_seconds, captured = [], {"patients": 0.0, "appointments": 0.0}, []
    log(f"importing {total:,} patients and {total:,} appointments from {base_url}")
    with PeakRss(pid, interval=0.05) as peak:
        t0 = time.monotonic()
        while True:
            phase = PmsImport.objects.for_org(importing).get(id=run_row.id).phase
            started = time.monotonic()
            if not captured:
                with CaptureQueriesContext(database) as queries:
                    state = run_import(run_row.id, client_factory=client, max_pages=1)
                captured = [q["sql"] for q in queries.captured_queries]
            else:
                state = run_import(run_row.id, client_factory=client, max_pages=1)
            page_seconds[phase] += time.monotonic() - started
            rss.append(rss_bytes(pid))
            if state != "running":
                break
        elapsed = time.monotonic() - t0
    done = PmsImport.objects.for_org(importing).get(id=run_row.id)
    if done.state != "completed":
        raise SystemExit(f"bench pms: the import ended {done.state}: {done.errors[-3:]}")
    patients = Patient.objects.for_org(importing).count()
    appointments = Appointment.objects.for_org(importing).count()
    links = PmsPatientLink.objects.for_org(importing).count()
    events = Event.objects.for_org(importing).count()
    log(f"done in {elapsed:.1f}s: {patients} patients, {appointments} appointments, {events} events")

    # --- the main INSERT, directly -------------------------------------------------------------------------------
    inserts = [sql for sql in captured if sql.startswith('INSERT INTO "patients_patient"')]
    inserts += [sql for sql in captured if sql.startswith('INSERT INTO "pms_pmspatientlink"')]
    if len(inserts) != 2:
        raise SystemExit(f"bench pms: expected the patients and links INSERTs in the first page, got {len(inserts)}")
    target = connection_for(direct)
    replace = {importing.replace("-", ""): direct.replace("-", ""), importing: direct}
    replace[str(connection.id)] = str(target.id)
    replace[connection.id.hex] = target.id.hex
    pages = (total + 499) // 500
    conn = env.connect(url)
    t1 = time.monotonic()
    for page in range(pages):
        mapping = dict(replace)

        def swap(match, mapping=mapping):
            value = match.group(0)
            if value not in mapping:
                fresh = uuid.uuid4()
                mapping[value] = fresh.hex if len(value) == 32 else str(fresh)
            return mapping[value]

        with conn.transaction():
            for sql in inserts:  # fresh ids, and the PMS ids of this page (unique per connection)
                conn.execute(re.sub(r"(?<=[{,])P(\d+)(?=[,}])", rf"P{page}-\1", UUID.sub(swap, sql)))
    direct_seconds = time.monotonic() - t1
    direct_rows = Patient.objects.for_org(direct).count()
    conn.close()

    results = {
        "patients": total,
        "seconds": round(elapsed, 1),
        "rows_per_second": round((patients + appointments) / elapsed),
        "patients_per_second": round(patients / page_seconds["patients"]),
        "appointments_per_second": round(appointments / page_seconds["appointments"]),
        "patients_imported": patients,
        "appointments_imported": appointments,
        "links": links,
        "pages": done.pages,
        "events": events,
        "rss_first_batch_mib": mib(rss[0]),
        "rss_last_batch_mib": mib(rss[-1]),
        "rss_peak_mib": mib(peak.peaks[pid]),
        "rss_before_mib": mib(peak.baseline),
        "direct_sql_rows": direct_rows,
        "direct_sql_seconds": round(direct_seconds, 2),
        "direct_sql_rows_per_second": round(direct_rows / direct_seconds),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pms.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    if events:
        raise SystemExit("bench pms: the import recorded events")
    return 0
