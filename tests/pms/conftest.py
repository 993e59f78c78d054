"""Fixtures of the connected-PMS tests: a local HTTP server that speaks the pmsconnect pull API (the real httpx
client of the import talks to it; pages small enough to count them, a page that can be made to fail), a connection
made through HTTP (its import runs eagerly after the commit), and helpers that sign and post callbacks with the real
scheme (apps.core.crypto.sign_v1 over "<timestamp>.<delivery id>.<raw body>")."""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest

from apps.core.crypto import sign_v1
from apps.events.models import Event

API_KEY = "pms-api-key-0123456789"


def patient(n: int, *, revision: int = 1, **data) -> dict:
    base = {
        "firstName": f"Anna{n}",
        "lastName": f"Rossi{n}",
        "email": f"anna{n}@example.org",
        "phone": f"+44 7700 900{n:03d}",
        "dateOfBirth": "1980-05-17",
    }
    return {"id": f"P{n}", "revision": revision, "updatedAt": "2026-11-20T10:00:00Z", "data": base | data}


def appointment(n: int, *, patient_id: str | None = None, revision: int = 1, **data) -> dict:
    base = {
        "patientId": patient_id or f"P{n}",
        "practitionerId": "D7",
        "practitionerName": "Dr Bianchi",
        "startsAt": f"2026-12-0{1 + n % 8}T{9 + n // 8:02d}:00:00+00:00",
        "endsAt": f"2026-12-0{1 + n % 8}T{9 + n // 8:02d}:30:00+00:00",
        "status": "booked",
    }
    return {"id": f"A{n}", "revision": revision, "updatedAt": "2026-11-20T10:00:00Z", "data": base | data}


class FakePms:
    """The PMS's data and behaviour, set by the test, and the requests it received."""

    def __init__(self, patients: int = 5, appointments: int = 5):
        self.patients = [patient(n) for n in range(1, patients + 1)]
        self.appointments = [appointment(n) for n in range(1, appointments + 1)]
        self.page_size = 2
        self.fail_at: dict[tuple[str, int], int] = {}  # (kind, page number from 1) → status to answer
        self.requests: list[dict] = []
        self.base_url = ""
        self.lock = threading.Lock()

    def pages(self, kind: str) -> list[dict]:
        return [r for r in self.requests if r["kind"] == kind]


def _handler(fake: FakePms):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, body):
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            url = urlsplit(self.path)
            query = dict(parse_qsl(url.query))
            kind = {"/v1/patients": "patient", "/v1/appointments": "appointment"}.get(url.path)
            if kind is None:
                return self._send(404, {"error": "not_found"})
            if self.headers.get("Authorization") != f"Bearer {API_KEY}":
                return self._send(401, {"error": "unauthorized"})
            start = int(query.get("cursor") or 0)
            size = min(int(query.get("limit", "500")), fake.page_size)
            number = start // fake.page_size + 1
            with fake.lock:
                fake.requests.append({"kind": kind, "cursor": query.get("cursor"), "page": number})
            if (kind, number) in fake.fail_at:
                return self._send(fake.fail_at[(kind, number)], {"error": "unavailable"})
            rows = fake.patients if kind == "patient" else fake.appointments
            items = rows[start : start + size]
            next_cursor = str(start + size) if start + size < len(rows) else None
            return self._send(200, {"items": items, "nextCursor": next_cursor})

    return Handler


@pytest.fixture
def pms(settings):
    """A local PMS: the import's httpx client reaches it (loopback allowed by the SSRF guard's development
    allowance, DEBUG with SVC_WEBHOOKS_ALLOW_LOOPBACK)."""
    fake = FakePms()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True
    settings.SVC_PMS_TRANSPORT = "provider"
    yield fake
    server.shutdown()
    server.server_close()


def post_json(client, path, data=None, **extra):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json", **extra)


def connect(client, pms: FakePms, capture, **fields) -> dict:
    """POST /settings/pms/connections; the import it starts runs (eager Celery) after the commit."""
    body = {"name": "Practice PMS", "baseUrl": pms.base_url, "apiKey": API_KEY} | fields
    with capture(execute=True):
        response = post_json(client, "/settings/pms/connections", body)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def connection(api, pms, django_capture_on_commit_callbacks) -> dict:
    """A connection whose import of the server's 5 patients and 5 appointments has completed."""
    return connect(api, pms, django_capture_on_commit_callbacks)


def token_of(connection: dict) -> str:
    return connection["callbackUrl"].rsplit("/", 1)[1]


def signed_headers(secret: str, raw: bytes, *, delivery_id: str | None = None, timestamp: int | None = None) -> dict:
    timestamp = int(time.time()) if timestamp is None else timestamp
    delivery_id = delivery_id or str(uuid.uuid4())
    return {
        "X-Service-Delivery-Id": delivery_id,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": sign_v1(secret, timestamp, delivery_id, raw),
    }


def live(kind: str, item: dict) -> dict:
    return {"kind": kind, **item}


@pytest.fixture
def deliver(client, connection, django_capture_on_commit_callbacks):
    """Post a signed callback to the connection's URL; the processing it asks for runs after the commit."""

    def send(events=None, *, raw=None, secret=None, delivery_id=None, timestamp=None, path=None):
        raw = raw if raw is not None else json.dumps({"events": events}).encode()
        headers = signed_headers(
            secret or connection["signingSecret"], raw, delivery_id=delivery_id, timestamp=timestamp
        )
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(
                path or f"/webhooks/pms/pmsconnect/{token_of(connection)}",
                raw,
                content_type="application/json",
                headers=headers,
            )

    return send


def events_of(organization, *types: str) -> list[Event]:
    rows = Event.objects.for_org(organization).order_by("created_at", "id")
    if types:
        rows = rows.filter(type__in=types)
    return list(rows)
