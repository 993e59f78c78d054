"""python -m bench booking — online booking (issue 20; targets: availability for a 4-week horizon with 10
practitioners at p50 < 30 ms; 100 concurrent holds on 20 slots with no double booking, throughput reported).

1. Database practice_crm_bench_booking (BENCH_BOOKING_DATABASE_URL overrides) rebuilt and migrated; Redis database 13
   (BENCH_BOOKING_REDIS_URL) flushed and used by the server (cache, limits). Server settings bench.booking.settings:
   the booking buckets and the abuse screen raised so nothing is refused (still checked on every request).
2. A practice in Europe/Rome (manage.py create_practice --api-key) with 10 practitioners working Monday to Friday
   08:00-13:00 and 14:00-18:00 at one location, 1,000 patients, and about 40 % of the next 4 weeks' 30-minute slots
   already booked (written with the ORM's bulk_create, no events).
3. The serving stack `python -m config.serve`; through the API a booking page offering everything (30-minute slots,
   horizon 28 days, no lead time).
4. Availability: `GET /booking/{token}/availability` for today .. today + 27 (4 weeks, every practitioner), --runs
   times after 10 warm-ups, one request at a time; p50/p95 from the client. Beside it, the same SQL: the request's
   statements captured in-process (same URL, view and selectors) and replayed with psycopg --runs times, p50 of the
   sum.
5. Holds: 100 threads, each with its own connection, released together by a barrier, each POSTing a hold on one of 20
   free slots (5 visitors per slot). Checks: exactly 20 answered 201 and 80 answered 409, and no two active holds of
   one practitioner overlap in the database. Throughput = answers / (last answer - release).
"""

import argparse
import datetime
import json
import os
import statistics
import threading
import time
import zoneinfo

import httpx

from bench import doc, env
from bench.measure import quantile
from bench.paths import RESULTS

DEFAULT_URL = env.DEFAULT_URL + "_booking"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
NAME = "booking"
PRACTITIONERS = 10
PATIENTS = 1000
HOURS = ((datetime.time(8), datetime.time(13)), (datetime.time(14), datetime.time(18)))
SLOT = datetime.timedelta(minutes=30)
TZ = "Europe/Rome"

OVERLAPS_SQL = """
SELECT count(*) FROM booking_bookinghold a JOIN booking_bookinghold b
  ON a.id < b.id AND a.organization_id = b.organization_id AND a.practitioner_id = b.practitioner_id
 AND a.status = 'active' AND b.status = 'active'
 AND tstzrange(a.starts_at, a.ends_at, '[)') && tstzrange(b.starts_at, b.ends_at, '[)')
WHERE a.organization_id = %s
"""


def log(message: str) -> None:
    print(f"[bench booking] {message}", flush=True)


