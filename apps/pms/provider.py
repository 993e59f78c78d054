"""The connector contract "pmsconnect" (docs/pms.md): what this service reads from a PMS, and how it checks what a PMS
posts. One adapter, three parts (ARCHITECTURE 6b): `verify` (the callback signature), `parse_callback` (a verified
body into normalized live items) and `Client` (the pull API of the historical import: httpx, timeouts).

Pull API, with the connection's API key as bearer, pages in a stable order, an opaque cursor:

    GET {baseUrl}/v1/patients?limit=500[&cursor=…]
    GET {baseUrl}/v1/appointments?limit=500[&cursor=…]
    → 200 {"items": [item, …], "nextCursor": "…" | null}

Items: {"id", "revision" (integer, grows with every change), "updatedAt", "data": {...}}; patient data
{firstName, lastName, email, phone, dateOfBirth (YYYY-MM-DD)}, appointment data {patientId, practitionerId,
practitionerName, startsAt, endsAt (ISO 8601 with offset), status (booked, confirmed, arrived, completed, no_show,
cancelled)}.

Callbacks: POST /webhooks/pms/pmsconnect/{routingToken}, headers X-Service-Delivery-Id (≤ 200 characters),
X-Service-Timestamp (Unix seconds, within five minutes), X-Service-Signature "v1=<hex HMAC-SHA256>" over
"<timestamp>.<delivery id>.<raw body>" with the connection's signing secret (apps.core.crypto.sign_v1; the previous
secret also verifies for 24 hours after a rotation). Body {"events": [{"kind": "patient" | "appointment", "id",
"revision", "updatedAt", "data"}]}, 1 to 100 events.

The sandbox transport (SVC_PMS_TRANSPORT=sandbox, for `make run`) answers the pull API from generated pages:
SVC_PMS_SANDBOX_PATIENTS patients (default 1,200) and one appointment each."""

import datetime
import hashlib
import json
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from apps.core.crypto import constant_time_equals, sign_v1
from apps.webhooks.public import UnsafeDestination, vet

PROVIDER = "pmsconnect"  # the one connector contract this service speaks
TIMEOUT = httpx.Timeout(20.0, connect=5.0)
PAGE_SIZE = 500
MAX_EVENTS = 100
MAX_ID = 128
WINDOW_SECONDS = 300
MAX_DELIVERY_ID = 200
APPOINTMENT_STATUSES = ("booked", "confirmed", "arrived", "completed", "no_show", "cancelled")
KINDS = ("patient", "appointment")


class ProviderUnavailable(Exception):
    """The PMS did not answer usefully (network error, timeout, 408, 429, 5xx, an unreadable page): retry later.
    `code` is short and safe to store."""

    def __init__(self, code: str):
        super().__init__(code)
        self.code = code[:64]


class ProviderRefused(ProviderUnavailable):
    """The PMS refused our credentials (401, 403): the connection's API key must be fixed."""


class SignatureRefused(ValueError):
    """`code` is PMS_SIGNATURE_INVALID or PMS_TIMESTAMP_OUT_OF_RANGE; the message says why (no key material)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class MalformedBody(ValueError):
    """A verified body that cannot be used: `reason` is the code stored on the rejected receipt."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class BadItem(ValueError):
    def __init__(self, code: str):
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Item:
    """One PMS record at one revision, normalized; `content` is what the CRM mirrors and `content_hash` its digest."""

    kind: str
    id: str
    revision: int
    content: dict
    content_hash: str
    key_suffix: str = ""  # set when a held change is applied by a person: its events are new logical events


# --- normalizing ---------------------------------------------------------------------------------------------------


def _text(data: dict, name: str, limit: int, *, required: bool = False) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise BadItem(f"{name}_required")
        return None
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise BadItem(f"{name}_invalid")
    return value.strip() or None


