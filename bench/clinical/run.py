"""python -m bench clinical — the clinical day list (GET /day-list, issue 23; target p50 < 50 ms in-process).

1. Database practice_crm_bench_clinical (BENCH_CLINICAL_DATABASE_URL overrides) rebuilt and migrated; Redis database
   12 (BENCH_CLINICAL_REDIS_URL) flushed. Settings bench.settings.
2. A practice (manage.py create_practice) with the clinical workspace, 2 locations of 6 chairs each,
   --practitioners practitioners (half of them linked to a member account), --patients patients and a year of
   appointments: every day from 180 days back to 185 days ahead, --per-day appointments of 30 minutes per
   practitioner (past ones completed, every tenth no-show or cancelled), each in a chair of its location with
   arrival, seating and completion times for the past ones. Rows go in with bulk inserts through the ORM.
3. In-process: Django's test client signed in through POST /auth/sign-in/email (a session, as the workspace is
   session-only) asks GET /day-list for today --requests times after --warmup requests: p50/p95/p99 in ms, the
   number of SQL statements per request, and the day list's own statement run with EXPLAIN (ANALYZE, BUFFERS).
4. Through the real server (`python -m config.serve`): the owner signs in over HTTP, and wrk sends GET /day-list
   with the session cookie on --connections connections for --seconds seconds: requests/s and latency.
Figures go to bench/results/clinical.json.
"""

import argparse
import datetime
import json
import os
import random
import time

import httpx

from bench import env
from bench.measure import quantile, uptime
from bench.paths import RESULTS
from bench.throughput import wrk
from bench.throughput.servers import StackServer

DEFAULT_URL = env.DEFAULT_URL + "_clinical"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
OWNER_EMAIL = "owner@clinical.example"
PASSWORD = "bench-password-1"


def log(message: str) -> None:
    print(f"[bench clinical] {message}", flush=True)


