"""The "Lead capture" section of docs/benchmarks.md, between `<!-- bench:capture:start -->` and
`<!-- bench:capture:end -->`: a run replaces it (and nothing else), keeping the hand-written findings between the
capture-notes markers; the section is appended when absent."""

import os

from bench import doc
from bench.doc import ms as _ms

START, END = doc.markers("capture")
NOTES_DEFAULT = "_None recorded yet._"

METHOD = """\
`python -m bench capture` (or `make bench BENCH_ARGS=capture`; options in `python -m bench capture --help`).

### How it is measured

- **The design measured** (store, then queue): `POST /capture/{token}` looks the form up, takes a token of its
  bucket, checks the HMAC, stores the submission (one `INSERT`), asks for a drain of the practice
  (`apps.capture.tasks.drain_practice`, one Celery message while a drain is pending or running) and answers 201. A
  worker drains the practice's stored submissions oldest first moments later: match or create
  the patient, open the journey, the attribution touch, timeline, consent, events. The beat sweep
  (`apps.capture.tasks.sweep`, every minute) retries a submission left `received` for 30 s. So the benchmark
  gives two rates: captures accepted through HTTP, and leads made by the workers, with the lag between them.
- **Database**: `practice_crm_bench_capture` (`BENCH_CAPTURE_DATABASE_URL` overrides), dropped, migrated and seeded
  afresh on every run with the patients benchmark's seed (`bench.patients.seed`): the measured practice (owner and API
  key from `manage.py create_practice --api-key`) with 20,000 patients, and 2 other practices of 5,000. Redis
  database 12 (`BENCH_CAPTURE_REDIS_URL`) is flushed and used by the servers and the workers for the rate limits,
  the cache, the channel layer and as the Celery broker.
- **Forms**: 64 signed capture forms made through the settings API (`POST /settings/capture-forms`,
  `deliveryMode: signed`, `confirmMapping: true`, the owner's API key); the load is spread over them
  round-robin so that no form exceeds its bucket (200 burst + 5/s, `SVC_CAPTURE_FORM_BUCKET`, unchanged: the
  generator mirrors each bucket and keeps 20 tokens in hand; "paced" counts the waits this caused). Signed posts
  do not pass the per-address abuse screen (only public-mode posts and unknown tokens do), so nothing is lifted
  although all the load comes from 127.0.0.1.
- **Servers and workers**: 2 daphne processes serving `config.asgi:application` (settings `bench.settings`,
  DEBUG=0), each on its own port, and real Celery workers — `celery -A config worker --pool prefork
  --concurrency 2`, 1 process by default (`--workers`, `--worker-concurrency`), the first with the embedded beat
  (`--no-beat` leaves it out) — on the same database, settings and broker, started before the warm-up and
  running through the measured window: **they compete with daphne and PostgreSQL for the same 2 cores**, as they
  would on a one-machine deployment. Their database connections are named (`application_name`) so that the CPU
  of the PostgreSQL backends can be split between the servers' and the workers' connections.
- **Load**: 8 client threads (4 per server), each with one keep-alive `http.client` connection, post
  `application/json` leads with `X-Service-Delivery-Id`, `X-Service-Timestamp` and
  `X-Service-Signature: v1=<HMAC-SHA256 over "timestamp.deliveryId.rawBody">` (computed by the client from the
  secret shown at creation). Leads carry first_name, last_name, email, phone, message, marketing_consent (60%
  yes) and, for most, utm_source/utm_medium/utm_campaign with a gclid or fbclid. About 85% are new leads (fresh
  e-mail and phone: a patient is created and a journey opened), 12% repeats (the e-mail of a seeded patient or of
  a lead answered 201 earlier in the run — which, processing being queued, may not be a patient yet), 3%
  retries of a delivery already answered (same delivery id and body, fresh timestamp and signature: answered 201,
  nothing stored). Untimed warm-up first.
- **Accepted**: captures/s = requests answered `201 {"ok": true}` in the measured window / its length (any other
  answer is a failure, counted); p50/p95/p99 of the request time, from sending it to reading the last byte. CPU
  seconds over the window (from `/proc`) of the servers, the workers, the benchmark database's PostgreSQL
  backends (split by client), the load generator and everything else, and the 1-minute load average.
- **Processed**: when the window ends the load stops (and the servers) and the workers go on until no
  submission of the run is `received` (at most 10 minutes). processed/s = submissions processed / (last
  `processed_at` - first `created_at`), over the whole run (warm-up included); the capture-to-lead lag is
  `processed_at - created_at` per submission (p50/p95/p99), from the database. Also the submissions processed
  during the measured window (did the workers keep up?).
- **Database check** after the drain: every delivery answered 201 stored once and `processed`, one patient
  created per new lead and matched per repeat, no new lead's e-mail on two patients, the practice's patient
  count, a journey (that exists) and an attribution touch per submission.
- **Direct SQL**: the statements of one new-lead capture request (the form lookup and the submission `INSERT`:
  what the HTTP path runs) and of its processing (the task body), captured in-process through Django's test
  client and the services with the transactions the app opened marked, replayed on a psycopg connection opened
  like Django's (same options, client-side binding, no prepared statements) in the same transactions, committed,
  with fresh ids for every row inserted and a fresh delivery id; the rows are deleted untimed after each replay.
  Beside them, the patient-match `SELECT` alone.
- **Target** (issue 9): at least 300 captures/s with 2 server processes on this 2-core machine."""


