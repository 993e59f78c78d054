"""Fixtures of the dialer tests: a telephony account's Ed25519 key pair generated per test (callbacks are signed
as Telnyx signs them, "timestamp|body"), a local HTTP server that speaks the Telnyx endpoints the adapter uses (the
real httpx client talks to it), a connection and a number made through HTTP, and helpers to build and post
callbacks."""

import base64
import json
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

API_KEY = "KEY0123456789ABCDEF_test"
APP_ID = "1684641123236054244"
PRACTICE_NUMBER = "+390212345678"
PATIENT_NUMBER = "+393331234567"
AUDIO = b"ID3\x03\x00\x00\x00" + bytes(range(256)) * 16  # an MP3-looking 4 KiB


class TelnyxAccount:
    """A telephony account's key pair: the public key is what the practice connects, the private key signs."""

    def __init__(self):
        self.private_key = Ed25519PrivateKey.generate()
        raw = self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode()

    def headers(self, raw: bytes, timestamp: int | None = None) -> dict:
        timestamp = int(time.time()) if timestamp is None else timestamp
        signature = self.private_key.sign(str(timestamp).encode() + b"|" + raw)
        return {"telnyx-signature-ed25519": base64.b64encode(signature).decode(), "telnyx-timestamp": str(timestamp)}


def post_json(client, path, data=None, **extra):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json", **extra)


