"""The telephony provider's API (Telnyx as the reference, research/providers.md): an httpx client against
SVC_TELEPHONY_API_URL with the connection's API key as bearer, and a sandbox transport for `make run` and tests.

- search numbers: GET /v2/available_phone_numbers?filter[country_code]=…&filter[national_destination_code]=…
  &filter[locality]=…&filter[phone_number][contains]=…&filter[features][]=voice&filter[limit]=… → data: [{phone_number,
  region_information, features, cost_information}]
- order a number: POST /v2/number_orders {phone_numbers: [{phone_number}], connection_id, customer_reference} →
  data: {id, status, phone_numbers: [{id, phone_number, status}]}
- release a number: GET /v2/phone_numbers?filter[phone_number]=… (an order's ids are not the number's) → data:
  [{id, phone_number}], then DELETE /v2/phone_numbers/{id}
- click-to-call: POST /v2/calls {connection_id, to, from, client_state, record?: "record-from-answer"} → data:
  {call_control_id, call_leg_id, call_session_id}
- porting order: POST /v2/porting_orders {phone_numbers: […]} → data: [{id, status: {value}, phone_numbers}]
- recordings: GET /v2/recordings/{id} → data: {download_urls: {mp3, wav}}; DELETE /v2/recordings/{id}
- download a recording: GET the recording_urls.mp3 (or .wav) of call.recording.saved: a pre-signed link, fetched
  without credentials, every hop vetted by the SSRF guard of apps.webhooks

Errors answer {"errors": [{"code", "title", "detail"}]}: a 4xx other than 408/429 is a refusal (ProviderRefused,
with the first error's code, safe to store), anything else (network, timeout, 408, 429, 5xx) ProviderUnavailable.
Timeouts: connect 5 s, read 15 s (downloads 30 s a read and 120 s in all).

The sandbox transport (SVC_TELEPHONY_TRANSPORT=sandbox) calls nothing: searches answer made-up numbers of the
country, orders and releases succeed at once, a click-to-call answers sandbox call ids (the call is logged like any
other; `manage.py simulate_telephony` plays the provider's events for it), porting orders are drafts, and a
recording download writes a short silent WAV, so a developer sees recordings stored and served locally."""

import base64
import hashlib
import logging
import ssl
import struct
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote, urljoin, urlsplit

import certifi
import httpx
from django.conf import settings

from apps.webhooks.public import UnsafeDestination, check_url_shape, vet

logger = logging.getLogger("apps.dialer")

TIMEOUT = httpx.Timeout(15.0, connect=5.0)
DOWNLOAD_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
DOWNLOAD_DEADLINE_SECONDS = 120
MAX_RECORDING_BYTES = 200 * 1024 * 1024  # four hours of mono MP3 at 96 kbit/s is ~170 MiB
MAX_REDIRECTS = 3
MAX_ANSWER_BYTES = 1024 * 1024
_SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())


class ProviderUnavailable(Exception):
    """The provider did not answer usefully (network error, timeout, 408, 429 or 5xx): retrying may help."""


class ProviderRefused(Exception):
    """The provider refused the request (a 4xx): `code` is the provider's first error code (or HTTP_<status>), short
    and safe to store; `status` the HTTP status."""

    def __init__(self, code: str, status: int = 400):
        super().__init__(code)
        self.code, self.status = code[:64], status


class DownloadFailed(Exception):
    """A recording download failed: `reason` is short and safe to store; `final` means retrying cannot help."""

    def __init__(self, reason: str, *, final: bool = False, expired: bool = False):
        super().__init__(reason)
        self.reason, self.final, self.expired = reason, final, expired


@dataclass(frozen=True)
class AvailableNumber:
    phone_number: str
    region: str = ""
    features: list[str] = field(default_factory=list)
    monthly_cost: str = ""
    upfront_cost: str = ""
    currency: str = ""


@dataclass(frozen=True)
class OrderedNumber:
    order_id: str
    status: str  # pending | success | failure (the number's status within the order)
    number_id: str = ""


@dataclass(frozen=True)
class PlacedCall:
    call_control_id: str
    call_leg_id: str
    call_session_id: str


@dataclass(frozen=True)
class CreatedPortingOrder:
    order_id: str
    status: str
    phone_numbers: list[str]


@dataclass(frozen=True)
class Downloaded:
    size: int
    content_type: str