def _instant(data: dict, name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or len(value) > 40:
        raise BadItem(f"{name}_invalid")
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise BadItem(f"{name}_invalid") from None
    if parsed.tzinfo is None:
        raise BadItem(f"{name}_invalid")
    return parsed.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def _patient(data: dict) -> dict:
    email = _text(data, "email", 254)
    if email:
        try:
            validate_email(email)
        except ValidationError:
            email = None  # a PMS keeps what it was typed; the CRM keeps only a usable address
    birth = _text(data, "dateOfBirth", 10)
    if birth:
        try:
            birth = datetime.date.fromisoformat(birth).isoformat()
        except ValueError:
            birth = None
    return {
        "first_name": _text(data, "firstName", 200, required=True),
        "last_name": _text(data, "lastName", 200) or "",
        "email": email.lower() if email else None,
        "phone": _text(data, "phone", 40),
        "date_of_birth": birth,
    }


def _appointment(data: dict) -> dict:
    starts_at, ends_at = _instant(data, "startsAt"), _instant(data, "endsAt")
    if ends_at <= starts_at:
        raise BadItem("endsAt_invalid")
    status = data.get("status") or "booked"
    if status not in APPOINTMENT_STATUSES:
        raise BadItem("status_invalid")
    return {
        "patient_id": _text(data, "patientId", MAX_ID, required=True),
        "practitioner_id": _text(data, "practitionerId", MAX_ID, required=True),
        "practitioner_name": _text(data, "practitionerName", 200) or "",
        "starts_at": starts_at,
        "ends_at": ends_at,
        "status": status,
    }


def content_hash(content: dict) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def normalize(kind: str, raw) -> Item:
    """One raw item of `kind` → Item; raises BadItem with a short code."""
    if not isinstance(raw, dict):
        raise BadItem("item_invalid")
    item_id = raw.get("id")
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if not isinstance(item_id, str) or not item_id or len(item_id) > MAX_ID:
        raise BadItem("id_invalid")
    revision = raw.get("revision")
    if not isinstance(revision, int) or isinstance(revision, bool) or not 0 <= revision < 2**62:
        raise BadItem("revision_invalid")
    data = raw.get("data")
    if not isinstance(data, dict):
        raise BadItem("data_invalid")
    content = _patient(data) if kind == "patient" else _appointment(data)
    return Item(kind=kind, id=item_id, revision=revision, content=content, content_hash=content_hash(content))


# --- callbacks -----------------------------------------------------------------------------------------------------


def verify(raw: bytes, headers, secrets: list[str], *, now: float) -> str:
    """Check the signature headers over the untouched bytes; returns the delivery id. Raises SignatureRefused."""
    delivery_id = headers.get("X-Service-Delivery-Id", "")
    timestamp = headers.get("X-Service-Timestamp", "")
    signature = headers.get("X-Service-Signature", "")
    if not delivery_id or not timestamp or not signature or len(delivery_id) > MAX_DELIVERY_ID:
        raise SignatureRefused(
            "PMS_SIGNATURE_INVALID",
            "X-Service-Delivery-Id (at most 200 characters), X-Service-Timestamp and X-Service-Signature are required.",
        )
    try:
        in_window = abs(now - int(timestamp)) <= WINDOW_SECONDS
    except ValueError:
        in_window = False
    if not in_window:
        raise SignatureRefused("PMS_TIMESTAMP_OUT_OF_RANGE", "X-Service-Timestamp is more than five minutes from now.")
    offered = [part.strip() for part in signature.split(",") if part.strip()]
    for secret in secrets:
        expected = sign_v1(secret, timestamp, delivery_id, raw)
        if any(constant_time_equals(expected, candidate) for candidate in offered):
            return delivery_id
    raise SignatureRefused("PMS_SIGNATURE_INVALID", "X-Service-Signature does not match this connection's secret.")


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def parse_callback(raw: bytes) -> list[Item]:
    """A verified body → its live items, in order. Raises MalformedBody (the receipt settles as rejected)."""
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise MalformedBody("malformed_json") from None
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        raise MalformedBody("malformed_shape")
    events = body["events"]
    if not events:
        raise MalformedBody("no_events")
    if len(events) > MAX_EVENTS:
        raise MalformedBody("too_many_events")
    items = []
    for event in events:
        kind = event.get("kind") if isinstance(event, dict) else None
        if kind not in KINDS:
            raise MalformedBody("malformed_shape")
        try:
            items.append(normalize(kind, event))
        except BadItem as bad:
            raise MalformedBody(f"malformed_{bad.code}"[:64]) from None
    return items


def signed_headers(secret: str, raw: bytes, *, delivery_id: str, timestamp: int | None = None) -> dict:
    """The headers a PMS sends with `raw` (simulate_pms, tests)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        "X-Service-Delivery-Id": delivery_id,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": sign_v1(secret, timestamp, delivery_id, raw),
    }


# --- the pull API ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    items: list  # raw items (normalized by the import, which counts the bad ones)
    next_cursor: str | None


def _sandbox_handler(request: httpx.Request) -> httpx.Response:
    query = parse_qs(urlsplit(str(request.url)).query)
    kind = "patient" if request.url.path.endswith("/v1/patients") else "appointment"
    start = int((query.get("cursor") or ["0"])[0] or 0)
    limit = min(int((query.get("limit") or [str(PAGE_SIZE)])[0]), PAGE_SIZE)
    total = int(getattr(settings, "SVC_PMS_SANDBOX_PATIENTS", 1200))
    items = [sandbox_item(kind, n) for n in range(start, min(start + limit, total))]
    next_cursor = str(start + limit) if start + limit < total else None
    return httpx.Response(200, json={"items": items, "nextCursor": next_cursor})


def sandbox_item(kind: str, n: int, *, revision: int = 1) -> dict:
    """The n-th generated patient or appointment (the sandbox, the benchmark's server and tests use the same)."""
    if kind == "patient":
        data = {
            "firstName": f"Patient{n}",
            "lastName": f"Sandbox{n % 97}",
            "email": f"pms.patient{n}@example.org",
            "phone": f"+44 7700 {n:06d}",
            "dateOfBirth": f"{1950 + n % 60}-{1 + n % 12:02d}-{1 + n % 28:02d}",
        }
        return {"id": f"P{n}", "revision": revision, "updatedAt": "2026-11-01T09:00:00Z", "data": data}
    day = datetime.datetime(2026, 1, 5, 8, 0, tzinfo=datetime.UTC) + datetime.timedelta(days=n // 40)
    start = day + datetime.timedelta(minutes=15 * (n % 40))
    data = {
        "patientId": f"P{n}",
        "practitionerId": "D1",
        "practitionerName": "Dr Sandbox",
        "startsAt": start.isoformat(),
        "endsAt": (start + datetime.timedelta(minutes=15)).isoformat(),
        "status": "completed",
    }
    return {"id": f"A{n}", "revision": revision, "updatedAt": "2026-11-01T09:00:00Z", "data": data}


class Client:
    """The PMS's pull API for one connection."""

    def __init__(self, base_url: str, api_key: str, *, transport: httpx.BaseTransport | None = None):
        self._vetted = transport is not None
        if transport is None and getattr(settings, "SVC_PMS_TRANSPORT", "provider") == "sandbox":
            transport, self._vetted = httpx.MockTransport(_sandbox_handler), True
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            timeout=TIMEOUT,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def page(self, kind: str, cursor: str, *, limit: int = PAGE_SIZE) -> Page:
        params = {"limit": str(limit)}
        if cursor:
            params["cursor"] = cursor
        path = "/v1/patients" if kind == "patient" else "/v1/appointments"
        target, headers, extensions = path, {}, {}
        if not self._vetted:
            try:  # the practice's URL: the webhooks' SSRF guard (https, a public address; loopback in development)
                destination = vet(self.base_url + path)
            except UnsafeDestination:
                raise ProviderRefused("pms_url_refused") from None
            # Connect to the vetted address itself (no second lookup a rebinding name could answer differently),
            # with the name kept for Host, SNI and the certificate check.
            target, headers = destination.url, {"Host": urlsplit(self.base_url).netloc}
            if destination.url.startswith("https"):
                extensions = {"sni_hostname": destination.host}
        try:
            response = self._http.get(target, params=params, headers=headers, extensions=extensions)
        except httpx.TimeoutException:
            raise ProviderUnavailable("pms_timeout") from None
        except httpx.HTTPError:
            raise ProviderUnavailable("pms_unreachable") from None
        if response.status_code in (401, 403):
            raise ProviderRefused("pms_credentials_refused")
        if response.status_code != 200:
            raise ProviderUnavailable(f"pms_http_{response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise ProviderUnavailable("pms_page_unreadable") from None
        items, next_cursor = (body.get("items"), body.get("nextCursor")) if isinstance(body, dict) else (None, None)
        if not isinstance(items, list) or not (next_cursor is None or isinstance(next_cursor, str)):
            raise ProviderUnavailable("pms_page_unreadable")
        if next_cursor is not None and (not next_cursor or len(next_cursor) > 500):
            raise ProviderUnavailable("pms_page_unreadable")
        return Page(items=items, next_cursor=next_cursor)
