"""The "same SQL run directly" figures of a capture: the statements of one signed capture request (the form lookup
and the submission INSERT: what POST /capture/{token} runs now that it only stores and queues) and of its
processing (the worker's task body), captured in-process (Django's test client and the same services as the
servers and workers) with the transactions the app opened marked, then replayed on a psycopg connection opened like
Django's (bench.env.connect: same options, client-side binding, no prepared statements) in the same transactions,
committed. Each replay gives every row inserted a fresh id (and the submission a fresh delivery id), so each one
does the same real work; its rows are deleted, untimed, after it."""

import json
import re
import statistics
import time
import uuid
from collections import defaultdict

from bench import env
from bench.leadcapture.load import sign

# psycopg renders a uuid parameter as '<32 hex digits>'::uuid (no hyphens); both spellings are matched.
_UUID = re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b")
_INSERT = re.compile(r'^\s*INSERT INTO "(\w+)" \("id"')
_ROW_ID = re.compile(r"(?:VALUES|\),)\s*\('([0-9a-f]{32}|[0-9a-f-]{36})'")
# Savepoint bookkeeping is left out, and so are the BEGIN/COMMIT Django logs: the replay opens and commits the
# transactions itself, where the marks say the app did.
_SAVEPOINT = re.compile(r"^\s*(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT\b|BEGIN\s*$|COMMIT\s*$)", re.I)

REFERENCE_BODY = {
    "first_name": "Chiara",
    "last_name": "Romano",
    "email": "chiara.romano.reference@example.net",
    "phone": "+44 7400 999001",
    "utm_source": "google",
    "utm_medium": "cpc",
    "utm_campaign": "implants-spring",
    "gclid": "gc-reference-0001",
    "message": "I'd like a quote for a dental implant, I'm missing a lower molar.",
    "marketing_consent": "yes",
}