@dataclass(frozen=True)
class SearchQuery:
    country_code: str
    area_code: str = ""
    locality: str = ""
    contains: str = ""
    limit: int = 10


# --- the provider's HTTP API -----------------------------------------------------------------------------------------


def _first_error_code(body: dict) -> str:
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return str(errors[0].get("code") or errors[0].get("title") or "")
    return ""


def _text(value, limit: int = 128) -> str:
    return str(value)[:limit] if isinstance(value, str | int) and not isinstance(value, bool) else ""


class TelnyxTransport:
    sandbox = False

    def __init__(self, api_key: str):
        self.api_key = api_key

    # -- plumbing
    def _request(self, method: str, path: str, *, params=None, json=None) -> dict:
        base = (settings.SVC_TELEPHONY_API_URL or "").rstrip("/")
        if not base:
            raise ProviderUnavailable("the telephony API is not configured")
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        try:
            with httpx.Client(timeout=TIMEOUT, follow_redirects=False, trust_env=False) as client:
                response = client.request(method, f"{base}{path}", params=params, json=json, headers=headers)
        except httpx.HTTPError as exc:
            logger.warning("telephony provider %s %s unreachable (%s)", method, path.split("?")[0], type(exc).__name__)
            raise ProviderUnavailable(type(exc).__name__) from None
        if len(response.content) > MAX_ANSWER_BYTES:
            raise ProviderUnavailable("answer too large")
        try:
            body = response.json() if response.content else {}
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if 200 <= response.status_code < 300:
            return body
        if response.status_code in (408, 429) or response.status_code >= 500:
            logger.warning("telephony provider answered %s", response.status_code)
            raise ProviderUnavailable(f"HTTP_{response.status_code}")
        raise ProviderRefused(_first_error_code(body) or f"HTTP_{response.status_code}", response.status_code)

    @staticmethod
    def _data(body: dict):
        return body.get("data")

    # -- numbers
    def search_numbers(self, query: SearchQuery) -> list[AvailableNumber]:
        params = [
            ("filter[country_code]", query.country_code),
            ("filter[features][]", "voice"),
            ("filter[limit]", str(query.limit)),
        ]
        if query.area_code:
            params.append(("filter[national_destination_code]", query.area_code))
        if query.locality:
            params.append(("filter[locality]", query.locality))
        if query.contains:
            params.append(("filter[phone_number][contains]", query.contains))
        data = self._data(self._request("GET", "/v2/available_phone_numbers", params=params))
        found = []
        for item in data if isinstance(data, list) else []:
            if not isinstance(item, dict) or not _text(item.get("phone_number"), 20):
                continue
            regions = item.get("region_information") if isinstance(item.get("region_information"), list) else []
            region = next(
                (_text(r.get("region_name"), 100) for r in regions if isinstance(r, dict) and r.get("region_name")),
                "",
            )
            features = [
                _text(f.get("name"), 32) for f in item.get("features") or [] if isinstance(f, dict) and f.get("name")
            ]
            cost = item.get("cost_information") if isinstance(item.get("cost_information"), dict) else {}
            found.append(
                AvailableNumber(
                    phone_number=_text(item["phone_number"], 20),
                    region=region,
                    features=features,
                    monthly_cost=_text(cost.get("monthly_cost"), 16),
                    upfront_cost=_text(cost.get("upfront_cost"), 16),
                    currency=_text(cost.get("currency"), 3),
                )
            )
        return found[: query.limit]

    def order_number(self, *, phone_number: str, app_id: str, reference: str) -> OrderedNumber:
        body = {"phone_numbers": [{"phone_number": phone_number}], "customer_reference": reference}
        if app_id:
            body["connection_id"] = app_id
        data = self._data(self._request("POST", "/v2/number_orders", json=body))
        if not isinstance(data, dict) or not _text(data.get("id")):
            raise ProviderUnavailable("number order answer without an id")
        numbers = [n for n in data.get("phone_numbers") or [] if isinstance(n, dict)]
        mine = next((n for n in numbers if n.get("phone_number") == phone_number), numbers[0] if numbers else {})
        status = _text(mine.get("status") or data.get("status"), 32) or "pending"
        return OrderedNumber(order_id=_text(data["id"]), status=status, number_id=_text(mine.get("id")))

    def release_number(self, *, phone_number: str) -> None:
        """Release the number from the account: its id is looked up first (an order's ids are not the number's).
        A number the account no longer has counts as released."""
        found = self._data(self._request("GET", "/v2/phone_numbers", params=[("filter[phone_number]", phone_number)]))
        ids = [
            _text(item.get("id"))
            for item in (found if isinstance(found, list) else [])
            if isinstance(item, dict) and item.get("phone_number") == phone_number and _text(item.get("id"))
        ]
        for number_id in ids:
            try:
                self._request("DELETE", f"/v2/phone_numbers/{quote(number_id, safe='')}")
            except ProviderRefused as refusal:
                if refusal.status != 404:
                    raise

    # -- calls
    def create_call(self, *, app_id: str, to: str, from_: str, client_state: str, record: bool) -> PlacedCall:
        body = {"connection_id": app_id, "to": to, "from": from_, "client_state": client_state}
        if record:
            body["record"] = "record-from-answer"
        data = self._data(self._request("POST", "/v2/calls", json=body))
        if not isinstance(data, dict) or not _text(data.get("call_leg_id")):
            raise ProviderUnavailable("call answer without a call leg id")
        return PlacedCall(
            call_control_id=_text(data.get("call_control_id"), 256),
            call_leg_id=_text(data.get("call_leg_id")),
            call_session_id=_text(data.get("call_session_id")),
        )

    # -- porting
    def create_porting_order(self, *, phone_numbers: list[str]) -> list[CreatedPortingOrder]:
        data = self._data(self._request("POST", "/v2/porting_orders", json={"phone_numbers": phone_numbers}))
        orders = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        created = []
        for order in orders:
            if not isinstance(order, dict) or not _text(order.get("id")):
                continue
            status = order.get("status")
            status = status.get("value") if isinstance(status, dict) else status
            numbers = [
                _text(n.get("phone_number") if isinstance(n, dict) else n, 20) for n in order.get("phone_numbers") or []
            ]
            created.append(
                CreatedPortingOrder(
                    order_id=_text(order["id"]),
                    status=_text(status, 32) or "draft",
                    phone_numbers=[n for n in numbers if n] or list(phone_numbers),
                )
            )
        if not created:
            raise ProviderUnavailable("porting answer without an order")
        return created

    # -- recordings
    def recording_links(self, recording_id: str) -> dict[str, str]:
        data = self._data(self._request("GET", f"/v2/recordings/{quote(recording_id, safe='')}"))
        links = data.get("download_urls") if isinstance(data, dict) else None
        return {k: v for k, v in (links or {}).items() if isinstance(v, str)} if isinstance(links, dict) else {}

    def delete_recording(self, recording_id: str) -> None:
        try:
            self._request("DELETE", f"/v2/recordings/{quote(recording_id, safe='')}")
        except ProviderRefused as refusal:
            if refusal.status != 404:  # already gone
                raise

    def download(self, url: str, sink) -> Downloaded:
        """Stream the recording at `url` into `sink` (a pre-signed link: no credentials are sent). Every hop is vetted
        by the SSRF guard and connected to by its vetted address; at most MAX_RECORDING_BYTES within the deadline."""
        with httpx.Client(
            follow_redirects=False,
            trust_env=False,
            verify=_SSL_CONTEXT,
            timeout=DOWNLOAD_TIMEOUT,
            limits=httpx.Limits(max_keepalive_connections=0),
        ) as client:
            response = _get_vetted(client, url)
            try:
                if response.status_code in (403, 404, 410):  # an expired or withdrawn link
                    raise DownloadFailed(f"provider_http_{response.status_code}", expired=True)
                if not 200 <= response.status_code < 300:
                    raise DownloadFailed(f"provider_http_{response.status_code}")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > MAX_RECORDING_BYTES:
                    raise DownloadFailed("too_large", final=True)
                size, started = 0, time.monotonic()
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_RECORDING_BYTES:
                        raise DownloadFailed("too_large", final=True)
                    if time.monotonic() - started > DOWNLOAD_DEADLINE_SECONDS:
                        raise DownloadFailed("timeout")
                    sink.write(chunk)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                return Downloaded(size=size, content_type=content_type)
            except httpx.TimeoutException:
                raise DownloadFailed("timeout") from None
            except httpx.HTTPError:
                raise DownloadFailed("network") from None
            finally:
                response.close()


