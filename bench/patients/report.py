"""The results table (printed and written to docs/benchmarks.md) and the machine it ran on.

docs/benchmarks.md is regenerated on every run. One section per patient count is kept (a run replaces the section of
its own count and leaves the others), each carrying its figures as JSON in an HTML comment, from which the
side-by-side summary is rebuilt. Text between `<!-- notes:start -->` and `<!-- notes:end -->` is kept as written.
"""

import datetime
import json
import os
import re

from bench import doc
from bench.doc import met as _met
from bench.doc import ms as _ms
from bench.patients.scenarios import Scenario, percentile

RATIO_TARGET = 2.0
SEARCH_INDEXES = ("patients_searchterm_trgm_idx", "patients_search_keys_idx")
RSS_TARGET_MB = 20.0

NOTES_DEFAULT = "_No notes yet._"


def summarise(scenario: Scenario) -> dict:
    api50, api95 = percentile(scenario.api_ns, 50), percentile(scenario.api_ns, 95)
    sql50, sql95 = percentile(scenario.sql_ns, 50), percentile(scenario.sql_ns, 95)
    data_statements = sum(1 for s in scenario.statements if "patients_" in s or "events_event" in s)
    row = {
        "key": scenario.key,
        "label": scenario.label,
        "statements": len(scenario.statements),
        "data_statements": data_statements,
        "api_p50": api50,
        "api_p95": api95,
        "sql_p50": sql50,
        "sql_p95": sql95,
        "ratio": api50 / sql50 if sql50 else None,
        "target_ms": scenario.target_ms,
        "total": scenario.extra.get("total"),
        "load": scenario.extra.get("load"),
        "n": len(scenario.api_ns),
    }
    if scenario.kind == "export":
        growth = scenario.extra.get("rss_growth") or [0]
        row.update(
            rows=scenario.extra.get("rows"),
            bytes=scenario.extra.get("bytes"),
            rss_first_mb=scenario.extra.get("rss_growth_first", 0) / 2**20,
            rss_max_mb=max(growth) / 2**20,
            rss_p50_mb=percentile(growth, 50) / 2**20 if len(growth) > 1 else growth[0] / 2**20,
        )
    if scenario.kind == "bulk":
        row["updated"] = scenario.extra.get("updated")
    if scenario.undo_statements:
        row["statements_remove"] = len(scenario.undo_statements)
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| Scenario | Matches | SQL stmts (data) | n | API p50 ms | API p95 ms | SQL p50 ms | SQL p95 ms "
        "| API/SQL p50 | Target (p50) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for row in rows:
        matches = ""
        if row.get("rows") is not None:
            matches = f"{row['rows']:,} rows"
        elif row.get("total") is not None:
            matches = f"{row['total']:,}"
        elif row.get("updated"):
            matches = "/".join(str(u) for u in row["updated"]) + " updated"
        statements = f"{row['statements']} ({row['data_statements']})"
        if row.get("statements_remove"):
            statements = f"{row['statements']}/{row['statements_remove']}"
        ratio = row["ratio"]
        digits = 2 if ratio is not None and round(ratio, 1) == RATIO_TARGET else 1
        ratio_cell = f"{ratio:.{digits}f}x {_met(ratio <= RATIO_TARGET)}" if ratio is not None else "-"
        target = ""
        if row["target_ms"] is not None:
            target = f"< {row['target_ms']:g} ms {_met(row['api_p50'] < row['target_ms'])}"
        if row.get("rss_max_mb") is not None:
            worst = max(row["rss_first_mb"], row["rss_max_mb"])
            target += f"; RSS +{worst:.1f} MB {_met(worst < RSS_TARGET_MB)}"
        lines.append(
            f"| {row['label']} | {matches} | {statements} | {row['n']} | {_ms(row['api_p50'])} | {_ms(row['api_p95'])} "
            f"| {_ms(row['sql_p50'])} | {_ms(row['sql_p95'])} | {ratio_cell} | {target} |"
        )
    return "\n".join(lines)


