"""What is measured: each scenario is a request shape (or, for one patient, a set of paths cycled through), what
it must answer, its targets (issue 16), and the wrk request files that send it."""

import json
import time
import uuid
from dataclasses import dataclass, field

from bench.leadcapture.load import CAMPAIGNS, FIRST_NAMES, LAST_NAMES, MESSAGES, sign
from bench.throughput import wrk

PATIENT_IDS = 256  # distinct patients GET /patients/{id} cycles through
SQL_PATIENT_IDS = 16  # of which this many have their SQL captured and replayed


@dataclass
class Target:
    """A figure at CONNECTIONS connections that must hold: req/s at least `rate`, p50/p99 at most."""

    connections: int
    rate: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    p99_strict: bool = False  # "p99 < x" rather than "≤ x"

    def describe(self) -> str:
        parts = []
        if self.rate is not None:
            parts.append(f"≥ {self.rate:,.0f}/s")
        if self.p50_ms is not None:
            parts.append(f"p50 ≤ {self.p50_ms:g} ms")
        if self.p99_ms is not None:
            parts.append(f"p99 {'<' if self.p99_strict else '≤'} {self.p99_ms:g} ms")
        return ", ".join(parts) + f" at {self.connections} conn."

    def met(self, rate: float, p50: float, p99: float) -> bool:
        if self.rate is not None and rate < self.rate:
            return False
        if self.p50_ms is not None and p50 > self.p50_ms:
            return False
        return not (self.p99_ms is not None and (p99 >= self.p99_ms if self.p99_strict else p99 > self.p99_ms))


@dataclass
class Scenario:
    key: str
    label: str
    method: str
    paths: list[str]
    status: int  # the answer every request must get
    auth: bool = True
    patients_area: bool = False  # "API p50 within 2x of the direct SQL" applies
    target: Target | None = None
    capture: dict | None = None  # the signed capture form: id, path, secret
    # filled while running
    statements: list[list[str]] = field(default_factory=list)  # per captured path
    sql_ns: list[int] = field(default_factory=list)
    sql: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)  # stack → {"c1": {...}, "c8": {...}}


RATIO_TARGET = 2.0  # API p50 (1 connection) within 2x of the direct SQL p50, for the patients scenarios


def build(*, patient_ids: list[str], form: dict) -> list[Scenario]:
    return [
        Scenario("trivial", "Trivial route `GET /health/runtime`", "GET", ["/health/runtime"], 204, auth=False),
        Scenario("me", "`GET /auth/me`", "GET", ["/auth/me"], 200, target=Target(8, rate=1000)),
        Scenario(
            "patients",
            "Default patient list `GET /patients`",
            "GET",
            ["/patients"],
            200,
            patients_area=True,
            target=Target(8, rate=400, p50_ms=10),
        ),
        Scenario(
            "patient",
            f"One patient `GET /patients/{{id}}` ({len(patient_ids)} ids)",
            "GET",
            [f"/patients/{i}" for i in patient_ids],
            200,
            patients_area=True,
        ),
        Scenario("board", "Journeys board `GET /journeys/board`", "GET", ["/journeys/board"], 200),
        Scenario("today", "Today `GET /today`", "GET", ["/today"], 200),
        Scenario(
            "capture",
            "Signed capture `POST /capture/{token}`",
            "POST",
            [form["path"]],
            201,
            auth=False,
            target=Target(8, rate=500, p99_ms=100, p99_strict=True),
            capture=form,
        ),
    ]


def pick_patient_ids(conn, organization_id: str, count: int = PATIENT_IDS) -> list[str]:
    """Active patients of the measured practice spread over the table (ordered by a hash of their id)."""
    rows = conn.execute(
        "SELECT id FROM patients_patient WHERE organization_id = %s AND archived_at IS NULL "
        "AND merged_into_id IS NULL ORDER BY md5(id::text) LIMIT %s",
        [organization_id, count],
    ).fetchall()
    if not rows:
        raise SystemExit("bench: the measured practice has no active patient")
    return [str(r[0]) for r in rows]


# --- the requests wrk sends -----------------------------------------------------------------------------------------


def read_requests(scenario: Scenario, *, host: str, api_key: str) -> list[bytes]:
    headers = {"Accept": "application/json"}
    if scenario.auth:
        headers["Authorization"] = f"Bearer {api_key}"
    return [wrk.raw_request(scenario.method, path, host=host, headers=headers) for path in scenario.paths]


def capture_body(n: int, prefix: str) -> bytes:
    """A new lead as a website backend posts it: unique e-mail and phone, marketing parameters, a message."""
    first, last = FIRST_NAMES[n % len(FIRST_NAMES)], LAST_NAMES[(n // len(FIRST_NAMES)) % len(LAST_NAMES)]
    body = {
        "first_name": first,
        "last_name": last,
        "email": f"{first}.{last}.{prefix}{n}@example.net".lower().replace("'", ""),
        "phone": f"+44 7{n % 1000:03d} {n // 1000 % 1000000:06d}",
        "utm_source": "google",
        "utm_medium": "cpc",
        "utm_campaign": CAMPAIGNS[n % len(CAMPAIGNS)],
        "gclid": f"gc-{prefix}{n}",
        "message": MESSAGES[n % len(MESSAGES)],
        "marketing_consent": "yes" if n % 3 else "no",
    }
    return json.dumps(body, separators=(",", ":")).encode()


def capture_requests(form: dict, *, host: str, prefix: str, count: int, now: int | None = None) -> list[bytes]:
    """`count` distinct signed captures for `form`: delivery ids PREFIX0, PREFIX1, …, timestamped `now` (Unix
    seconds; within the 5 minutes the server accepts while the run lasts), each signed with the form's secret
    (v1 HMAC-SHA256 over "timestamp.deliveryId.body")."""
    timestamp = str(int(time.time()) if now is None else now)
    out = []
    for n in range(count):
        delivery_id = f"{prefix}{n}"
        body = capture_body(n, prefix)
        headers = {
            "Content-Type": "application/json",
            "X-Service-Delivery-Id": delivery_id,
            "X-Service-Timestamp": timestamp,
            "X-Service-Signature": sign(form["secret"], timestamp, delivery_id, body),
        }
        out.append(wrk.raw_request("POST", form["path"], host=host, headers=headers, body=body))
    return out


def run_prefix(stack: str, label: str) -> str:
    """Delivery ids of one wrk run start with this (the database check counts the rows by it)."""
    return f"tp-{uuid.uuid4().hex[:8]}-{stack}-{label}-"