def _vetted(url: str):
    try:
        check_url_shape(url)
    except UnsafeDestination:
        raise DownloadFailed("unsafe_url", final=True) from None
    try:
        return vet(url)
    except UnsafeDestination:
        raise DownloadFailed("unsafe_url") from None


def _get_vetted(client: httpx.Client, url: str) -> httpx.Response:
    for _ in range(MAX_REDIRECTS + 1):
        destination = _vetted(url)
        extensions = {"sni_hostname": destination.host} if destination.url.startswith("https") else {}
        try:
            request = client.build_request(
                "GET", destination.url, headers={"Host": urlsplit(url).netloc}, extensions=extensions
            )
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            raise DownloadFailed("timeout") from None
        except httpx.HTTPError:
            raise DownloadFailed("network") from None
        if not response.is_redirect:
            return response
        location = response.headers.get("location", "")
        response.close()
        url = urljoin(url, location)
    raise DownloadFailed("too_many_redirects")


# --- the sandbox -----------------------------------------------------------------------------------------------------


def silent_wav(seconds: float = 1.0, rate: int = 8000) -> bytes:
    """A valid mono 8-bit WAV of silence: what the sandbox 'downloads' as a recording."""
    frames = int(seconds * rate)
    data = b"\x80" * frames
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, rate, rate, 1, 8) + b"data" + struct.pack("<I", len(data))
    return header + data


