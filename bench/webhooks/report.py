"""The "Outbound webhooks" section of docs/benchmarks.md.

The section lives between `<!-- bench:webhooks:start -->` and `<!-- bench:webhooks:end -->`; a webhook run replaces
only it (appending it the first time), and the patients benchmark (bench/patients/report.py) keeps it when it
regenerates the file. Text between `<!-- webhooks-notes:start -->` and `<!-- webhooks-notes:end -->` (findings) is
kept as written.
"""

from bench import doc
from bench.doc import met as _met

START, END = doc.markers("webhooks")
NOTES_DEFAULT = "_No notes yet._"
TARGET_RATE = 300.0
TARGET_P50_MS = 1000.0


def _load(sampler: dict) -> str:
    return f"{sampler['load_before']:.2f} / {sampler['load_min']:.2f}-{sampler['load_max']:.2f}"


def _dates(runs: list[dict], started) -> str:
    days = sorted({run["throughput"].get("at", started.strftime("%Y-%m-%d %H:%M UTC"))[:10] for run in runs})
    return ", ".join(days) or started.strftime("%Y-%m-%d")


def section(results: dict, started) -> str:
    machine = results["machine"]
    args = results["args"]
    runs = results["runs"]
    lines = [
        START,
        "## Outbound webhooks",
        "",
        "`make bench BENCH_ARGS=webhooks` (or `.venv/bin/python -m bench webhooks`, also",
        "`python -m bench.webhooks`; options in `python -m bench webhooks --help`, e.g. `--events 2000`,",
        "`--workers 1,2`, `--what-if NAME` for a proposed fix in `bench/webhooks/worker.py`).",
        "It needs PostgreSQL and Redis (`make bench` runs `scripts/ensure-services.sh` first) and leaves every other",
        "database alone: it drops and recreates `practice_crm_bench_webhooks` (`BENCH_WEBHOOKS_DATABASE_URL`) and",
        "flushes Redis database 13 (`BENCH_WEBHOOKS_REDIS_URL`), its broker, cache and channel layer.",
        "",
        "### How it is measured",
        "",
        "- **Set-up**: settings `bench.webhooks.settings` (the dev settings with `DEBUG=True` and",
        "  `SVC_WEBHOOKS_ALLOW_LOOPBACK=True`, which `sender.loopback_allowed()` needs for `http://127.0.0.1:<port>`,",
        "  and `CELERY_TASK_ALWAYS_EAGER=False`). One practice; 5 endpoints created with",
        "  `apps.webhooks.services.endpoint_create` (secrets kept), subscribed to `patient.created`/`patient.updated`,",
        "  then marked enabled and verified.",
        "- **Receiver**: `bench/webhooks/receiver.py`, an asyncio HTTP/1.1 server in its own process on 127.0.0.1, one",
        "  path per endpoint, answers `200` as soon as the body is read and records the receive time",
        "  (`time.monotonic()`, the machine-wide `CLOCK_MONOTONIC`), `X-Service-Delivery-Id`, timestamp, signature and",
        "  raw body. **Every** signature is checked afterwards with its endpoint's secret (the README recipe).",
        "- **Workers**: N separate `celery -A config worker --pool solo --concurrency 1` processes",
        "  (`bench/webhooks/worker.py`: Celery's `worker_main` with the app code unchanged), prefetch 1, late acks, as",
        "  configured in `config/settings/base.py`. No beat: the sweep is not involved.",
        "- **Throughput**: deliveries and events emptied (`TRUNCATE`, `VACUUM ANALYZE`), workers started and warmed up",
        "  with 20 events, then the events of the table recorded with `apps.events.services.emit_many` in **one",
        "  transaction**. An `on_commit` hook registered before the app's listener stamps the commit; the app's",
        "  listener then publishes `fan_out`, which fans out in batches of 1,000 events and hands each endpoint to",
        "  `drain` (200 deliveries or 20 s per task, then requeued). Elapsed = last receipt - commit;",
        "  deliveries/s = events x 5 / elapsed. Afterwards every delivery must be `delivered` with one attempt,",
        "  the receiver must have seen each (event, endpoint) once and no delivery id twice.",
        f"- **Idle latency**: same workers, no backlog: {args['latency_events']} single events, each `emit` in its own",
        f"  transaction, committed {args['latency_spacing'] * 1000:.0f} ms after the previous event's 5 deliveries "
        "have all arrived;",
        "  commit-to-receipt = receiver's receive time - commit stamp, for each of the 5 deliveries of each event",
        '  ("all 5 of an event": until the last of the five).',
        "- **Load average**: before each measurement the benchmark waits (up to "
        f"{args['max_wait']:.0f} s) for the 1-minute load average to fall",
        f"  below {args['max_load']}; the table gives it just before the measurement and its range during it",
        "  (the benchmark's own processes add to it). CPU columns (from `/proc/<pid>/stat`, every process sampled",
        "  every 0.5 s): CPU time of the worker processes, and of the PostgreSQL backends of the benchmark database",
        "  (autovacuum included), divided by deliveries; machine busy = share of both cores in use",
        "  (`/proc/stat`); other work = CPU used by processes that are not the benchmark's (other databases'",
        "  backends, other programs), in cores, averaged over the run.",
        "",
        f"### Results ({_dates(runs, started)})",
        "",
        doc.machine_line(machine),
        f"- **Stack**: {machine['postgres']}; Redis {machine.get('redis', '?')}; {machine['python']}; "
        f"{machine.get('celery', '')}",
        f"- **Last run took** {results['seconds'] / 60:.1f} min; the At column gives when each row was measured",
        "",
        "| Workers | At (UTC) | Events → deliveries | Commit → last receipt | **Deliveries/s** "
        "| Commit → first receipt | Worker CPU / delivery | PostgreSQL CPU / delivery | Machine busy | Other work "
        "| Load 1-min before / during | Target |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|",
    ]
    for run in runs:
        t = run["throughput"]
        sampler = t["sampler"]
        target = ""
        if t["workers"] == 2 and not t["what_if"]:
            target = f"≥ {TARGET_RATE:.0f}/s {_met(t['rate'] >= TARGET_RATE)}"
        elif t["what_if"]:
            target = "what-if (not the app as it is)"
        complete = "" if t["complete"] else f" (cut: {t['deliveries']:,} of {t['events'] * 5:,})"
        lines.append(
            f"| {t['label']} | {t.get('at', started.strftime('%Y-%m-%d %H:%M UTC'))[11:16]} "
            f"| {t['events']:,} → {t['deliveries']:,}{complete} | {t['elapsed_s']:.1f} s "
            f"| **{t['rate']:.1f}** | {t['first_receipt_s']:.2f} s | {t['worker_cpu_ms_per_delivery']:.1f} ms "
            f"| {t['postgres_cpu_ms_per_delivery']:.1f} ms | {100 * sampler['machine_busy']:.0f}% "
            f"| {t['other_work_cores']:.2f} cores "
            f"| {_load(sampler)} | {target} |"
        )
    lines += [
        "",
        "| Workers | Idle commit → receipt p50 | p95 | max | All 5 of an event p50 / p95 | n "
        "| Load 1-min before / during | Target |",
        "|---|--:|--:|--:|--:|--:|---|---|",
    ]
    for run in runs:
        lat = run["latency"]
        if not lat:
            continue
        t = run["throughput"]
        target = f"p50 < 1 s {_met(lat['p50_ms'] < TARGET_P50_MS)}" if not t["what_if"] else "what-if"
        lines.append(
            f"| {t['label']} | {lat['p50_ms']:.0f} ms | {lat['p95_ms']:.0f} ms | {lat['max_ms']:.0f} ms "
            f"| {lat['last_of_event_p50_ms']:.0f} / {lat['last_of_event_p95_ms']:.0f} ms | {lat['n']} "
            f"| {_load(lat['sampler'])} | {target} |"
        )
    lines.append("")
    checks = []
    for run in runs:
        t = run["throughput"]
        c = t["checks"]
        db_rows = c["db"]["by_status"]
        statuses = ", ".join(
            f"{s} {v['count']:,} (attempts {v['min_attempts']}-{v['max_attempts']})" for s, v in db_rows.items()
        )
        checks.append(
            f"- {t['label']}: {_met(c['ok'])} receiver saw {c['received']:,}/{c['expected']:,}, "
            f"{c['duplicate_delivery_ids']} duplicate delivery ids, {c['duplicate_event_endpoint']} duplicate and "
            f"{c['missing_event_endpoint']} missing (event, endpoint) pairs; signatures verified "
            f"{c['signatures_verified']:,}, failed {c['signatures_failed']}; database: {statuses}."
        )
    lines += ["**Checks** (every delivery of the throughput runs):", "", *checks, ""]
    lines += _in_process(results.get("in_process"))
    lines += _history(results.get("history"))
    lines += [
        "### Findings and proposed fixes (webhooks)",
        "",
        *doc.notes_block("webhooks-notes", NOTES_DEFAULT),
        END,
    ]
    return "\n".join(lines)


