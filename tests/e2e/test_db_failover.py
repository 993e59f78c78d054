"""A database that drops the pooled connections (restart, failover, idle kill) costs no request: the real web tier
(config.serve) with the connection pool on (config/settings/base.py), its backends killed server-side, the next
requests all 200."""

import time

import httpx
from django.db import connection

OTHER_BACKENDS = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


def terminate_other_backends() -> int:
    """Kill every other session on the test database (the server's pooled connections); how many were killed,
    once they are gone."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) {OTHER_BACKENDS}")
        killed = cursor.fetchone()[0]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cursor.execute(f"SELECT count(*) {OTHER_BACKENDS}")
            if cursor.fetchone()[0] == 0:
                break
            time.sleep(0.05)
    return killed


def test_killed_pooled_connections_cost_no_request(owner, start_server):
    address = start_server(SVC_TEST_DB_POOL="1")
    with httpx.Client(
        base_url=f"http://{address}", headers={"Authorization": f"Bearer {owner.api_key}"}, timeout=20
    ) as client:
        # The pool is open and its connections have served (the API key is looked up in the database).
        assert [client.get("/patients").status_code for _ in range(3)] == [200, 200, 200]

        assert terminate_other_backends() >= 2  # the pool's min_size: every idle pooled connection is dead now

        # Each dead connection used to cost one request a 503 (AUTH_UNAVAILABLE while the key was verified).
        statuses = [client.get("/patients").status_code for _ in range(5)]
        readiness = client.get("/health")
    assert statuses == [200] * 5
    assert readiness.status_code == 200, readiness.text