def _index_lines(scenarios: list[Scenario]) -> list[str]:
    """From the plan of the misspelt-surname search: the index scan nodes and their conditions."""
    search = next((s for s in scenarios if s.key == "search_surname" and s.extra.get("explain")), None)
    if search is None:
        return []
    for sql, plan in search.extra["explain"]:
        if "patients_searchterm" in sql:  # the statement finding and counting the matches
            found: list[str] = []
            lines = plan.splitlines()
            for i, line in enumerate(lines):
                if any(index in line for index in SEARCH_INDEXES):
                    found.append(line.strip())
                    found += [x.strip() for x in lines[i + 1 : i + 2] if "Index Cond" in x]
            return found
    return []


def _explain_blocks(scenarios: list[Scenario]) -> list[str]:
    """One folded block per explained scenario: EXPLAIN (ANALYZE, BUFFERS) of each data statement, as the app
    sends it."""
    lines: list[str] = []
    for scenario in scenarios:
        if not scenario.extra.get("explain"):
            continue
        lines += [f"<details><summary>EXPLAIN: {scenario.label}</summary>", ""]
        for sql, plan in scenario.extra["explain"]:
            lines += ["```sql", _shorten_ids(_shorten_select(sql)), "```", "```", _shorten_ids(plan), "```"]
        lines += ["", "</details>", ""]
    return lines


_ID_LIST = re.compile(r"\('[0-9a-f]{32}'::uuid(?:, '[0-9a-f]{32}'::uuid){3,}\)")
_ID_ARRAY = re.compile(r"'\{[0-9a-f-]{36}(?:,[0-9a-f-]{36}){3,}\}'")


def _shorten_ids(text: str) -> str:
    """Lists of more than four ids (the page's rows read by id) elided to their count."""
    text = _ID_LIST.sub(lambda m: f"(… {m.group(0).count('::uuid')} ids)", text)
    return _ID_ARRAY.sub(lambda m: f"'{{… {m.group(0).count(',') + 1} ids}}'", text)


def _shorten_select(sql: str) -> str:
    """The column list of a wide SELECT elided for reading (the plan is of the full statement)."""
    return re.sub(
        r'^SELECT ("[^"]+"\."[^"]+", ){6,}.*? FROM ', 'SELECT "patients_patient"."id", … FROM ', sql, flags=re.S
    )


