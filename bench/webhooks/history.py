"""The claim and the per-drain expiry against a delivery table with history and a backlog, and a proposed fix.

    python -m bench.webhooks.history [--rows 200000] [--backlog 50000]

Runs on the benchmark database a previous `python -m bench webhooks` left (workers stopped; `python -m bench webhooks`
also runs it at its end, --history). Adds --rows delivered deliveries of history (30 days of them) to the first
endpoint and a backlog of --backlog due deliveries spread over all the endpoints (as right after a big fan-out), then
VACUUM ANALYZE. The two statements of drain_endpoint whose cost follows the table - the claim (delivery._claim,
every 25 deliveries) and delivery.expire_exhausted(endpoint=...) (every drain task) - are captured exactly as the
app sends them (the call runs inside a transaction that is rolled back) and EXPLAIN (ANALYZE, BUFFERS)-ed: as
migrated (the claim-order partial index of migration 0003) and as before issue 4 (that index swapped for the
previous claim index inside a transaction that is rolled back: nothing stays; the expiry's previous statement, which
named neither the practice nor the status). The result goes into
bench/results/webhooks.json ("history") and, unless --no-doc, the Outbound webhooks section of docs/benchmarks.md is
re-rendered with it.
"""

import argparse
import json
import sys
import time

from bench import env
from bench.measure import logger
from bench.paths import RESULTS

# The claim's own order as an index over the work that can still be claimed (migration 0003): the claim reads its 25
# rows in index order and stops, instead of collecting every due row of the endpoint and sorting them.
INDEX = "webhooks_delivery_queue_idx"

# Before issue 4, for comparison (applied in a transaction that is rolled back).
PREVIOUS_INDEX = (
    f"DROP INDEX {INDEX}; CREATE INDEX webhooks_delivery_claim_idx ON webhooks_webhookdelivery "
    "(organization_id, endpoint_id, status, next_attempt_at)"
)
PREVIOUS_EXPIRE = """
UPDATE webhooks_webhookdelivery SET status = 'failed', completed_at = %(now)s, lease_expires_at = NULL,
    last_error = 'retries exhausted'
WHERE endpoint_id = %(endpoint)s
  AND (status = 'pending' OR (status = 'in_flight' AND lease_expires_at < %(now)s))
  AND (deadline_at <= %(now)s OR publications >= %(max_publications)s)
"""