def _s(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _run_rows(run: dict, args: dict, target: float) -> list[str]:
    figures = run["figures"]
    latency = figures["latency_ms"] or {"p50": 0, "p95": 0, "p99": 0}
    met = doc.met(figures["rate"] >= target and not figures["failed"])
    rows = [
        f"| `POST /capture/{{token}}`, signed, {args['forms']} forms | **{figures['rate']:.0f}** | {figures['ok']:,} "
        f"| {figures['failed']} | {_ms(latency['p50'])} | {_ms(latency['p95'])} | {_ms(latency['p99'])} "
        f"| ≥ {target:.0f}/s {met} |"
    ]
    for kind, label in (("new", "new leads"), ("repeat", "repeats"), ("retry", "retries")):
        row = figures["by_kind"].get(kind)
        if row:
            rows.append(
                f"| … {label} | | {row['n']:,} | | {_ms(row['p50'])} | {_ms(row['p95'])} | {_ms(row['p99'])} | |"
            )
    return rows


def _processing_rows(run: dict, args: dict) -> list[str]:
    proc, check = run["processing"], run["verification"]
    lag, lag_window = proc["lag_s"], proc["lag_window_s"]
    stored = check["checks"]["submissions stored = originals answered 201"][0]
    workers = f"{args['workers']} worker{'s' if args['workers'] > 1 else ''} x prefork {args['worker_concurrency']}"
    drained = "" if run["drained"] else f" — **drain timed out: {check['still_received']:,} still `received`**"
    return [
        "| Processing (Celery) | Leads/s | Processed | Span s | Lag p50 s | Lag p95 s | Lag p99 s | Lag max s |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
        f"| {workers}, whole run (first capture stored → last lead made){drained} | **{proc['rate']:.0f}** "
        f"| {proc['processed']:,} of {stored:,} | {proc['span_s']:.0f} | {_s(lag['p50'])} | {_s(lag['p95'])} "
        f"| {_s(lag['p99'])} | {_s(lag['max'])} |",
        f"| … during the measured window / captures stored in it | {proc['rate_in_window']:.0f} "
        f"| {proc['processed_in_window']:,} | {run['figures']['wall_s']:.0f} | {_s(lag_window['p50'])} "
        f"| {_s(lag_window['p95'])} | {_s(lag_window['p99'])} | |",
    ]


def _cpu(sampler: dict) -> dict:
    cpu = sampler["cpu_s"]
    split = sampler.get("postgres_by_client_s", {})
    return {
        "daphne": sum(v for k, v in cpu.items() if k.startswith("daphne")),
        "workers": sum(v for k, v in cpu.items() if k.startswith("worker")),
        "pg": sampler["postgres_cpu_s"],
        "pg_servers": split.get("servers", 0.0),
        "pg_workers": split.get("workers", 0.0),
        "pg_other": split.get("other", 0.0),
        "pg_ended": split.get("ended_any_database", 0.0),
    }


def _run_notes(run: dict) -> list[str]:
    figures, check, proc = run["figures"], run["verification"], run["processing"]
    sampler, drain = figures["sampler"], figures["drain_sampler"]
    window = sampler["seconds"]
    cpu, drain_cpu = _cpu(sampler), _cpu(drain)
    ok = max(figures["ok"], 1)
    lines = [
        f"Load: `{run['uptime_before']}` before; 1-minute load {run['load_before']:.2f} when the warm-up started, "
        f"{sampler['load_min']:.2f}-{sampler['load_max']:.2f} during the window (its own processes included), "
        f"machine {sampler['machine_busy']:.0%} busy. CPU over the {window:.0f} s window (of "
        f"{window * (os.cpu_count() or 1):.0f} CPU-seconds): daphne {cpu['daphne']:.1f} s, Celery workers "
        f"{cpu['workers']:.1f} s; PostgreSQL backends of the benchmark database alive at the end: the servers' "
        f"connections {cpu['pg_servers']:.1f} s, the workers' {cpu['pg_workers']:.1f} s, the benchmark's own "
        f"monitoring {cpu['pg_other']:.1f} s; backends that ended during the window (any database: mostly the "
        f"workers' one-connection-per-task backends) {cpu['pg_ended']:.1f} s; other PostgreSQL processes "
        f"{sampler['postgres_shared_cpu_s'] + sampler['postgres_other_cpu_s']:.1f} s, load generator "
        f"{sampler['driver_cpu_s']:.1f} s, everything else {sampler['other_cpu_s']:.1f} s (the busiest processes "
        "not of this run: "
        + ", ".join(f"`{name[:60]}` {used:.1f} s" for name, used in sampler.get("top_others", [])[:3])
        + f"). Per capture accepted in "
        f"the window: daphne {1000 * cpu['daphne'] / ok:.1f} ms, PostgreSQL for the servers "
        f"{1000 * cpu['pg_servers'] / ok:.1f} ms. {figures['warmup_requests']:,} warm-up requests "
        f"({figures['warmup_failed']} failed); per form {figures['min_per_form']}-{figures['max_per_form']} requests"
        + (
            f"; the generator waited {figures['paced_waits']} times ({figures['paced_seconds']:.1f} thread-seconds) "
            "for a form's bucket"
            if figures["paced_waits"]
            else "; no wait for a form's bucket"
        )
        + ".",
        "",
    ]
    processed_in_window = max(proc["processed_in_window"], 1)
    drained_n = max(proc["processed"] - proc["processed_in_window"], 1)
    pg_window = cpu["pg_workers"] + cpu["pg_ended"]
    pg_drain = drain_cpu["pg_workers"] + drain_cpu["pg_ended"]
    lines += [
        f"Processing: during the window the workers used {cpu['workers']:.1f} CPU-s, and their PostgreSQL backends "
        f"(alive + ended) {pg_window:.1f} s, for {proc['processed_in_window']:,} leads "
        f"({1000 * cpu['workers'] / processed_in_window:.0f} + {1000 * pg_window / processed_in_window:.0f} ms per "
        f"lead); the drain afterwards took {run['drain_s']:.0f} s (the servers stopped), machine "
        f"{drain['machine_busy']:.0%} busy, load {drain['load_min']:.2f}-{drain['load_max']:.2f} (everything "
        f"else {drain['other_cpu_s']:.1f} s, other PostgreSQL "
        f"{drain['postgres_other_cpu_s']:.1f} s; busiest not of this run: "
        + ", ".join(f"`{name[:60]}` {used:.1f} s" for name, used in drain.get("top_others", [])[:2])
        + f"): workers "
        f"{drain_cpu['workers']:.1f} CPU-s and their backends {pg_drain:.1f} s for the remaining ~{drained_n:,} "
        f"({1000 * drain_cpu['workers'] / drained_n:.0f} + {1000 * pg_drain / drained_n:.0f} ms per lead); "
        f"{drain.get('new_connections', 0):,} new connections to the benchmark database during the drain "
        f"({sampler.get('new_connections', 0):,} during the window: each task opens one); its backends spent "
        f"{drain.get('db_active_s', 0):.1f} s running statements during the drain (pg_stat_database.active_time, "
        f"wall time), {1000 * drain.get('db_active_s', 0) / drained_n:.0f} ms per lead. "
        f"{proc['lag_over_30s']:,} leads made more than 30 s after their capture; "
        f"{check['processed_after_a_failed_attempt']:,} needed more than one attempt.",
        "",
    ]
    for title, waits, blockers in (
        ("over the window", figures.get("waits"), figures.get("lock_waits")),
        ("over the drain", figures.get("drain_waits"), None),
    ):
        if waits:
            lines += [
                f"Active backends of the benchmark database {title} (pg_stat_activity every 50 ms): "
                + ", ".join(f"{name} {share:.0%}" for name, share in waits[:6])
                + "."
                + (
                    " Lock waits sampled (statement waiting ⟵ what the backend it waits for was last running):"
                    if blockers
                    else ""
                ),
                "",
            ]
            if blockers:
                lines += [*(f"- {count:,} x `{name}`" for name, count in blockers[:4]), ""]
    mismatches = check["mismatches"]
    if mismatches:
        lines.append(
            "Database check: **mismatches** — "
            + "; ".join(f"{name}: {got:,} (expected {want:,})" for name, (got, want) in mismatches.items())
            + "."
        )
    else:
        stored = check["checks"]["submissions stored = originals answered 201"][0]
        created = check["checks"]["patients created = new leads"][0]
        matched = check["checks"]["patients matched = repeats"][0]
        lines.append(
            f"Database check: consistent — {stored:,} submissions stored (warm-up included), all processed; "
            f"{created:,} patients created, {matched:,} matched; every submission has a journey and a touch; "
            f"{check['retries_answered_201']:,} retries answered 201 without a new row."
        )
    lines.append(
        f"{check['repeats_processed_first']:,} repeats of a lead of the run were processed before that lead (the "
        "repeat created the patient, the lead then matched it)."
    )
    lines.append("")
    if figures["failures"]:
        status, delivery, body = figures["failures"][0]
        lines += [f"First failure: {status} for delivery `{delivery}`: `{body[:200]}`", ""]
    return lines


def _profile_rows(profile: dict) -> list[str]:
    summary, kinds = profile["summary"], profile["by_kind"]
    request, processing = summary["request"], summary["processing"]
    lines = [
        f"In-process (Django test client and the task body called directly, same settings, no daphne, no worker, "
        f"one at a time): a new-lead capture request takes {request['plain_ms_p50']:.1f} ms (p50 of "
        f"{summary['captures']}; under cProfile {request['statements']:.0f} statements, {request['db_ms']:.1f} ms "
        f"of SQL), its processing {processing['plain_ms_p50']:.1f} ms ({processing['statements']:.0f} statements, "
        f"{processing['db_ms']:.1f} ms of SQL). The heaviest statements:",
        "",
        "| Part | Statement kind | per capture | ms per capture |",
        "|---|---|--:|--:|",
    ]
    for part, top in (("request", 4), ("processing", 8)):
        lines += [
            f"| {part} | `{k['kind']}` | {k['per_capture']:.1f} | {k['ms_per_capture']:.2f} |"
            for k in kinds[part][:top]
        ]
    return [*lines, ""]


def section(results: dict, *, target: float) -> str:
    machine, args, direct = results["machine"], results["args"], results["direct"]
    runs = results["runs"]
    lines = [
        START,
        "## Lead capture",
        "",
        METHOD,
        "",
        f"### Results ({results['started'][:16].replace('T', ' ')} UTC)",
        "",
        doc.machine_line(machine),
        f"- **Stack**: {machine['postgres']}; {machine['python']}; {machine.get('celery', 'Celery')}",
        f"- **Code**: {machine['code']}",
        f"- **Run**: {args['forms']} forms, {args['servers']} daphne processes, {args['concurrency']} connections, "
        f"{args['workers']} Celery worker process{'es' if args['workers'] > 1 else ''} (prefork, concurrency "
        f"{args['worker_concurrency']}{'' if args['no_beat'] else ', embedded beat'}); {args['warmup']:.0f} s "
        f"warm-up, {args['duration']:.0f} s measured; {results['patients']:,} patients in the practice at the start",
        "",
        "| Accepted through HTTP | Captures/s | Answered 201 | Failed | p50 ms | p95 ms | p99 ms | Target |",
        "|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for run in runs:
        lines += _run_rows(run, args, target)
    lines.append("")
    for run in runs:
        lines += _processing_rows(run, args)
    request, processing, match = direct["request"], direct["processing"], direct.get("match")
    lines += [
        "",
        "| Same SQL run directly (psycopg) | n | p50 ms | p95 ms | p99 ms |",
        "|---|--:|--:|--:|--:|",
        f"| The HTTP path of one capture (form lookup + submission `INSERT`): {request['statements']} statements, "
        f"{request['transactions']} transaction{'s' if request['transactions'] != 1 else ''}, committed "
        f"| {request['n']} | {request['p50']:.2f} | {request['p95']:.2f} | {request['p99']:.2f} |",
        f"| Its processing (the task body, new lead): {processing['statements']} statements, "
        f"{processing['transactions']} transaction{'s' if processing['transactions'] != 1 else ''}, committed "
        f"| {processing['n']} | {processing['p50']:.2f} | {processing['p95']:.2f} | {processing['p99']:.2f} |",
    ]
    if match:
        lines.append(
            f"| … the patient-match `SELECT` alone | {match['n']} | {match['p50']:.2f} | {match['p95']:.2f} "
            f"| {match['p99']:.2f} |"
        )
    lines += [
        "",
        f"Run serially, the HTTP path's SQL takes {request['p50']:.2f} ms (p50), a ceiling of about "
        f"{1000 / request['p50']:.0f} captures/s per connection before any Python runs; the processing's "
        f"{processing['p50']:.1f} ms, about {1000 / processing['p50']:.0f} leads/s per worker process.",
        "",
    ]
    for run in runs:
        lines += _run_notes(run)
    if results.get("profile"):
        lines += _profile_rows(results["profile"])
    lines += [
        "### Findings (lead capture)",
        "",
        *doc.notes_block("capture-notes", NOTES_DEFAULT),
        END,
    ]
    return "\n".join(lines)


def write(new_section: str) -> None:
    doc.write_section(new_section, START, END)