def seed(org_id: str) -> int:
    """Practitioners, working hours, patients and the booked 40 % of the next 4 weeks; the appointments written."""
    from apps.accounts.models import Organization
    from apps.appointments.models import Appointment, WorkingHours
    from apps.patients.models import Location, Patient, Practitioner

    organization = Organization.objects.get(pk=org_id)
    organization.timezone = TZ
    organization.save(update_fields=["timezone"])
    location = Location.objects.create(organization=organization, name="Centro")
    practitioners = Practitioner.objects.bulk_create(
        [Practitioner(organization=organization, name=f"Dr Bench {n}") for n in range(PRACTITIONERS)]
    )
    WorkingHours.objects.bulk_create(
        [
            WorkingHours(
                organization=organization, practitioner=p, weekday=day, start_time=a, end_time=b, location=location
            )
            for p in practitioners
            for day in range(5)
            for a, b in HOURS
        ]
    )
    patients = Patient.objects.bulk_create(
        [
            Patient(organization=organization, first_name=f"Paziente{n}", email=f"p{n}@bench.example")
            for n in range(PATIENTS)
        ]
    )
    tz = zoneinfo.ZoneInfo(TZ)
    today = datetime.datetime.now(tz).date()
    rows, n = [], 0
    for offset in range(1, 29):
        day = today + datetime.timedelta(days=offset)
        if day.weekday() >= 5:
            continue
        for index, practitioner in enumerate(practitioners):
            for a, b in HOURS:
                start = datetime.datetime.combine(day, a, tzinfo=tz)
                while start + SLOT <= datetime.datetime.combine(day, b, tzinfo=tz):
                    n += 1
                    if (n * 7 + index) % 5 < 2:  # about 40 % booked
                        rows.append(
                            Appointment(
                                organization=organization,
                                patient=patients[n % PATIENTS],
                                practitioner=practitioner,
                                location=location,
                                starts_at=start,
                                ends_at=start + SLOT,
                            )
                        )
                    start += SLOT
    Appointment.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def replay(url: str, statements: list[str], runs: int) -> list[float]:
    """The statements run one after the other on one connection, `runs` times: milliseconds per run."""
    from bench.sqlcapture import connection_options

    conn = env.connect(url, options=connection_options())
    for statement in statements:  # warm
        conn.execute(statement).fetchall()
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        for statement in statements:
            conn.execute(statement).fetchall()
        timings.append((time.perf_counter() - started) * 1000)
    conn.close()
    return timings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench booking", description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--holds", type=int, default=100)
    parser.add_argument("--slots", type=int, default=20)
    parser.add_argument("--no-doc", action="store_true", help="leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)

    url = env.database_url("BENCH_BOOKING_DATABASE_URL", DEFAULT_URL)
    redis_url = env.flushable_redis_url("BENCH_BOOKING_REDIS_URL", DEFAULT_REDIS_URL)
    env.SETTINGS_MODULE = "bench.booking.settings"
    os.environ.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    env.flush_redis(redis_url)
    log(f"rebuilding {env.database_name(url)}")
    env.rebuild(url)
    created = json.loads(
        env.manage(
            url,
            "create_practice",
            "--name",
            "Booking bench",
            "--owner-email",
            "owner@booking.example",
            "--owner-password",
            "bench-password-1",
            "--api-key",
            "--json",
        )
        .strip()
        .splitlines()[-1]
    )
    env.setup_django(url)
    started = time.monotonic()
    appointments = seed(created["organizationId"])
    conn = env.connect(url)
    conn.execute("VACUUM ANALYZE")
    log(f"seeded {PRACTITIONERS} practitioners, {appointments} appointments in {time.monotonic() - started:.1f}s")

    server = env.Server(url, RESULTS / "booking-serve.log")
    try:
        server.start()
        base = f"http://127.0.0.1:{server.port}"
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {created['apiKey']}"}, timeout=60)
        page = api.post(
            "/settings/booking-pages",
            json={"name": "Bench", "leadTimeMinutes": 0, "horizonDays": 28, "slotMinutes": 30},
        )
        if page.status_code != 201:
            raise SystemExit(f"bench booking: creating the page answered {page.status_code}: {page.text[:300]}")
        token = page.json()["token"]
        today = datetime.datetime.now(zoneinfo.ZoneInfo(TZ)).date()
        path = (
            f"/booking/{token}/availability?start={today.isoformat()}"
            f"&end={(today + datetime.timedelta(days=27)).isoformat()}"
        )
        visitor = httpx.Client(base_url=base, timeout=60)
        first = visitor.get(path)
        if first.status_code != 200:
            raise SystemExit(f"bench booking: availability answered {first.status_code}: {first.text[:300]}")
        slots = first.json()["slots"]
        for _ in range(10):
            visitor.get(path)
        latencies = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            answer = visitor.get(path)
            latencies.append((time.perf_counter() - t0) * 1000)
            if answer.status_code != 200:
                raise SystemExit(f"bench booking: availability answered {answer.status_code}")
        log(f"availability: {len(slots)} slots, p50 {quantile(latencies, 50):.1f} ms")

        from bench.sqlcapture import RequestCapture

        statements = RequestCapture(created["apiKey"]).statements("GET", path)
        sql_ms = replay(url, statements, args.runs)

        # Holds: 100 visitors, 5 per slot, released together.
        targets = slots[: args.slots]
        barrier = threading.Barrier(args.holds + 1)
        answers: list[tuple[int, float]] = []
        lock = threading.Lock()

        def visit(index: int) -> None:
            target = targets[index % len(targets)]
            with httpx.Client(base_url=base, timeout=60) as client:
                client.get("/health/runtime")  # the connection is open before the race
                barrier.wait(timeout=60)
                t0 = time.perf_counter()
                response = client.post(
                    f"/booking/{token}/holds",
                    json={"practitionerId": target["practitionerId"], "startsAt": target["startsAt"]},
                )
                with lock:
                    answers.append((response.status_code, time.perf_counter() - t0, time.perf_counter()))

        threads = [threading.Thread(target=visit, args=(i,)) for i in range(args.holds)]
        for thread in threads:
            thread.start()
        barrier.wait(timeout=60)
        released = time.perf_counter()
        for thread in threads:
            thread.join(timeout=120)
        last = max(at for _, _, at in answers)
        (overlaps,) = conn.execute(OVERLAPS_SQL, [created["organizationId"]]).fetchone()
        (active,) = conn.execute(
            "SELECT count(*) FROM booking_bookinghold WHERE organization_id = %s AND status = 'active'",
            [created["organizationId"]],
        ).fetchone()
    finally:
        server.stop()

    statuses = [status for status, _, _ in answers]
    hold_ms = [seconds * 1000 for _, seconds, _ in answers]
    problems = []
    if statuses.count(201) != len(targets) or statuses.count(409) != args.holds - len(targets):
        problems.append(f"answers {sorted(set(statuses))}: {statuses.count(201)} held, {statuses.count(409)} refused")
    if overlaps or active != len(targets):
        problems.append(f"{overlaps} overlapping active holds, {active} active holds")
    figures = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "practitioners": PRACTITIONERS,
        "appointments": appointments,
        "slots_offered": len(slots),
        "availability_p50_ms": round(quantile(latencies, 50), 1),
        "availability_p95_ms": round(quantile(latencies, 95), 1),
        "availability_sql_p50_ms": round(statistics.median(sql_ms), 2),
        "availability_statements": len(statements),
        "holds": args.holds,
        "slots": len(targets),
        "held": statuses.count(201),
        "refused": statuses.count(409),
        "other": len(statuses) - statuses.count(201) - statuses.count(409),
        "overlapping_active_holds": overlaps,
        "hold_seconds": round(last - released, 3),
        "holds_per_second": round(len(answers) / (last - released), 1),
        "hold_p50_ms": round(quantile(hold_ms, 50), 1),
        "hold_p95_ms": round(quantile(hold_ms, 95), 1),
        "problems": problems,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "booking.json").write_text(json.dumps(figures, indent=2))
    log(json.dumps(figures))
    if not args.no_doc:
        write_doc(figures)
    if problems:
        log("FAILED: " + "; ".join(problems))
        return 1
    return 0