def _capture(fn) -> list[str]:
    """The SQL `fn` sends, with its effects rolled back."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    with transaction.atomic(), CaptureQueriesContext(connection) as ctx:
        fn()
        transaction.set_rollback(True)
    return [q["sql"] for q in ctx.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))]


def _explain(sql: str, params=None, setup: str | None = None, repeat: int = 3) -> tuple[str, float]:
    """EXPLAIN (ANALYZE, BUFFERS) of sql in a rolled-back transaction (after `setup`, ";"-separated statements); the
    best of `repeat` runs."""
    from django.db import connection, transaction

    best, best_ms = "", float("inf")
    for _ in range(repeat):
        with transaction.atomic(), connection.cursor() as cursor:
            if setup:
                for statement in setup.split(";"):
                    cursor.execute(statement)
                cursor.execute("ANALYZE webhooks_webhookdelivery")
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            transaction.set_rollback(True)
        ms = float(plan.rsplit("Execution Time:", 1)[1].split()[0])
        if ms < best_ms:
            best, best_ms = plan, ms
    return best, best_ms


def run(url: str, rows: int, log, backlog: int = 50_000) -> dict:
    from django.db import connection
    from django.utils import timezone

    from apps.webhooks import delivery as engine
    from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

    endpoint = WebhookEndpoint.objects.unscoped().filter(archived_at__isnull=True).order_by("name").first()
    if endpoint is None:
        raise SystemExit("bench: no endpoint in the benchmark database: run python -m bench webhooks first")
    template = (
        WebhookDelivery.objects.unscoped()
        .filter(endpoint=endpoint, status=WebhookDelivery.Status.DELIVERED)
        .values_list("id", flat=True)
        .first()
    )
    if template is None:
        raise SystemExit("bench: the first endpoint has no delivered delivery to copy")
    t0 = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'webhooks_webhookdelivery' "
            "ORDER BY ordinal_position"
        )
        columns = [row[0] for row in cursor.fetchall()]
        overrides = {
            "id": "gen_random_uuid()",
            "created_at": "now() - (g * interval '30 days' / %(rows)s)",
            "updated_at": "now() - (g * interval '30 days' / %(rows)s)",
            "next_attempt_at": "now() - (g * interval '30 days' / %(rows)s)",
            "completed_at": "now() - (g * interval '30 days' / %(rows)s)",
            "deadline_at": "now() - (g * interval '30 days' / %(rows)s) + interval '48 hours'",
            "status": "'delivered'",
        }
        select = ", ".join(overrides.get(c, f'd."{c}"') for c in columns)
        names = ", ".join(f'"{c}"' for c in columns)
        cursor.execute(
            f"INSERT INTO webhooks_webhookdelivery ({names}) SELECT {select} "
            "FROM webhooks_webhookdelivery d, generate_series(1, %(rows)s) g WHERE d.id = %(template)s",
            {"rows": rows, "template": template},
        )
        # The backlog: due deliveries spread over every endpoint, oldest first by a millisecond each.
        backlog_overrides = {
            **overrides,
            "created_at": "now() - (g * interval '1 millisecond')",
            "updated_at": "now() - (g * interval '1 millisecond')",
            "next_attempt_at": "now() - (g * interval '1 millisecond')",
            "event_created_at": "now() - (g * interval '1 millisecond')",
            "completed_at": "NULL",
            "deadline_at": "now() + interval '48 hours'",
            "status": "'pending'",
            "attempts": "0",
            "publications": "0",
            "last_published_at": "NULL",
            "lease_expires_at": "NULL",
            "response_status": "NULL",
            "response_snippet": "''",
            "endpoint_id": "e.id",
        }
        select = ", ".join(backlog_overrides.get(c, f'd."{c}"') for c in columns)
        cursor.execute(
            f"INSERT INTO webhooks_webhookdelivery ({names}) SELECT {select} "
            "FROM webhooks_webhookdelivery d, webhooks_webhookendpoint e, "
            "generate_series(1, %(per_endpoint)s) g WHERE d.id = %(template)s AND e.archived_at IS NULL",
            {"per_endpoint": max(1, backlog // 5), "template": template},
        )
    with env.connect(url) as conn:
        conn.execute("VACUUM (ANALYZE) webhooks_webhookdelivery")
        total, mine, due, mine_due, size = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE endpoint_id = %s), "
            "count(*) FILTER (WHERE status IN ('pending', 'in_flight')), "
            "count(*) FILTER (WHERE status IN ('pending', 'in_flight') AND endpoint_id = %s), "
            "pg_size_pretty(pg_total_relation_size('webhooks_webhookdelivery')) FROM webhooks_webhookdelivery",
            [endpoint.id, endpoint.id],
        ).fetchone()
    log(
        f"history: {rows:,} delivered rows added to {endpoint.name} and a backlog of {backlog:,} due ones over every "
        f"endpoint in {time.monotonic() - t0:.1f}s ({mine:,} rows of that endpoint, {mine_due:,} of them due; "
        f"{total:,} rows in the table, {due:,} due; {size})"
    )

    now = timezone.now()
    claim_sql = next(s for s in _capture(lambda: engine._claim(endpoint, now, engine.CLAIM_BATCH)) if "WITH" in s[:40])
    expire_sql = _capture(lambda: engine.expire_exhausted(now, endpoint=endpoint))[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [INDEX])
        index_sql = cursor.fetchone()[0]
    params = {
        "org": endpoint.organization_id,
        "endpoint": endpoint.id,
        "now": now,
        "spaced": now - engine.PUBLICATION_SPACING,
        "all_kinds": True,
        "limit": engine.CLAIM_BATCH,
        "lease": now + engine.LEASE,
        "max_publications": engine.MAX_PUBLICATIONS,
    }
    result = {
        "rows_added": rows,
        "backlog": backlog,
        "endpoint_rows": mine,
        "endpoint_due": mine_due,
        "table_rows": total,
        "table_due": due,
        "table_size": size,
        "index": index_sql,
        "plans": {},
    }
    for key, sql, previous in (("claim", claim_sql, None), ("expire_exhausted", expire_sql, PREVIOUS_EXPIRE)):
        variants = {"as migrated": _explain(sql)}
        if previous:
            variants["before issue 4"] = _explain(previous, params, setup=PREVIOUS_INDEX)
        else:
            variants["before issue 4"] = _explain(sql, setup=PREVIOUS_INDEX)
        result["plans"][key] = {
            "sql": sql,
            "previous_sql": previous.strip() if previous else None,
            "variants": {name: {"plan": plan, "ms": ms} for name, (plan, ms) in variants.items()},
        }
        log(f"history: {key}: " + ", ".join(f"{name} {ms:.2f} ms" for name, (_, ms) in variants.items()))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhooks.history", description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000, help="delivered rows of history to add (default 200000)")
    parser.add_argument("--backlog", type=int, default=50_000, help="due deliveries to add over all endpoints")
    parser.add_argument("--no-doc", action="store_true", help="do not re-render docs/benchmarks.md")
    args = parser.parse_args(argv)
    from bench.webhooks import report
    from bench.webhooks.run import database_url, redis_url, setup_django

    url = database_url()
    if not env.exists(url):
        raise SystemExit(f"bench: {env.database_name(url)} does not exist: run python -m bench webhooks first")
    setup_django(url, redis_url())
    log = logger("bench webhooks history", time.monotonic(), width=6)

    history = run(url, args.rows, log, backlog=args.backlog)
    raw = RESULTS / "webhooks.json"
    if raw.exists():
        import datetime

        results = json.loads(raw.read_text())
        results["history"] = history
        raw.write_text(json.dumps(results, indent=1, default=str))
        if not args.no_doc:
            started = datetime.datetime.fromisoformat(results["started"])
            report.write_doc(report.section(results, started))
            log("re-rendered the Outbound webhooks section of docs/benchmarks.md")
    else:
        print(json.dumps(history, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