def section(
    *,
    patients: int,
    others: int,
    other_patients: int,
    iterations: int,
    warmup: int,
    info: dict,
    rows: list[dict],
    scenarios: list[Scenario],
    started: datetime.datetime,
    seconds: float,
    search_index_used: bool | None,
    reconnects: int,
    all_visible: float | None = None,
    seed_seconds: float = 0.0,
) -> str:
    loads = [r["load"] for r in rows if r.get("load")]
    load_note = ""
    if loads:
        low, high = min(min(pair) for pair in loads), max(max(pair) for pair in loads)
        load_note = f"; 1-minute load average during the run {low:.2f}-{high:.2f}"
        if high > 0.75 * (os.cpu_count() or 1):
            load_note += " (**other work was running on the machine: figures are pessimistic**)"
    data = {
        "patients": patients,
        "date": started.strftime("%Y-%m-%d"),
        "iterations": iterations,
        "rows": [
            {
                k: v
                for k, v in row.items()
                if k
                in (
                    "key",
                    "label",
                    "api_p50",
                    "api_p95",
                    "sql_p50",
                    "ratio",
                    "total",
                    "rows",
                    "rss_first_mb",
                    "rss_max_mb",
                    "target_ms",
                )
            }
            for row in rows
        ],
    }
    export = next((r for r in rows if r.get("rss_max_mb") is not None), None)
    lines = [
        f"<!-- bench:run patients={patients} -->",
        f"#### {patients:,} patients",
        "",
        f"<!-- bench-data: {json.dumps(data)} -->",
        "",
        f"- **Date**: {started.strftime('%Y-%m-%d %H:%M UTC')} (run took {seconds / 60:.1f} min{load_note})",
        doc.machine_line(info),
        f"- **Stack**: {info['postgres']}; {info['python']} (DEBUG=0), one keep-alive HTTP/1.1 connection",
        f"- **Code**: {info.get('code', 'unknown')}",
        f"- **Data**: {patients:,} patients in the measured practice + {others} practices x {other_patients:,} "
        f"({patients + others * other_patients:,} patients in the table)"
        + (
            f"; vacuumed before measuring, {all_visible:.0%} of its pages all-visible"
            if all_visible is not None
            else ""
        )
        + (f"; seeded in {seed_seconds / 60:.1f} min" if seed_seconds else ""),
        f"- **Iterations**: {iterations} timed per scenario (column n: fewer when a scenario spent its time budget) "
        f"after {warmup} warm-up (one for requests over a second)"
        + (f"; {reconnects} keep-alive reconnects" if reconnects else ""),
        "",
        table(rows),
        "",
    ]
    if patients != 100_000:
        lines += ["The targets are stated for 100,000 patients; they are marked here for reference only.", ""]
    if export:
        lines.append(
            f"Export: {export['rows']:,} data rows, {export['bytes'] / 2**20:.1f} MB of CSV; daphne's resident memory "
            f"grew by {export['rss_first_mb']:.1f} MB on the first export after start, and by at most "
            f"{export['rss_max_mb']:.1f} MB (median {export['rss_p50_mb']:.1f} MB) on the timed ones "
            f"(VmRSS sampled every 5 ms against the value just before the request)."
        )
        lines.append("")
    if search_index_used is not None:
        lines.append(
            "The search's two GIN indexes, `patients_searchterm_trgm_idx` (similar terms in the practice's vocabulary) "
            "and `patients_search_keys_idx` (patients holding one of them), "
            + (
                "**are used** by every search (Bitmap Index Scans, the second once per group of 32 similar terms; one "
                "statement pages and counts)."
                if search_index_used
                else "**is not used** by every search statement — see the plans below."
            )
        )
        quoted = _index_lines(scenarios)
        if quoted:
            lines += ["", "```", *quoted, "```"]
        lines.append("")
    lines += _explain_blocks(scenarios)
    lines.append("<!-- /bench:run -->")
    return "\n".join(lines)


HEADER = """## Patients area

`make bench` (or `.venv/bin/python -m bench`, options in `python -m bench --help`) seeds a separate database,
`practice_crm_bench` (`BENCH_DATABASE_URL` overrides), with one practice of 100,000 patients (`PATIENTS=…` changes it,
e.g. `make bench PATIENTS=1000000`) and 20 other practices of 10,000 patients each, so every query has to filter by
tenant. A re-run reuses the seeded database when it already holds the requested counts (`--reseed` rebuilds it,
`--skip-seed` uses it as it is). The benchmark rewrites this section (and only it); each patient count keeps its own
subsection.

### How it is measured

- **Seed**: set-based SQL (`INSERT … SELECT FROM generate_series`, deterministic pseudo-random picks) of realistic
  Italian and English names (a real surname list with a frequency skew plus a long tail of Italian-looking surnames),
  e-mails derived from the names, `+39 3xx xxxxxxx` mobiles, fiscal codes, street addresses, cities and postcodes,
  birth dates over 85 years, creation dates over 3 years, statuses (mostly lead/patient, ~1.5% deceased, ~4% archived,
  0.1% merged), 10 tags per practice (one, "Recall 2025", on exactly 10,000 active patients of the measured practice),
  a timeline (1-5 entries) and marketing consents. The measured practice and its API key are created with
  `manage.py create_practice --api-key`; secondary indexes are dropped during the load and rebuilt from their exact
  definitions, then `VACUUM ANALYZE`.
- **Through HTTP**: daphne serves `config.asgi:application` (settings `bench.settings` = `config.settings.dev` with a
  rate-limit bucket too large to refuse, DEBUG=0); one keep-alive `http.client` connection authenticates with the API
  key. A request's time runs from sending it to reading the last byte of the response.
- **Direct SQL**: each scenario's request is first run in-process through Django's test client with
  `CaptureQueriesContext`; those statements — all of them, authentication and practice selection included, exactly as
  psycopg sent them (client-side binding) — are replayed on a psycopg connection opened like Django's (same
  `options`, hence the same `pg_trgm.word_similarity_threshold`, checked before and after the run; no prepared
  statements), rows fetched. (Until 2026-11-22 the replay connection also ran the benchmark's `VACUUM (ANALYZE)`,
  which loaded pg_trgm inside ANALYZE and silently reset its threshold to the default 0.6: the search replays
  matched 16 rows instead of 3,883, so their "direct SQL" figures were too low.) The export's
  SELECT is read through a server-side cursor in chunks of 1,000 as `QuerySet.iterator()` does; the bulk request's
  statements run in `BEGIN … COMMIT` with the rows they add (tags, outbox events) removed untimed afterwards.
  A search's own `BEGIN`, `SET LOCAL max_parallel_workers_per_gather = 0` and `COMMIT` are replayed as sent, and
  the EXPLAIN below plans its statement under that setting. Each HTTP iteration is followed by its SQL replay, so
  both see the same machine.
- **Figures**: p50/p95 over the timed iterations (`statistics.quantiles`), in milliseconds; API/SQL is the ratio of
  the p50s; n is the number of timed iterations (a scenario stops early, after at least 5, once it has spent its
  time budget, `--budget`, so that slow scenarios at 1,000,000 patients still finish). "SQL stmts (data)" counts
  the statements of one request (in brackets those on patients tables and the outbox). "Matches" is the `total` the
  list answered.
- **Export memory**: daphne's VmRSS (`/proc/<pid>/status`) sampled every 5 ms by a thread during the export, minus
  the value just before the request.
- **Targets** (issue 3, at 100,000 patients on this 2-core machine): default list p50 < 20 ms, typo'd search
  p50 < 30 ms, export of 10,000 rows < 1 s with RSS growth < 20 MB, API within 2x of the direct SQL.
"""