def _post(client, form: dict, delivery_id: str, body: dict):
    raw = json.dumps(body, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    return client.generic(
        "POST",
        form["path"],
        data=raw,
        content_type="application/json",
        headers={
            "X-Service-Delivery-Id": delivery_id,
            "X-Service-Timestamp": timestamp,
            "X-Service-Signature": sign(form["secret"], timestamp, delivery_id, raw),
        },
    )


def _captured(call) -> dict:
    """Run `call()` in-process and return its statements in order, grouped into the transactions the app ran
    (Django's Atomic: set_autocommit(False) … commit()), savepoints left out."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    conn = connections["default"]
    marks: list[tuple[int, str]] = []
    set_autocommit, commit = conn.set_autocommit, conn.commit

    def marking_set_autocommit(autocommit, *a, **k):
        if not autocommit:
            marks.append((len(conn.queries_log), "begin"))
        return set_autocommit(autocommit, *a, **k)

    def marking_commit(*a, **k):
        marks.append((len(conn.queries_log), "commit"))
        return commit(*a, **k)

    conn.set_autocommit, conn.commit = marking_set_autocommit, marking_commit
    try:
        with CaptureQueriesContext(conn) as ctx:
            marks.append((len(conn.queries_log), "start"))
            result = call()
    finally:
        del conn.set_autocommit, conn.commit
    offset = marks[0][0]
    queries = [q["sql"] for q in ctx.captured_queries]
    groups: list[dict] = []
    current = {"tx": False, "statements": []}
    boundaries = sorted((index - offset, kind) for index, kind in marks[1:])
    b = 0
    for i, sql in enumerate(queries):
        while b < len(boundaries) and boundaries[b][0] <= i:
            kind = boundaries[b][1]
            if kind == "begin" and not current["tx"]:
                if current["statements"]:
                    groups.append(current)
                current = {"tx": True, "statements": []}
            elif kind == "commit" and current["tx"]:
                groups.append(current)
                current = {"tx": False, "statements": []}
            b += 1
        if not _SAVEPOINT.match(sql):
            current["statements"].append(sql)
    if current["statements"]:
        groups.append(current)
    return {"result": result, "groups": groups, "all": [s for g in groups for s in g["statements"]]}


def _process(form: dict, delivery_id: str):
    """The worker's task body for one stored submission, in-process (the task queued by the request is then a
    no-op when a worker gets to it: the submission is no longer `received`)."""
    from apps.capture import services
    from apps.capture.models import CaptureSubmission

    submission = CaptureSubmission.objects.unscoped().get(form_id=form["id"], delivery_id=delivery_id)
    return services.submission_process(submission_id=submission.id, organization_id=submission.organization_id)


def capture_statements(form: dict, *, email: str | None, log, process: bool = True) -> dict:
    """One new-lead capture on `form`, in-process, committed: the request (form lookup, bucket, HMAC check, the
    submission INSERT, the task queued) and then its processing (the task's body, as a worker runs it). Returns
    the statements of each, grouped into the transactions the app ran. With process=False the request alone: the
    submissions stay `received` and no patient, journey or event is made (processing then has no statements)."""
    from django.test import Client

    client = Client()
    warm_id = f"reference-warm-{uuid.uuid4().hex[:8]}"
    warm = _post(
        client, form, warm_id, REFERENCE_BODY | {"email": email or "warm@example.net", "phone": "+44 7400 999000"}
    )
    if warm.status_code != 201:
        raise SystemExit(f"bench: the in-process capture answered {warm.status_code}: {warm.content[:300]!r}")
    if process and _process(form, warm_id) is None:
        raise SystemExit("bench: the in-process warm-up submission was not processed")
    delivery_id = f"reference-{uuid.uuid4().hex[:12]}"
    request = _captured(lambda: _post(client, form, delivery_id, REFERENCE_BODY))
    response = request.pop("result")
    if response.status_code != 201:
        raise SystemExit(f"bench: the in-process capture answered {response.status_code}: {response.content[:300]!r}")
    processing = {"groups": [], "all": []}
    if process:
        processing = _captured(lambda: _process(form, delivery_id))
        if processing.pop("result") is None:
            raise SystemExit("bench: the in-process reference submission was not processed")
    for name, part in (("request", request), ("processing", processing)):
        if not part["all"]:
            continue
        tx = [len(g["statements"]) for g in part["groups"] if g["tx"]]
        log(
            f"one capture in-process, {name}: {len(part['all'])} statements, transactions of {tx} statements, "
            "the rest autocommit"
        )
    return {"request": request, "processing": processing, "delivery_id": delivery_id}


def _new_rows(statements: list[str]) -> dict[str, list[str]]:
    """{table: [ids]} of the rows the INSERTs create (their id is the first value of each row)."""
    rows: dict[str, list[str]] = defaultdict(list)
    for sql in statements:
        match = _INSERT.match(sql)
        if match:
            rows[match.group(1)].extend(_ROW_ID.findall(sql))
    return rows


def _remap(sql: str, mapping: dict[str, str], delivery: tuple[str, str]) -> str:
    sql = _UUID.sub(lambda m: mapping.get(m.group(0), m.group(0)), sql)
    return sql.replace(f"'{delivery[0]}'", f"'{delivery[1]}'")


def _ms(ns: list[int]) -> dict:
    values = [n / 1e6 for n in ns]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": cuts[49], "p95": cuts[94], "p99": cuts[98], "mean": statistics.fmean(values), "n": len(values)}


def replay(url: str, captured: dict, *, iterations: int, log) -> dict:
    """Each iteration, on fresh ids: the request's statements (timed: "request"), then the processing's (timed:
    "processing") on the submission that request stored, then the rows removed (untimed); and the patient-match
    SELECT on its own. Captured without processing (capture_statements(process=False)): the request alone."""
    from django.conf import settings

    options = settings.DATABASES["default"].get("OPTIONS", {}).get("options", "")
    request, processing = captured["request"], captured["processing"]
    rows = _new_rows(request["all"] + processing["all"])
    ids = [i for table_ids in rows.values() for i in table_ids]
    cleanup_order = list(reversed(list(rows)))  # children before parents (foreign keys are checked at COMMIT)
    conn = env.connect(url, options=options)
    match = next(
        (s for s in processing["all"] if s.lstrip().startswith("SELECT") and "UPPER(" in s and "patients_patient" in s),
        None,
    )
    timed: dict[str, list[int]] = {"request": [], "processing": [], "match": []}

    def run(groups, mapping, delivery) -> int:
        started = time.perf_counter_ns()
        for group in groups:
            if group["tx"]:
                conn.execute("BEGIN")
            for sql in group["statements"]:
                with conn.cursor() as cur:
                    cur.execute(_remap(sql, mapping, delivery))
                    if cur.description is not None:
                        cur.fetchall()
            if group["tx"]:
                conn.execute("COMMIT")
        return time.perf_counter_ns() - started

    def clean(mapping) -> None:
        conn.execute("BEGIN")
        for table in cleanup_order:
            conn.execute(f'DELETE FROM "{table}" WHERE id = ANY(%s::uuid[])', [[mapping[i] for i in rows[table]]])
        conn.execute("COMMIT")

    try:
        for i in range(iterations + 5):
            mapping = {old: uuid.uuid4().hex for old in ids}
            delivery = (captured["delivery_id"], f"replay-{uuid.uuid4().hex[:12]}")
            t_request = run(request["groups"], mapping, delivery)
            t_processing = run(processing["groups"], mapping, delivery)
            clean(mapping)
            if match is not None:
                t0 = time.perf_counter_ns()
                conn.execute(match).fetchall()
                t_match = time.perf_counter_ns() - t0
            if i >= 5:
                timed["request"].append(t_request)
                if processing["all"]:
                    timed["processing"].append(t_processing)
                if match is not None:
                    timed["match"].append(t_match)
    finally:
        conn.close()

    def shape(part: dict) -> dict:
        return {"statements": len(part["all"]), "transactions": sum(1 for g in part["groups"] if g["tx"])}

    result = {
        "request": {**shape(request), **_ms(timed["request"])},
        "processing": {**shape(processing), **_ms(timed["processing"])} if timed["processing"] else None,
        "match": _ms(timed["match"]) if timed["match"] else None,
        "new_rows": {table: len(v) for table, v in rows.items()},
        "match_sql": match,
    }
    processed = result["processing"]
    log(
        f"direct SQL: request (form lookup + submission INSERT) p50 {result['request']['p50']:.2f} ms "
        f"(p95 {result['request']['p95']:.2f}); "
        + (
            f"processing p50 {processed['p50']:.2f} ms (p95 {processed['p95']:.2f}); patient match p50 "
            + (f"{result['match']['p50']:.2f} ms" if result["match"] else "n/a")
            if processed
            else "no processing replayed"
        )
    )
    return result
