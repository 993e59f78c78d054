"""python -m bench mcp — a tools/call read of GET /patients (limit 25) against the same REST request (issue 7).

Method (docs/benchmarks.md, "MCP", says the same for readers):

1. The patients benchmark's database, `practice_crm_bench` (BENCH_DATABASE_URL overrides), seeded or reused by
   bench.patients.prepare exactly as `python -m bench` does (100,000 patients in the measured practice, 20 others).
2. One OAuth connection of the measured practice's owner to a benchmark app (scopes read write) with two access
   tokens: one for the MCP server (resource = SVC_MCP_URL) and one for the REST API (resource = SVC_BASE_URL), so
   both requests carry the same person, practice, scopes and connection bucket. The app, its connection and tokens
   are deleted at the end.
3. daphne serving config.asgi:application (bench.env.Server; settings bench.settings, whose credential bucket is
   too large to refuse but is still checked in Redis on every request); one keep-alive http.client connection
   for each side (bench.client.Http), timed from sending the request to reading the last byte.
4. Each iteration sends both, in alternating order: REST `GET /patients?limit=25` with the REST token, and
   `POST /mcp` tools/call read {operation: "GET /patients", query: {limit: 25}} with the MCP token
   (MCP-Protocol-Version 2025-11-25, stateless: no session). Both must answer the same 25 patients.
5. p50/p95 of each side (statistics.quantiles), overhead = MCP p50 - REST p50, and the p50/p95 of the
   per-iteration differences. The 1-minute load average is recorded before and during the run.
"""

import argparse
import datetime
import json
import os
import secrets
import sys
import time

from bench import env
from bench.doc import publish
from bench.measure import logger, quantile, uptime, wait_quiet
from bench.measure import machine as machine_info
from bench.paths import RESULTS

TARGET_OVERHEAD_MS = 5.0  # MCP p50 - REST p50 (issue 7)
PROTOCOL_VERSION = "2025-11-25"
LIMIT = 25
REST_PATH = f"/patients?limit={LIMIT}"
READ_ARGUMENTS = {"operation": "GET /patients", "query": {"limit": LIMIT}}
APP_NAME = "Benchmark assistant (python -m bench mcp)"

DESCRIPTION = __doc__.split("\n\n", 1)[1]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench mcp", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=500, help="timed pairs of requests (default 500)")
    parser.add_argument("--warmup", type=int, default=30, help="untimed pairs first (default 30)")
    parser.add_argument(
        "--max-load",
        type=float,
        default=1.5,
        help="wait before measuring until the 1-minute load average is below this (default 1.5)",
    )
    parser.add_argument(
        "--max-wait", type=float, default=120, help="…but at most this many seconds, then measure anyway (default 120)"
    )
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite the MCP section of docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.iterations < 10 or args.warmup < 0:
        parser.error("--iterations ≥ 10, --warmup ≥ 0")
    return args


def mint_tokens(organization_id: str) -> tuple[str, str, object]:
    """(MCP token, REST token, application) of a fresh connection of the practice's owner."""
    from django.conf import settings
    from django.utils import timezone
    from oauth2_provider.models import Application, set_token_value

    from apps.accounts import roles
    from apps.accounts.models import Membership
    from apps.oauth import connections
    from apps.oauth.models import AccessToken

    owner = (
        Membership.objects.unscoped()
        .select_related("user", "organization")
        .filter(organization_id=organization_id, role=roles.OWNER)
        .first()
    )
    if owner is None:
        raise SystemExit(f"bench: the measured practice {organization_id} has no owner")
    Application.objects.filter(name=APP_NAME).delete()  # a run cut short leaves its app behind
    app = Application.objects.create(
        name=APP_NAME,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
        registration_source=Application.RegistrationSource.MANUAL,
    )
    scopes = ["read", "write"]
    connection = connections.connect(user=owner.user, application=app, organization=owner.organization, scopes=scopes)
    raws = []
    for resource in (settings.SVC_MCP_URL, settings.SVC_BASE_URL):
        raw = "svc_oat_" + secrets.token_urlsafe(32)
        token = AccessToken(
            user=owner.user,
            application=app,
            organization=owner.organization,
            connection=connection,
            scope=" ".join(scopes),
            expires=timezone.now() + datetime.timedelta(hours=2),
            resource=[resource],
        )
        set_token_value(token, raw)
        token.save()
        raws.append(raw)
    return raws[0], raws[1], app


class McpCall:
    """tools/call read over one keep-alive connection: (status, parsed result, ns, bytes)."""

    def __init__(self, http):
        self.http, self.next_id = http, 0

    def rpc(self, method: str, params: dict):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        status, body, elapsed = self.http.request("POST", "/mcp", message)
        return status, body, elapsed

    def read(self):
        return self.rpc("tools/call", {"name": "read", "arguments": READ_ARGUMENTS})


def _ids_of_rest(body: bytes) -> list:
    return [item["id"] for item in json.loads(body)["items"]]