START, END = doc.markers("patients")


def write_doc(new_section: str, patients: int) -> str:
    """Replace this benchmark's block of docs/benchmarks.md (between START and END), leaving the rest of the file —
    other areas' sections — as it is."""
    mine = doc.block(doc.read(), START, END) or ""
    sections = {
        int(m.group(1)): re.sub(r"^(<!-- bench:run [^\n]*\n)#+ ", r"\1#### ", m.group(0))
        for m in re.finditer(r"<!-- bench:run patients=(\d+) -->.*?<!-- /bench:run -->", mine, re.S)
    }
    sections[patients] = new_section
    parts = [START, HEADER, _comparison(sections), "### Results", ""]
    for count in sorted(sections):
        parts += [sections[count], ""]
    parts += ["### Findings and proposed fixes", "", *doc.notes_block("notes", NOTES_DEFAULT, mine), END]
    return doc.write_section("\n".join(parts), START, END)


def _comparison(sections: dict[int, str]) -> str:
    runs = {}
    for count, text in sections.items():
        match = re.search(r"<!-- bench-data: (.*?) -->", text)
        if match:
            runs[count] = json.loads(match.group(1))
    if len(runs) < 2:
        return ""
    counts = sorted(runs)
    header = "| Scenario | " + " | ".join(f"{c:,}: API p50 / SQL p50 ms" for c in counts) + " |"
    lines = ["### Side by side", "", header, "|---|" + "--:|" * len(counts)]
    labels = {}
    for count in counts:
        for row in runs[count]["rows"]:
            labels.setdefault(row["key"], row["label"].split(" `")[0])
    for key, label in labels.items():
        cells = []
        for count in counts:
            row = next((r for r in runs[count]["rows"] if r["key"] == key), None)
            if row is None:
                cells.append("-")
                continue
            cell = f"{_ms(row['api_p50'])} / {_ms(row['sql_p50'])}"
            if row.get("rss_max_mb") is not None:
                cell += f" (RSS +{max(row.get('rss_first_mb') or 0, row['rss_max_mb']):.1f} MB)"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    dates = ", ".join(f"{c:,} on {runs[c]['date']}" for c in counts)
    lines += ["", f"Runs: {dates}. Details of each below.", ""]
    return "\n".join(lines)