def patch_json(client, path, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


# --- the provider's API, locally ---------------------------------------------------------------------------------


class FakeTelnyx:
    """What the local server answers from (set by the test), and what it was asked."""

    def __init__(self):
        self.requests: list[dict] = []  # {method, path, query, body, authorization}
        self.fail: dict[tuple[str, str], tuple[int, dict]] = {}  # (method, path prefix) → (status, body)
        self.number_ids: dict[str, str] = {}  # phone number → the account's number id
        self.order_status = "success"
        self.files: dict[str, bytes] = {}  # download path → bytes
        self.expired: set[str] = set()  # download paths that answer 403 (an expired pre-signed link)
        self.base_url = ""
        self.lock = threading.Lock()

    def calls(self, method: str, path: str) -> list[dict]:
        return [r for r in self.requests if r["method"] == method and r["path"].startswith(path)]

    def url(self, path: str) -> str:
        return self.base_url + path


def _handler(fake: FakeTelnyx):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, body: dict | bytes, content_type: str = "application/json"):
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _record(self, method: str):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            entry = {
                "method": method,
                "path": url.path,
                "query": parse_qsl(url.query, keep_blank_values=True),
                "body": body,
                "authorization": self.headers.get("Authorization", ""),
            }
            with fake.lock:
                fake.requests.append(entry)
            for (fail_method, prefix), (status, answer) in fake.fail.items():
                if fail_method == method and url.path.startswith(prefix):
                    self._send(status, answer)
                    return None
            if url.path.startswith("/v2/") and entry["authorization"] != f"Bearer {API_KEY}":
                self._send(401, {"errors": [{"code": "10009", "title": "Authentication failed"}]})
                return None
            return entry

        def do_GET(self):
            entry = self._record("GET")
            if entry is None:
                return
            path, query = entry["path"], dict(entry["query"])
            if path == "/v2/available_phone_numbers":
                country, limit = query.get("filter[country_code]", ""), int(query.get("filter[limit]", "10"))
                area = query.get("filter[national_destination_code]", "02")
                data = [
                    {
                        "record_type": "available_phone_number",
                        "phone_number": f"+39{area}5550{n:03d}",
                        "region_information": [{"region_type": "location", "region_name": "Milano"}],
                        "features": [{"name": "voice"}, {"name": "sms"}],
                        "cost_information": {"currency": "EUR", "monthly_cost": "1.50", "upfront_cost": "0.00"},
                        "reservable": True,
                    }
                    for n in range(limit)
                ]
                return self._send(200, {"data": data if country == "IT" else [], "metadata": {"total_results": 3}})
            if path == "/v2/phone_numbers":
                number = query.get("filter[phone_number]", "")
                found = [{"id": fake.number_ids[number], "phone_number": number}] if number in fake.number_ids else []
                return self._send(200, {"data": found})
            if path.startswith("/v2/recordings/"):
                recording_id = path.rsplit("/", 1)[1]
                return self._send(
                    200, {"data": {"id": recording_id, "download_urls": {"mp3": fake.url(f"/files/{recording_id}")}}}
                )
            if path.startswith("/files/"):
                if path in fake.expired:
                    return self._send(403, b"<Error>AccessDenied</Error>", "application/xml")
                if path not in fake.files:
                    return self._send(404, b"<Error>NoSuchKey</Error>", "application/xml")
                return self._send(200, fake.files[path], "audio/mpeg")
            return self._send(404, {"errors": [{"code": "10005", "title": "Resource not found"}]})

        def do_POST(self):
            entry = self._record("POST")
            if entry is None:
                return
            path, body = entry["path"], entry["body"] or {}
            if path == "/v2/number_orders":
                number = body["phone_numbers"][0]["phone_number"]
                fake.number_ids[number] = str(1293384261075731000 + len(fake.number_ids))
                order_number = {"id": str(uuid.uuid4()), "phone_number": number, "status": fake.order_status}
                return self._send(
                    200,
                    {"data": {"id": str(uuid.uuid4()), "status": fake.order_status, "phone_numbers": [order_number]}},
                )
            if path == "/v2/calls":
                leg = str(uuid.uuid4())
                return self._send(
                    200,
                    {
                        "data": {
                            "call_control_id": f"v3:{leg}",
                            "call_leg_id": leg,
                            "call_session_id": str(uuid.uuid4()),
                            "is_alive": False,
                            "record_type": "call",
                        }
                    },
                )
            if path == "/v2/porting_orders":
                numbers = body.get("phone_numbers") or []
                half = max(1, len(numbers) // 2) if len(numbers) > 1 else len(numbers)
                groups = [numbers[:half], numbers[half:]] if len(numbers) > 1 else [numbers]
                data = [
                    {
                        "id": str(uuid.uuid4()),
                        "status": {"value": "draft", "details": []},
                        "phone_numbers": [{"phone_number": n} for n in group],
                    }
                    for group in groups
                ]
                return self._send(201, {"data": data})
            return self._send(404, {"errors": [{"code": "10005", "title": "Resource not found"}]})

        def do_DELETE(self):
            entry = self._record("DELETE")
            if entry is None:
                return
            path = entry["path"]
            if path.startswith("/v2/phone_numbers/"):
                number_id = path.rsplit("/", 1)[1]
                if number_id not in fake.number_ids.values():
                    return self._send(404, {"errors": [{"code": "10005"}]})
                return self._send(200, {"data": {"id": number_id, "status": "deleted"}})
            if path.startswith("/v2/recordings/"):
                return self._send(200, {"data": {"id": path.rsplit("/", 1)[1], "status": "deleted"}})
            return self._send(404, {"errors": [{"code": "10005"}]})

    return Handler


@pytest.fixture
def telnyx(settings):
    """A local Telnyx API: the provider transport (real httpx) points at it, and recording links may be on it
    (loopback allowed by the SSRF guard's development allowance: DEBUG with SVC_WEBHOOKS_ALLOW_LOOPBACK)."""
    fake = FakeTelnyx()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    settings.SVC_TELEPHONY_TRANSPORT = "provider"
    settings.SVC_TELEPHONY_API_URL = fake.base_url
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """This test's own media storage folder."""
    settings.SVC_MEDIA_STORAGE_ALIAS = "dialer-test"
    settings.STORAGES = {
        **settings.STORAGES,
        "dialer-test": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    return tmp_path / "media"


# --- a connection and its numbers --------------------------------------------------------------------------------


@pytest.fixture
def account() -> TelnyxAccount:
    return TelnyxAccount()


def connect(api, account: TelnyxAccount, **fields) -> dict:
    body = {"name": "Front desk line", "apiKey": API_KEY, "publicKey": account.public_key, "callControlAppId": APP_ID}
    response = post_json(api, "/dialer/connections", body | fields)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def line(api, account) -> dict:
    return connect(api, account)


def order_number(api, phone_number: str = PRACTICE_NUMBER, **fields) -> dict:
    response = post_json(api, "/dialer/numbers", {"phoneNumber": phone_number, **fields})
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def number(api, line) -> dict:
    """The practice's number, ordered through the sandbox transport."""
    return order_number(api)


# --- callbacks ---------------------------------------------------------------------------------------------------


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def telnyx_event(event_type: str, payload: dict, *, event_id: str | None = None, at: datetime | None = None) -> dict:
    return {
        "data": {
            "event_type": event_type,
            "id": event_id or str(uuid.uuid4()),
            "occurred_at": iso(at or T0),
            "payload": payload,
            "record_type": "event",
        },
        "meta": {"attempt": 1, "delivered_to": "https://crm.example/webhooks/telephony/x"},
    }


class InboundCall:
    """One inbound call's legs ids and numbers, and its events."""

    def __init__(self, caller: str = PATIENT_NUMBER, called: str = PRACTICE_NUMBER, direction: str = "incoming"):
        self.leg = str(uuid.uuid4())
        self.base = {
            "call_control_id": f"v3:{self.leg}",
            "call_leg_id": self.leg,
            "call_session_id": str(uuid.uuid4()),
            "connection_id": APP_ID,
            "direction": direction,
            "from": caller,
            "to": called,
        }

    def initiated(self, at=T0):
        return telnyx_event("call.initiated", {**self.base, "state": "parked", "start_time": iso(at)}, at=at)

    def answered(self, at=T0 + timedelta(seconds=5)):
        return telnyx_event("call.answered", {**self.base, "start_time": iso(T0)}, at=at)

    def hangup(self, at=T0 + timedelta(seconds=65), cause="normal_clearing"):
        payload = {**self.base, "hangup_cause": cause, "start_time": iso(T0), "end_time": iso(at)}
        return telnyx_event("call.hangup", payload, at=at)

    def recording(self, url: str, *, recording_id: str | None = None, voicemail: bool = False, at=None):
        payload = {
            "call_control_id": self.base["call_control_id"],
            "call_leg_id": self.leg,
            "call_session_id": self.base["call_session_id"],
            "recording_id": recording_id if recording_id is not None else str(uuid.uuid4()),
            "channels": "single",
            "recording_started_at": iso(T0 + timedelta(seconds=5)),
            "recording_ended_at": iso(T0 + timedelta(seconds=35)),
            "recording_urls": {"mp3": url},
        }
        if voicemail:
            payload["client_state"] = base64.b64encode(b"voicemail").decode()
        return telnyx_event("call.recording.saved", payload, at=at or T0 + timedelta(seconds=66))


def signed_post(client, token: str, body, account: TelnyxAccount, *, timestamp=None, raw=None, **headers):
    raw = raw if raw is not None else json.dumps(body).encode()
    return client.post(
        f"/webhooks/telephony/{token}",
        raw,
        content_type=headers.pop("content_type", "application/json"),
        headers={**account.headers(raw, timestamp), **headers},
    )


@pytest.fixture
def deliver(client, line, account, django_capture_on_commit_callbacks):
    """Post signed callbacks to the line's webhook URL; the drain they request runs (eager Celery) after commit."""

    def send(*bodies, **kwargs):
        responses = []
        for body in bodies:
            with django_capture_on_commit_callbacks(execute=True):
                responses.append(signed_post(client, token_of(line), body, account, **kwargs))
        return responses[0] if len(responses) == 1 else responses

    return send


def token_of(connection: dict) -> str:
    return connection["webhookUrl"].rsplit("/", 1)[1]