def seed(organization, *, practitioners: int, patients: int, per_day: int, days_back: int, days_ahead: int) -> dict:
    from django.utils import timezone

    from apps.accounts.models import Membership, User
    from apps.appointments.models import Appointment
    from apps.clinical.models import AppointmentVisit, Chair, PractitionerLink
    from apps.patients.models import Location, Patient, Practitioner

    rng = random.Random(23)
    started = time.monotonic()
    locations = [Location.objects.create(organization=organization, name=f"Site {n}") for n in range(2)]
    chairs = {
        location.id: [
            Chair.objects.create(organization=organization, location=location, name=f"Surgery {n}", position=n)
            for n in range(6)
        ]
        for location in locations
    }
    people = [
        Practitioner.objects.create(organization=organization, name=f"Dr Bench {n:02d}") for n in range(practitioners)
    ]
    for n, practitioner in enumerate(people[: practitioners // 2]):
        user = User.objects.create_user(email=f"clinician{n}@clinical.example", password=PASSWORD, name=f"Clin {n}")
        Membership.objects.create(organization=organization, user=user, role="dentist")
        PractitionerLink.objects.create(organization=organization, practitioner=practitioner, user=user)
    batch = []
    for n in range(patients):
        batch.append(Patient(organization=organization, first_name=f"Pat{n}", last_name=f"Bench{n % 997}"))
        if len(batch) == 5000:
            Patient.objects.bulk_create(batch)
            batch = []
    Patient.objects.bulk_create(batch)
    patient_ids = list(Patient.objects.for_org(organization).values_list("id", flat=True))
    log(f"{patients} patients in {time.monotonic() - started:.0f}s")

    today = timezone.now().date()
    now = timezone.now()
    appointments, visits = [], []
    total = 0

    def flush():
        nonlocal appointments, visits
        Appointment.objects.bulk_create(appointments)
        AppointmentVisit.objects.bulk_create(visits)
        appointments, visits = [], []

    for offset in range(-days_back, days_ahead + 1):
        day = today + datetime.timedelta(days=offset)
        opening = datetime.datetime.combine(day, datetime.time(8, 0), tzinfo=datetime.UTC)
        for p, practitioner in enumerate(people):
            location = locations[p % 2]
            chair = chairs[location.id][(p // 2) % 6]
            for slot in range(per_day):
                starts = opening + datetime.timedelta(minutes=30 * slot)
                ends = starts + datetime.timedelta(minutes=30)
                past = ends < now
                roll = rng.random()
                status = ("completed" if past else "booked") if roll > 0.1 else ("no_show" if past else "cancelled")
                appointment = Appointment(
                    organization=organization,
                    patient_id=patient_ids[rng.randrange(len(patient_ids))],
                    practitioner=practitioner,
                    location=location,
                    appointment_type=rng.choice(["consultation", "treatment", "hygiene", "review"]),
                    starts_at=starts,
                    ends_at=ends,
                    status=status,
                    status_changed_at=starts,
                )
                appointments.append(appointment)
                arrived = starts - datetime.timedelta(minutes=rng.randrange(1, 15)) if status == "completed" else None
                visits.append(
                    AppointmentVisit(
                        organization=organization,
                        appointment=appointment,
                        chair=chair,
                        arrived_at=arrived,
                        seated_at=starts + datetime.timedelta(minutes=rng.randrange(0, 5)) if arrived else None,
                        completed_at=ends if arrived else None,
                    )
                )
                total += 1
        if len(appointments) >= 5000:
            flush()
    flush()
    log(f"{total} appointments (with their visits) in {time.monotonic() - started:.0f}s")
    return {"appointments": total, "per_day": per_day * practitioners, "chairs": 12}


def in_process(url: str, *, requests: int, warmup: int) -> dict:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    signed = client.post(
        "/auth/sign-in/email", {"email": OWNER_EMAIL, "password": PASSWORD}, content_type="application/json"
    )
    if signed.status_code != 200:
        raise SystemExit(f"bench clinical: sign-in failed ({signed.status_code}): {signed.content[:300]!r}")
    path = "/day-list"
    for _ in range(warmup):
        response = client.get(path)
        if response.status_code != 200:
            raise SystemExit(f"bench clinical: {path} answered {response.status_code}: {response.content[:300]!r}")
    timings, cpu = [], []
    for _ in range(requests):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert response.status_code == 200
    body = response.json()
    with CaptureQueriesContext(connection) as captured:
        client.get(path)
    statements = [q["sql"] for q in captured.captured_queries]
    day_sql = next(sql for sql in statements if "appointments_appointment" in sql)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + day_sql)
        plan = [row[0] for row in cursor.fetchall()]
    return {
        "requests": requests,
        "p50_ms": round(quantile(timings, 50), 2),
        "p95_ms": round(quantile(timings, 95), 2),
        "p99_ms": round(quantile(timings, 99), 2),
        "mean_ms": round(sum(timings) / len(timings), 2),
        "cpu_p50_ms": round(quantile(cpu, 50), 2),
        "cpu_p95_ms": round(quantile(cpu, 95), 2),
        "appointments_in_list": body["total"],
        "practitioners_in_list": len(body["practitioners"]),
        "statements_per_request": len(statements),
        "statements": statements,
        "day_list_sql_plan": plan,
    }


def through_server(url: str, *, seconds: float, connections: int, threads: int) -> dict:
    binary = wrk.ensure()
    server = StackServer("new", env.server_env(url))
    try:
        server.start()
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            signed = http.post("/auth/sign-in/email", json={"email": OWNER_EMAIL, "password": PASSWORD})
            if signed.status_code != 200:
                raise SystemExit(
                    f"bench clinical: sign-in over HTTP failed ({signed.status_code}): {signed.text[:300]}"
                )
            cookies = "; ".join(f"{name}={value}" for name, value in http.cookies.items())
            check = http.get("/day-list")
            if check.status_code != 200:
                raise SystemExit(
                    f"bench clinical: /day-list over HTTP answered {check.status_code}: {check.text[:300]}"
                )
        host = f"127.0.0.1:{server.port}"
        request = wrk.raw_request("GET", "/day-list", host=host, headers={"Cookie": cookies})
        file = wrk.write_requests(RESULTS / "clinical-requests.bin", [request])
        log(f"wrk: GET /day-list with a session cookie, {connections} connections, {seconds:g}s")
        result, _ = wrk.run(
            server.base_url, file, threads=threads, connections=connections, seconds=seconds, binary=binary
        )
        others = {code: n for code, n in result.statuses.items() if code != "200"}
        if others or result.errors:
            raise SystemExit(f"bench clinical: answers other than 200: {others}, socket errors {result.socket_errors}")
        return {
            "requests_per_second": round(result.rate, 1),
            "requests": result.requests,
            "seconds": result.seconds,
            "latency_p50_ms": result.p50_ms,
            "latency_p90_ms": result.p90_ms,
            "latency_p99_ms": result.p99_ms,
            "connections": connections,
            "threads": threads,
            "wrk": wrk.version(binary),
        }
    finally:
        server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench clinical", description=__doc__)
    parser.add_argument("--practitioners", type=int, default=20)
    parser.add_argument("--patients", type=int, default=50_000)
    parser.add_argument("--per-day", type=int, default=12, help="appointments per practitioner per day")
    parser.add_argument("--days-back", type=int, default=180)
    parser.add_argument("--days-ahead", type=int, default=185)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-wrk", action="store_true", help="in-process figures only")
    parser.add_argument(
        "--measure-only", action="store_true", help="measure the database a previous run seeded (no rebuild, no seed)"
    )
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_CLINICAL_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_CLINICAL_REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    figures: dict = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "uptime_before": uptime(),
    }
    if not args.measure_only:
        log(f"rebuilding {env.database_name(url)}")
        env.rebuild(url)
        env.manage(
            url,
            "create_practice",
            "--name",
            "Clinical bench",
            "--owner-email",
            OWNER_EMAIL,
            "--owner-password",
            PASSWORD,
            "--clinical",
            "--json",
        )
    env.setup_django(url)
    from django.db import connection

    from apps.accounts.models import Membership

    organization = (
        Membership.objects.unscoped().select_related("organization").get(user__email=OWNER_EMAIL).organization
    )
    if not args.measure_only:
        figures["data"] = seed(
            organization,
            practitioners=args.practitioners,
            patients=args.patients,
            per_day=args.per_day,
            days_back=args.days_back,
            days_ahead=args.days_ahead,
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    figures["in_process"] = in_process(url, requests=args.requests, warmup=args.warmup)
    log(
        "in-process: "
        + json.dumps({k: v for k, v in figures["in_process"].items() if "statement" not in k and "plan" not in k})
    )
    log("plan:\n  " + "\n  ".join(figures["in_process"]["day_list_sql_plan"]))
    connection.close()
    if not args.no_wrk:
        figures["server"] = through_server(
            url, seconds=args.seconds, connections=args.connections, threads=args.threads
        )
        log("server: " + json.dumps(figures["server"]))
    figures["uptime_after"] = uptime()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "clinical.json").write_text(json.dumps(figures, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
