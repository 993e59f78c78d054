"""The "MCP" section of docs/benchmarks.md, between `<!-- bench:mcp:start -->` and `<!-- bench:mcp:end -->`: a run
replaces it (and nothing else), keeping the hand-written findings between the mcp-notes markers."""

from bench import doc
from bench.doc import ms as _ms

START, END = doc.markers("mcp")
NOTES_DEFAULT = "_None recorded yet._"

METHOD = """\
`python -m bench mcp` (or `make bench BENCH_ARGS=mcp`; options in `python -m bench mcp --help`). It reuses the patients
benchmark's database, `practice_crm_bench` (seeded when missing, as `python -m bench` does: 100,000 patients in
the measured practice, 20 other practices of 10,000), and its daphne runner.

### How it is measured

- **Credentials**: one OAuth connection of the measured practice's owner to a benchmark app (scopes `read write`),
  with two access tokens minted on it: one for the MCP server (resource = `SVC_MCP_URL`) and one for the REST API
  (resource = `SVC_BASE_URL`), so both sides carry the same person, practice, scopes and connection bucket (the
  bucket of `bench.settings` is too large to refuse but is still checked in Redis on every request). The app, its
  connection and its tokens are deleted after the run.
- **Through HTTP**: daphne serves `config.asgi:application` (settings `bench.settings`, DEBUG=0); one keep-alive
  `http.client` connection per side; a request's time runs from sending it to reading the last byte.
- **Pairs**: each iteration sends REST `GET /patients?limit=25` and `POST /mcp` `tools/call` `read`
  `{operation: "GET /patients", query: {limit: 25}}` (MCP-Protocol-Version 2025-11-25, stateless, after one
  untimed `initialize`), in alternating order; both must list the same 25 patients. Untimed warm-up pairs first.
- **Figures**: p50/p95 (`statistics.quantiles`) in milliseconds; overhead = MCP p50 - REST p50, and beside it the
  p50/p95 of the per-pair differences. The MCP request runs the REST route in-process (`apps/mcp/dispatch.py`),
  so its time contains the REST request's work plus the MCP envelope: token check, JSON-RPC parsing, the internal
  request through the middleware, and the reply encoded twice (as `structuredContent` and as text content).
- **Load**: `uptime` before the run; the benchmark waits (up to `--max-wait`) for the 1-minute load average to
  fall below `--max-load`, then records it before and its range during the run (its own processes add to it).
  The SQL of the REST request alone is measured by the patients benchmark ("Default list").
- **Target** (issue 7): overhead under 5 ms at p50."""


def section(figures: dict, *, target_ms: float) -> str:
    machine, rest, mcp, paired = figures["machine"], figures["rest"], figures["mcp"], figures["paired"]
    overhead = figures["overhead_p50"]
    met = doc.met(overhead < target_ms)
    low, high = figures["load_during"]
    date = figures["started"][:10]
    lines = [
        START,
        "## MCP",
        "",
        METHOD,
        "",
        f"### Results ({date}, {figures['patients']:,} patients)",
        "",
        doc.machine_line(machine),
        f"- **Stack**: {machine['postgres']}; {machine['python']}",
        f"- **Code**: {machine['code']}",
        f"- **Load**: `{figures['uptime']}` before the run; 1-minute load {figures['load_before']:.2f} when "
        f"measuring started, {low:.2f}-{high:.2f} during it",
        f"- **Run**: {figures['iterations']} timed pairs after {figures['warmup']} untimed, "
        f"{figures['seconds']:.0f} s in all, {figures['reconnects']} reconnects",
        "",
        "| Request | p50 ms | p95 ms | Response bytes | n |",
        "|---|--:|--:|--:|--:|",
        f"| REST `GET /patients?limit=25` | {_ms(rest['p50'])} | {_ms(rest['p95'])} | {rest['bytes']:,} "
        f"| {figures['n']} |",
        f"| MCP `tools/call read` of `GET /patients` (limit 25) | {_ms(mcp['p50'])} | {_ms(mcp['p95'])} "
        f"| {mcp['bytes']:,} | {figures['n']} |",
        "",
        f"**Overhead** (MCP p50 - REST p50): **{overhead:.1f} ms** — target < {target_ms:.0f} ms {met}. "
        f"Per-pair difference: p50 {paired['p50']:.1f} ms, p95 {paired['p95']:.1f} ms.",
        "",
        "### Findings (MCP)",
        "",
        *doc.notes_block("mcp-notes", NOTES_DEFAULT),
        END,
    ]
    return "\n".join(lines)


def write(new_section: str) -> None:
    doc.write_section(new_section, START, END)