def _in_process(data: dict | None) -> list[str]:
    if not data:
        return []
    batch, profile, fixed = data["batch"], data["profile"], data["profile_what_if"]
    n = batch["deliveries"]
    lines = [
        "### Where the time goes (in-process, workers stopped)",
        "",
        f"One `drain_endpoint` of one claim batch ({n} deliveries), run in the benchmark process under",
        "`CaptureQueriesContext`; commits from `pg_stat_database.xact_commit`:",
        "",
        "| Statement | Count | Per delivery |",
        "|---|--:|--:|",
    ]
    control = {k: v for k, v in batch["kinds"].items() if k in ("BEGIN", "COMMIT", "ROLLBACK")}
    for kind, count in sorted(batch["kinds"].items(), key=lambda kv: -kv[1]):
        if kind not in control:
            lines.append(f"| `{kind}` | {count} | {count / n:.2f} |")
    sql_total = sum(v for k, v in batch["kinds"].items() if k not in control)
    total = sum(batch["kinds"].values())
    lines += [
        f"| **SQL statements** | **{sql_total}** | **{sql_total / n:.2f}** |",
        *(f"| `{k}` (atomic blocks) | {v} | {v / n:.2f} |" for k, v in control.items()),
        f"| **round trips** | **{total}** | **{total / n:.2f}** |",
        f"| transactions committed (`xact_commit`, autocommit statements included) | {batch['commits']} "
        f"| {batch['commits'] / n:.2f} |",
        "",
        f"A timed `drain_endpoint` of {profile['sent']} deliveries (the default per task), per delivery: "
        f"**{profile['wall_ms']:.1f} ms** wall ({profile['cpu_ms']:.1f} ms CPU in the process), of which "
        f"database {profile['db_ms']:.1f} ms ({profile['statements']:.1f} round trips), `sender.post` "
        f"{profile['post_ms']:.1f} ms ({profile['client_ms']:.1f} ms of it constructing the `httpx.Client`) "
        f"and {profile['other_ms']:.1f} ms of the rest (ORM, signing, Python). "
        f"Load average then {profile['load']:.2f}.",
        "",
    ]
    if fixed:
        lines += [
            "The same timed drain, each on another endpoint, with proposed fixes applied in the benchmark process",
            "only (`bench/webhooks/worker.py`):",
            "",
            "| Variant | Wall ms / delivery | CPU ms / delivery | Database ms / delivery | Round trips / delivery |",
            "|---|--:|--:|--:|--:|",
            f"| as is | {profile['wall_ms']:.1f} | {profile['cpu_ms']:.1f} | {profile['db_ms']:.1f} "
            f"| {profile['statements']:.1f} |",
            *(
                f"| what-if {spec} | {v['wall_ms']:.1f} | {v['cpu_ms']:.1f} | {v['db_ms']:.1f} "
                f"| {v['statements']:.1f} |"
                for spec, v in fixed.items()
            ),
            "",
        ]
    lines += [
        f"<details><summary>EXPLAIN (ANALYZE, BUFFERS) of each statement of the drain, as sent "
        f"({data['rows_in_table']:,} rows in webhooks_webhookdelivery)</summary>",
        "",
    ]
    for kind, (sql, plan) in data["plans"].items():
        lines += [f"**{kind}**", "", "```sql", sql, "```", "```", plan, "```", ""]
    lines += [
        "</details>",
        "",
    ]
    return lines


