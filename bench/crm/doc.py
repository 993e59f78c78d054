"""The "CRM" section of docs/benchmarks.md, between `<!-- bench:crm:start -->` and `<!-- bench:crm:end -->`: a run
replaces that block (appended at the end of the file the first time) and nothing else, keeping the hand-written
findings between the crm-notes markers."""

from bench import doc
from bench.doc import ms as _ms

START, END = doc.markers("crm")
NOTES_DEFAULT = "_None recorded yet._"
TABLES = ("patients_patient", "journeys_journey", "tasks_task", "appointments_appointment")

METHOD = """\
`python -m bench crm` (or `make bench BENCH_ARGS=crm`; options in `python -m bench crm --help`) measures the reads
of issue 8 in a database of its own, `practice_crm_bench_crm` (`BENCH_CRM_DATABASE_URL` overrides), reused when it
already holds the seed.

### How it is measured

- **Seed**: the patients seed (`bench/patients/seed.py`, unchanged: 100,000 patients in the measured practice,
  5 other practices of 10,000), then set-based SQL (`bench/crm/seed.py`) adding to every practice, in proportion to
  its patients, 0.3 journeys, 0.5 tasks and 0.2 appointments per patient — **30,000 journeys, 50,000 tasks and 20,000
  appointments** in the measured one, a tenth of that in each other one, so every read filters by tenant. The
  treatment catalogue's built-in entry and the default pipeline (New lead → … → Won / Lost) come from the app's
  `practice_catalogue_seed`; 7 more treatments, 5 team members besides the owner, 8 practitioners. Journeys: 58%
  open (over the 5 open stages, most in the early ones), 25% won, 17% lost; at most one open journey per patient
  and treatment; 25% assigned to the owner, 57% to other members. Tasks: due from 60 days ago to 30 days ahead (8%
  undated), past ones mostly completed or cancelled, 20% left open; 35% assigned to the owner. Appointments: 8
  practitioners x 16 half-hour slots a day in Europe/Rome, 4 in 5 taken, every day of the week, 80% before today;
  never overlapping for a practitioner (the exclusion constraint holds). `VACUUM (ANALYZE)` before measuring. The
  CRM rows are rebuilt when older than 12 hours (their dates are relative to the seed time).
- **Through HTTP**: daphne serves `config.asgi:application` (settings `bench.settings`, DEBUG=0); one keep-alive
  `http.client` connection with the API key of the measured practice's owner, who is the member that `mine`,
  `assigneeId` and `/today` are about. A request's time runs from sending it to reading the last byte.
- **Direct SQL**: as in the patients benchmark (`bench/patients/runner.py`): each request runs once in-process under
  `CaptureQueriesContext`, and its statements — authentication and practice selection included, as psycopg sent
  them — are replayed on a psycopg connection opened like Django's, rows fetched, after each HTTP iteration.
- **Figures**: p50/p95 over the timed iterations in milliseconds; API/SQL is the ratio of the p50s (the rest is
  Python: DRF, serializers, JSON, daphne). "SQL stmts (data)" counts a request's statements (in brackets those on
  CRM and patient tables). Per statement, the execution time from `EXPLAIN (ANALYZE)` is listed below the table.
- **Target** (issue 8, at 100,000 patients): journeys board and `GET /today` p50 < 100 ms. The calendar and
  `GET /tasks?view=mine` have no target and are reported for reference."""


def table_rows(conn) -> dict[str, int]:
    """Rows in each table, all practices together."""
    return {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES}


def _table(rows: list[dict]) -> list[str]:
    lines = [
        "| Request | Response | SQL stmts (data) | n | API p50 ms | API p95 ms | SQL p50 ms | SQL p95 ms "
        "| API/SQL p50 | Target (p50) |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for row in rows:
        target = ""
        if row["target_ms"] is not None:
            target = f"< {row['target_ms']:g} ms {doc.met(row['api_p50'] < row['target_ms'])}"
        ratio = f"{row['ratio']:.1f}x" if row["ratio"] is not None else "-"
        lines.append(
            f"| {row['label']} | {row['response']}; {row['bytes'] / 1024:.0f} KB | {row['statements']} "
            f"({row['data_statements']}) | {row['n']} | {_ms(row['api_p50'])} | {_ms(row['api_p95'])} "
            f"| {_ms(row['sql_p50'])} | {_ms(row['sql_p95'])} | {ratio} | {target} |"
        )
    return lines


def _statements(rows: list[dict]) -> list[str]:
    lines = ["<details><summary>Execution time of each data statement (EXPLAIN ANALYZE, once)</summary>", ""]
    for row in rows:
        lines += [f"**{row['label']}** (`{row['path']}`)", ""]
        for item in row["statement_times"]:
            ms = f"{item['ms']:.2f} ms" if item["ms"] is not None else "?"
            lines.append(f"- {ms}: `{item['sql']}`")
        lines.append("")
    lines.append("</details>")
    for row in rows:
        if row.get("slowest"):
            slowest = row["slowest"]
            lines += [
                "",
                f"<details><summary>Plan of the slowest statement of “{row['label']}” ({slowest['ms']:.1f} ms)"
                "</summary>",
                "",
                "```sql",
                slowest["full"],
                "```",
                "```",
                slowest["plan"],
                "```",
                "",
                "</details>",
            ]
    return lines


def section(figures: dict) -> str:
    machine, rows = figures["machine"], figures["rows"]
    loads = [value for row in rows for value in (row.get("load") or ())]
    tables = figures["tables"]
    counts = figures["counts"]
    lines = [
        START,
        "## CRM: journeys board, Today, calendar, tasks",
        "",
        METHOD,
        "",
        f"### Results ({figures['started'][:10]}, {figures['patients']:,} patients)",
        "",
        f"- **Date**: {figures['started'][:16].replace('T', ' ')} UTC; run took {figures['seconds'] / 60:.1f} min "
        f"(of which {figures['seed_seconds'] / 60:.1f} min preparing the database; CRM rows seeded "
        f"{figures['crm_seeded'][:16].replace('T', ' ')} UTC)",
        doc.machine_line(machine),
        f"- **Load**: `{figures['uptime']}` before the run; 1-minute load {figures['load_before']:.2f} when measuring "
        f"started, {min(loads):.2f}-{max(loads):.2f} during it"
        + (" (**other work was running on this 2-core machine: figures are pessimistic**)" if max(loads) > 1.5 else ""),
        f"- **Stack**: {machine['postgres']}; {machine['python']}",
        f"- **Code**: {machine['code']}",
        f"- **Data**: measured practice {figures['patients']:,} patients, {counts['journeys']:,} journeys, "
        f"{counts['tasks']:,} tasks, {counts['appointments']:,} appointments; all {figures['others'] + 1} practices "
        f"together {tables['patients_patient']:,} patients, {tables['journeys_journey']:,} journeys, "
        f"{tables['tasks_task']:,} tasks, {tables['appointments_appointment']:,} appointments",
        f"- **Iterations**: {figures['iterations']} timed per request (n: fewer when its time budget ran out) after "
        f"{figures['warmup']} untimed; {figures['reconnects']} keep-alive reconnects",
        "",
        *_table(rows),
        "",
        *_statements(rows),
        "",
        "### Findings (CRM)",
        "",
        *doc.notes_block("crm-notes", NOTES_DEFAULT),
        END,
    ]
    return "\n".join(lines)


def write(new_section: str) -> None:
    """Put the section in place of the old block, or after everything else when there is none."""
    doc.write_section(new_section, START, END)
