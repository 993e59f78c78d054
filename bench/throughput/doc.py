"""The "Serving throughput" section of docs/benchmarks.md, between `<!-- bench:throughput:start -->` and
`<!-- bench:throughput:end -->`: a run replaces that block (appended at the end of the file the first time) and
nothing else, keeping the hand-written findings between the throughput-notes markers."""

from bench import doc

START, END = doc.markers("throughput")
NOTES_DEFAULT = "_None recorded yet._"
FULL_PATIENTS = 100_000

METHOD = """\
`python -m bench throughput` (or `make bench BENCH_ARGS=throughput`; options in `python -m bench throughput --help`;
`PATIENTS=N` changes the practice's size) drives the real server with [wrk](https://github.com/wg/wrk) (Debian's
package, installed by `scripts/ensure-wrk.sh` when missing), through the old serving setup (daphne alone,
`python -m config.server`) and the new one (`python -m config.serve`), each started on its own against the same
database. Method in full: `bench/throughput/run.py`.

### How it is measured

- **Data**: database `practice_crm_bench_throughput` (`BENCH_THROUGHPUT_DATABASE_URL` overrides) with the patients
  benchmark's seed (100,000 patients in the measured practice by default, 5 other practices of 10,000) and the CRM
  benchmark's journeys, tasks and appointments on top (0.3, 0.5 and 0.2 per patient), reused when already there.
  Redis database 14 (`BENCH_THROUGHPUT_REDIS_URL`), flushed.
- **Servers**: settings `bench.throughput.settings` (DEBUG=0): the per-API-key and per-form capture buckets are
  raised so that no request is refused; both are still checked in Redis on every request.
- **Load**: for each scenario a warm-up run (`wrk -t2 -c8`), then `wrk -t1 -c1` and `wrk -t2 -c8` with `--latency`
  through `bench/throughput/requests.lua`, which sets the owner's API key, cycles the paths (256 patients for one
  patient) and counts every answer by status. Closed loop: each connection sends its next request when the answer
  to the last has arrived. Latencies are wrk's, from sending a request to its answer.
- **Signed captures**: pre-generated just before each run (distinct delivery ids, JSON leads, `v1` HMAC-SHA256 over
  `timestamp.deliveryId.body` with the form's signing secret, timestamped within the 5 minutes the server accepts),
  each thread its own share, none ever sent twice. Accepted = the 201 answers; afterwards the submissions stored
  under the run's delivery ids are counted, and each accepted capture must have its row (beyond them only the
  requests still in flight when wrk stopped). No Celery worker runs: the submissions wait `received` (the capture
  benchmark measures their processing).
- **Direct SQL**: each request once in-process (Django's test client, same settings) under `CaptureQueriesContext`,
  its statements (authentication included) replayed on a psycopg connection opened like Django's; p50 of the
  replays. For the capture, its request's statements (form lookup, submission INSERT) with fresh ids, committed.
  API/SQL is the 1-connection API p50 over that p50: what serving, Python and the wire add.
- **Check**: every answer the expected status (204, 200 or 201), no socket error, and for captures every 2xx
  stored; anything else is listed and fails the run.
- **Targets** (issue 16, this 2-core machine): `GET /auth/me` ≥ 1,000 req/s; default patient list ≥ 400 req/s with
  p50 ≤ 10 ms at 8 connections (100,000 patients); signed captures ≥ 500 accepted/s with p99 < 100 ms; API p50
  within 2x of the direct SQL for the patients scenarios."""


def _processes(count: int) -> str:
    return f"{count} process" + ("" if count == 1 else "es")


def section(figures: dict, table: str) -> str:
    machine = figures["machine"]
    patients = figures["patients"]
    scale = ""
    if patients != FULL_PATIENTS:
        scale = (
            f"\n\n**Development run at {patients:,} patients, not the issue's {FULL_PATIENTS:,}: the patients and "
            "board/Today figures are not the ones the targets are about.**"
        )
    skipped = "".join(f"\n- **Not measured**: stack `{name}`: {why}" for name, why in figures["skipped"].items())
    stack_lines = [
        f"- **Server `{name}`**: {_processes(info['server_processes'])}; `{info['uptime_before']}` before"
        f" measuring, 1-minute load {info['load_before']:.2f}"
        + (
            " (**other work was running on this 2-core machine: figures are pessimistic**)"
            if info["load_before"] > 1.5
            else ""
        )
        for name, info in figures["stack_info"].items()
    ]
    counts = figures["crm_counts"]
    lines = [
        START,
        "## Serving throughput (wrk)",
        "",
        METHOD,
        "",
        f"### Results ({figures['started'][:10]}, {patients:,} patients){scale}",
        "",
        f"- **Date**: {figures['started'][:16].replace('T', ' ')} UTC; run took {figures['seconds'] / 60:.1f} min",
        doc.machine_line(machine),
        f"- **Stack**: {machine['postgres']}; {machine['python']}; {figures['wrk']}",
        f"- **Code**: {machine['code']}",
        f"- **Data**: measured practice {patients:,} patients, {counts['journeys']:,} journeys, "
        f"{counts['tasks']:,} tasks, {counts['appointments']:,} appointments; {figures['others']} other practices of "
        f"{figures['other_patients']:,} patients",
        f"- **Runs**: {figures['duration']:g} s each at 1 and 8 connections after a {figures['warmup']:g} s warm-up; "
        f"{figures['sql_iterations']} direct-SQL replays per scenario",
        *stack_lines,
        *([skipped.strip("\n")] if skipped else []),
        "",
        table,
        "",
        "### Findings (serving throughput)",
        "",
        *doc.notes_block("throughput-notes", NOTES_DEFAULT),
        END,
    ]
    return "\n".join(lines)


def write(new_section: str) -> None:
    doc.write_section(new_section, START, END)
