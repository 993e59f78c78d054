"""python -m bench transfer — a patient import of 100,000 CSV rows (issue 24) through the real import path: rows per
second, and the import process's resident memory (RSS when the run starts and ends, and the peak sampled every 50 ms
during the run: flat).

1. Database practice_crm_bench_transfer (BENCH_TRANSFER_DATABASE_URL overrides) rebuilt and migrated; Redis database
   14 (BENCH_TRANSFER_REDIS_URL) flushed. One practice (manage.py create_practice).
2. A CSV of --rows rows (external id, names, e-mail, mobile, date of birth, postcode; 1 in 200 rows invalid) is
   written to a temporary file and goes through apps.transfer.services as the API does: import_upload (checked and
   stored), import_map (every row validated, the report stored), import_start, then run_import called in this
   process (1,000 rows per transaction with the checkpoint) in one continuous run, RSS sampled on a thread.
3. A second run of the same file (all rows unchanged: the idempotent re-run) is timed too.
Figures go to bench/results/transfer.json and are printed."""

import argparse
import json
import os
import tempfile
import time

from bench import env
from bench.measure import PeakRss, rss_bytes
from bench.paths import RESULTS

DEFAULT_URL = env.DEFAULT_URL + "_transfer"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"


def log(message: str) -> None:
    print(f"[bench transfer] {message}", flush=True)


def mib(value: int) -> float:
    return round(value / 1024 / 1024, 1)


def write_csv(path: str, rows: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write("Patient ID,Forename,Surname,Email,Mobile,DOB,Postcode\n")
        for n in range(rows):
            email = "broken" if n % 200 == 199 else f"patient{n}@example.com"
            out.write(f"P{n},Name{n},Surname{n % 977},{email},+44 7700 {n:06d},1980-01-{1 + n % 28:02d},SW1A 1AA\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench transfer", description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    url = env.database_url("BENCH_TRANSFER_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_TRANSFER_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    out = env.manage(
        url, "create_practice", "--name", "Import bench", "--owner-email", "owner@import.example", "--json"
    )
    organization_id = json.loads(out.strip().splitlines()[-1])["organizationId"]
    env.setup_django(url)
    return run(organization_id, args.rows)


def _import_once(organization, user, path: str, rows: int, peak: PeakRss) -> dict:
    from django.core.files.uploadedfile import UploadedFile

    from apps.transfer import services
    from apps.transfer.models import PatientImport

    mapping = {
        "externalId": "Patient ID",
        "firstName": "Forename",
        "lastName": "Surname",
        "email": "Email",
        "phoneMobile": "Mobile",
        "dateOfBirth": "DOB",
        "postalCode": "Postcode",
    }
    started = time.perf_counter()
    with open(path, "rb") as handle:
        upload = UploadedFile(handle, name="bench.csv", size=os.path.getsize(path))
        run, _ = services.import_upload(
            organization=organization, user=user, upload=upload, file_format="csv", source=None
        )
    uploaded = time.perf_counter()
    run = services.import_map(organization=organization, run=run, mapping=mapping, source=None)
    mapped = time.perf_counter()
    services._queue_run = lambda run_id: None  # this process runs the job itself, chunk by chunk
    services.import_start(organization=organization, user=user, run=run)
    # One continuous run (the production path, no time budget), its resident size sampled on a thread: the size
    # when it starts, at the end, and the peak in between show whether memory grows with the rows read.
    rss_start = rss_bytes(os.getpid())
    services.run_import(run.id, budget_seconds=float("inf"))
    rss_end = rss_bytes(os.getpid())
    done = time.perf_counter()
    run = PatientImport.objects.for_org(organization).get(id=run.id)
    return {
        "rows": rows,
        "status": run.status,
        "created": run.created,
        "updated": run.updated,
        "skipped": run.skipped,
        "failed": run.failed,
        "uploadSeconds": round(uploaded - started, 2),
        "validateSeconds": round(mapped - uploaded, 2),
        "runSeconds": round(done - mapped, 2),
        "rowsPerSecondRun": round(rows / (done - mapped)),
        "rowsPerSecondEndToEnd": round(rows / (done - started)),
        "rssStartMiB": mib(rss_start),
        "rssEndMiB": mib(rss_end),
        "rssPeakMiB": mib(peak.peaks[os.getpid()]),
    }


def run(organization_id: str, rows: int) -> int:
    from apps.accounts.models import Membership, Organization

    organization = Organization.objects.get(id=organization_id)
    user = Membership.objects.for_org(organization).get().user
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "patients.csv")
        write_csv(path, rows)
        log(f"{rows} rows, {mib(os.path.getsize(path))} MiB")
        with PeakRss(os.getpid(), interval=0.05) as peak:
            first = _import_once(organization, user, path, rows, peak)
        log(f"first import: {first}")
        with PeakRss(os.getpid(), interval=0.05) as peak:
            again = _import_once(organization, user, path, rows, peak)
        log(f"re-run (unchanged): {again}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "transfer.json").write_text(json.dumps({"first": first, "rerun": again}, indent=2))
    return 0
