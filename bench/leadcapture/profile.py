"""Where a capture's time goes, in-process: new-lead captures through Django's test client (the same view,
middleware, services and settings as the servers, without daphne), each followed by its processing (the task body
a worker runs), first timed plainly, then under cProfile, with every statement's time (CaptureQueriesContext)
summed by kind, for the request and the processing apart. Printed, and kept in bench/results/capture.json."""

import cProfile
import io
import pstats
import re
import time
import uuid
from collections import defaultdict

from bench.leadcapture.direct import REFERENCE_BODY, _post

_TABLE = re.compile(r'^\s*(SELECT|INSERT INTO|UPDATE|DELETE FROM)\b.*?(?:FROM |INTO |UPDATE )?"(\w+)"', re.S)


def _kind(sql: str) -> str:
    text = sql.lstrip()
    verb = text.split(None, 1)[0].upper() if text else ""
    if verb == "SELECT":
        match = re.search(r'\bFROM "(\w+)"', text)
        return f"SELECT {match.group(1) if match else '?'}"
    match = _TABLE.match(text)
    return f"{verb} {match.group(2)}" if match else verb


def run(form: dict, emails: list[str], *, count: int, log) -> dict:
    """`count` new-lead captures in-process: each request (store + queue), then its processing (the task body, as
    a worker runs it), timed apart; the second half under cProfile (one profiler each)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.leadcapture.direct import _process

    client = Client()
    count = max(2, min(count, 140)) // 2 * 2  # the reference form's bucket (200 burst) is not raised
    parts = ("request", "processing")
    profilers = {part: cProfile.Profile() for part in parts}
    by_kind = {part: defaultdict(lambda: [0, 0.0]) for part in parts}
    plain: dict[str, list[float]] = {part: [] for part in parts}
    db_s = dict.fromkeys(parts, 0.0)
    statements = dict.fromkeys(parts, 0)

    def step(part: str, call, profiled: bool):
        t0 = time.perf_counter()
        if not profiled:
            result = call()
            plain[part].append(time.perf_counter() - t0)
            return result
        with CaptureQueriesContext(connection) as ctx:
            profilers[part].enable()
            result = call()
            profilers[part].disable()
        db_s[part] += sum(float(q["time"]) for q in ctx.captured_queries)
        statements[part] += len(ctx.captured_queries)
        for q in ctx.captured_queries:
            entry = by_kind[part][_kind(q["sql"])]
            entry[0] += 1
            entry[1] += float(q["time"])
        return result

    for n in range(count):
        profiled = n >= count // 2
        body = REFERENCE_BODY | {
            "email": f"profile.{n}.{uuid.uuid4().hex[:6]}@example.net",
            "phone": f"+44 7490 {n:06d}",
        }
        delivery_id = f"profile-{uuid.uuid4().hex}"
        response = step("request", lambda: _post(client, form, delivery_id, body), profiled)  # noqa: B023
        if response.status_code != 201:
            raise SystemExit(f"bench: in-process capture answered {response.status_code}: {response.content[:300]!r}")
        if step("processing", lambda: _process(form, delivery_id), profiled) is None:  # noqa: B023
            raise SystemExit(f"bench: in-process processing of {delivery_id} found nothing to do")
    half = count // 2
    out = io.StringIO()
    for part in parts:
        print(f"===== {part} =====", file=out)
        stats = pstats.Stats(profilers[part], stream=out).strip_dirs()
        stats.sort_stats("tottime").print_stats(15)
        stats.sort_stats("cumulative").print_stats(40)
    summary, kinds = {"captures": half}, {}
    for part in parts:
        values = sorted(plain[part])
        summary[part] = {
            "plain_ms_p50": 1000 * values[len(values) // 2],
            "plain_ms_mean": 1000 * sum(values) / len(values),
            "db_ms": 1000 * db_s[part] / half,
            "statements": statements[part] / half,
        }
        kinds[part] = sorted(
            (
                {"kind": k, "per_capture": v[0] / half, "ms_per_capture": 1000 * v[1] / half}
                for k, v in by_kind[part].items()
            ),
            key=lambda r: -r["ms_per_capture"],
        )
        log(f"in-process {part}, {half} unprofiled then {half} under cProfile: {summary[part]}")
        for row in kinds[part][:10]:
            log(f"   {row['per_capture']:4.1f} x {row['kind']:<45} {row['ms_per_capture']:6.2f} ms per capture")
    print(out.getvalue())
    return {"summary": summary, "by_kind": kinds, "pstats": out.getvalue()}