def write_doc(f: dict) -> None:
    start, end = doc.markers(NAME)
    lines = [
        start,
        "## Online booking (issue 20)",
        "",
        "`make bench BENCH_ARGS=booking` (method in `bench/booking/run.py`'s docstring): a fresh",
        f"`practice_crm_bench_booking` with one practice in Europe/Rome, {f['practitioners']} practitioners working",
        f"Monday to Friday 08:00-13:00 and 14:00-18:00, {f['appointments']:,} appointments filling about 40 % of the",
        "next 4 weeks' 30-minute slots, served by `python -m config.serve` (buckets raised so nothing is refused).",
        "",
        f"Run {f['date']}, this 2-core machine (PostgreSQL, Redis and the server on the same cores):",
        "",
        "| Figure | Measured | Same SQL directly | Target |",
        "|---|--:|--:|---|",
        f"| `GET /booking/{{token}}/availability`, 4 weeks, 10 practitioners ({f['slots_offered']:,} free slots) | "
        f"p50 {doc.ms(f['availability_p50_ms'])} ms, p95 {doc.ms(f['availability_p95_ms'])} ms | "
        f"p50 {f['availability_sql_p50_ms']:.2f} ms ({f['availability_statements']} statements) | "
        f"p50 < 30 ms {doc.met(f['availability_p50_ms'] < 30)} |",
        f"| {f['holds']} concurrent holds on {f['slots']} slots | {f['held']} held, {f['refused']} refused (409), "
        f"{f['other']} other; {f['overlapping_active_holds']} overlapping active holds | | no double booking "
        f"{doc.met(not f['problems'])} |",
        f"| Hold answers per second (release to last answer) | {f['holds_per_second']:,.1f} "
        f"({f['holds']} in {f['hold_seconds']:.2f} s); p50 {doc.ms(f['hold_p50_ms'])} ms, "
        f"p95 {doc.ms(f['hold_p95_ms'])} ms | | reported |",
        "",
        *doc.notes_block("booking-findings", "- *Findings.* (written by hand after a run)"),
        end,
    ]
    doc.write_section("\n".join(lines), start, end)