def _history(data: dict | None) -> list[str]:
    if not data or "index" not in data or not all("variants" in item for item in data.get("plans", {}).values()):
        return []
    plans = data["plans"]
    names = list(dict.fromkeys(name for item in plans.values() for name in item["variants"]))
    lines = [
        "### With history and a backlog: the claim and the per-drain expiry (`python -m bench.webhooks.history`)",
        "",
        f"After the runs, {data['rows_added']:,} delivered rows (30 days of history) were added to one endpoint and a "
        f"backlog of {data['backlog']:,} due deliveries spread over the 5 endpoints, as right after a big fan-out "
        f"({data['table_rows']:,} rows in the table, {data['table_due']:,} of them due, {data['table_size']}; the "
        f"endpoint has {data['endpoint_rows']:,} rows, {data['endpoint_due']:,} due), then `VACUUM ANALYZE`. The two "
        "statements of `drain_endpoint` that read the endpoint's rows were captured as the app sends them and run "
        "under `EXPLAIN (ANALYZE, BUFFERS)` (best of 3): as migrated (the claim-order partial index below, "
        "migration 0003; the expiry names the practice and the status so that it applies), and as before issue 4 "
        "(that index swapped for the previous `(organization, endpoint, status, next_attempt_at)` one in a "
        "transaction that was rolled back; the expiry as it was then):",
        "",
        "```sql",
        data["index"] + ";",
        "```",
        "",
        "| Statement | " + " | ".join(names) + " |",
        "|---|" + "--:|" * len(names),
    ]
    labels = {
        "claim": "claim (`_claim`, every 25 deliveries)",
        "expire_exhausted": "`expire_exhausted(endpoint=…)` (every drain task)",
    }
    for key, item in plans.items():
        cells = [f"{item['variants'][name]['ms']:.2f} ms" if name in item["variants"] else "-" for name in names]
        lines.append(f"| {labels.get(key, key)} | " + " | ".join(cells) + " |")
    lines += ["", "<details><summary>Statements and plans</summary>", ""]
    for key, item in plans.items():
        lines += [f"**{key}**, as the app sends it:", "", "```sql", item["sql"].strip(), "```", ""]
        if item.get("previous_sql"):
            lines += ["Before issue 4:", "", "```sql", item["previous_sql"], "```", ""]
        for name in names:
            if name in item["variants"]:
                lines += [f"{name}:", "", "```", item["variants"][name]["plan"], "```", ""]
    lines += ["</details>", ""]
    return lines


def write_doc(new_section: str) -> None:
    doc.write_section(new_section, START, END)