def _digits(seed: str, count: int) -> str:
    return str(int(hashlib.sha256(seed.encode()).hexdigest(), 16))[:count].rjust(count, "0")


SANDBOX_COUNTRY_CODES = {"IT": "39", "GB": "44", "US": "1", "IE": "353", "ES": "34", "FR": "33", "DE": "49"}


class SandboxTransport:
    """Calls nothing (module docstring)."""

    sandbox = True

    def __init__(self, api_key: str = ""):
        self.api_key = api_key

    def search_numbers(self, query: SearchQuery) -> list[AvailableNumber]:
        prefix = SANDBOX_COUNTRY_CODES.get(query.country_code, "39")
        area = query.area_code or ("02" if prefix == "39" else "20")
        if prefix != "39":  # the national trunk 0 is not part of an E.164 number (Italy keeps it)
            area = area.lstrip("0") or "2"
        numbers = []
        for n in range(query.limit):
            tail = (query.contains or "") + _digits(f"{query.country_code}{area}{query.contains}{n}", 8)
            numbers.append(
                AvailableNumber(
                    phone_number=f"+{prefix}{area}{tail[:8]}",
                    region=query.locality or "Sandbox",
                    features=["voice", "sms"],
                    monthly_cost="1.00",
                    upfront_cost="1.00",
                    currency="EUR",
                )
            )
        return numbers

    def order_number(self, *, phone_number: str, app_id: str, reference: str) -> OrderedNumber:
        order = "sandbox-order-" + hashlib.sha256(f"{reference}{phone_number}".encode()).hexdigest()[:16]
        return OrderedNumber(order_id=order, status="success", number_id="sandbox-" + _digits(phone_number, 12))

    def release_number(self, *, phone_number: str) -> None:
        return None

    def create_call(self, *, app_id: str, to: str, from_: str, client_state: str, record: bool) -> PlacedCall:
        leg = f"sandbox-{uuid.uuid4()}"
        return PlacedCall(call_control_id=f"v3:{leg}", call_leg_id=leg, call_session_id=f"sandbox-{uuid.uuid4()}")

    def create_porting_order(self, *, phone_numbers: list[str]) -> list[CreatedPortingOrder]:
        return [CreatedPortingOrder(f"sandbox-port-{uuid.uuid4()}", "draft", list(phone_numbers))]

    def recording_links(self, recording_id: str) -> dict[str, str]:
        return {"wav": f"https://sandbox.invalid/recordings/{recording_id}.wav"}

    def delete_recording(self, recording_id: str) -> None:
        return None

    def download(self, url: str, sink) -> Downloaded:
        data = silent_wav()
        sink.write(data)
        return Downloaded(size=len(data), content_type="audio/wav")


def transport(api_key: str):
    if settings.SVC_TELEPHONY_TRANSPORT == "sandbox":
        return SandboxTransport(api_key)
    return TelnyxTransport(api_key)


def client_state_for(call_id) -> str:
    """The client_state a click-to-call carries (base64 "call:<our id>"): the provider echoes it on the call's events,
    so they find the call even before its leg id is known."""
    return base64.b64encode(f"call:{call_id}".encode()).decode()


def client_state_value(value) -> str:
    """The decoded client_state of an event ("" when absent or not base64 text)."""
    if not isinstance(value, str) or not value or len(value) > 4096:
        return ""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return ""