def _ids_of_mcp(body: bytes) -> list:
    message = json.loads(body)
    result = message.get("result") or {}
    content = result.get("structuredContent") or {}
    if result.get("isError") or content.get("status") != 200:
        raise SystemExit(f"bench: the MCP read failed: {body[:500]!r}")
    return [item["id"] for item in content["body"]["items"]]


def quantiles(values: list[float]) -> tuple[float, float]:
    return quantile(values, 50), quantile(values, 95)


def measure(rest, mcp: McpCall, *, iterations: int, warmup: int, log) -> dict:
    status, body, _ = rest.request("GET", REST_PATH)
    if status != 200:
        raise SystemExit(f"bench: GET {REST_PATH} answered {status}: {body[:500]!r}")
    expected = _ids_of_rest(body)
    if len(expected) != LIMIT:
        raise SystemExit(f"bench: GET {REST_PATH} listed {len(expected)} patients, expected {LIMIT}")
    status, body, _ = mcp.rpc(
        "initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench"}}
    )
    if status != 200 or json.loads(body)["result"]["protocolVersion"] != PROTOCOL_VERSION:
        raise SystemExit(f"bench: initialize answered {status}: {body[:500]!r}")
    rest_ns, mcp_ns, loads = [], [], [os.getloadavg()[0]]
    sizes = {}
    for i in range(warmup + iterations):
        order = ("rest", "mcp") if i % 2 == 0 else ("mcp", "rest")
        timing = {}
        for side in order:
            if side == "rest":
                status, body, elapsed = rest.request("GET", REST_PATH)
                if status != 200 or _ids_of_rest(body) != expected:
                    raise SystemExit(f"bench: REST answered {status} or other patients: {body[:300]!r}")
            else:
                status, body, elapsed = mcp.read()
                if status != 200 or _ids_of_mcp(body) != expected:
                    raise SystemExit(f"bench: MCP answered {status} or other patients: {body[:300]!r}")
            timing[side] = elapsed
            sizes[side] = len(body)
        if i >= warmup:
            rest_ns.append(timing["rest"])
            mcp_ns.append(timing["mcp"])
        if i % 50 == 49:
            loads.append(os.getloadavg()[0])
            log(f"{i + 1 - warmup if i >= warmup else 0}/{iterations} timed pairs")
    loads.append(os.getloadavg()[0])
    rest_ms = [ns / 1e6 for ns in rest_ns]
    mcp_ms = [ns / 1e6 for ns in mcp_ns]
    diffs = [m - r for m, r in zip(mcp_ms, rest_ms, strict=True)]
    rest_p50, rest_p95 = quantiles(rest_ms)
    mcp_p50, mcp_p95 = quantiles(mcp_ms)
    diff_p50, diff_p95 = quantiles(diffs)
    return {
        "n": len(rest_ms),
        "rest": {"p50": rest_p50, "p95": rest_p95, "bytes": sizes["rest"]},
        "mcp": {"p50": mcp_p50, "p95": mcp_p95, "bytes": sizes["mcp"]},
        "overhead_p50": mcp_p50 - rest_p50,
        "paired": {"p50": diff_p50, "p95": diff_p95},
        "load_during": [min(loads), max(loads)],
        "rest_ms": rest_ms,
        "mcp_ms": mcp_ms,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.UTC)
    t_start = time.monotonic()

    log = logger("bench mcp", t_start, width=6)

    url = env.database_url()
    from bench.patients import prepare

    info = prepare.prepare(
        url, patients=100_000, others=20, other_patients=10_000, reseed=False, skip_seed=False, log=log
    )

    from bench.client import Http
    from bench.mcp import doc

    env.setup_django(url)
    before_uptime = uptime()
    log(before_uptime)
    with env.connect(url) as conn:
        machine = machine_info(conn)
    mcp_token, rest_token, app = mint_tokens(info.organization_id)
    server = env.Server(url)
    log(f"starting daphne on 127.0.0.1:{server.port} (log: {server.log_path})")
    server.start()
    rest = Http("127.0.0.1", server.port, headers={"Authorization": f"Bearer {rest_token}"})
    mcp_http = Http(
        "127.0.0.1",
        server.port,
        headers={
            "Authorization": f"Bearer {mcp_token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        },
    )
    try:
        load_before = wait_quiet(args.max_load, args.max_wait, log)
        log(f"measuring {args.iterations} pairs after {args.warmup} untimed (1-minute load {load_before:.2f})")
        figures = measure(rest, McpCall(mcp_http), iterations=args.iterations, warmup=args.warmup, log=log)
    finally:
        rest.close()
        mcp_http.close()
        server.stop()
        app.delete()  # its connection and tokens go with it
    figures |= {
        "started": started.isoformat(),
        "seconds": time.monotonic() - t_start,
        "uptime": before_uptime,
        "load_before": load_before,
        "machine": machine,
        "patients": info.patients,
        "reconnects": rest.reconnects + mcp_http.reconnects,
        "iterations": args.iterations,
        "warmup": args.warmup,
    }
    publish(
        doc.section(figures, target_ms=TARGET_OVERHEAD_MS),
        RESULTS / "mcp.json",
        figures,
        title="MCP",
        write=doc.write,
        skipped="--no-doc" if args.no_doc else "",
        log=log,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
