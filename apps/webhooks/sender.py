"""The only way outbound HTTP reaches a customer URL: signed, SSRF-safe, bounded.

Destination rules: https on port 443, a DNS hostname (no IP literal, no userinfo) whose every resolved address
(the resolver follows CNAME chains) is globally routable. The request goes to the vetted address — no second DNS
lookup between check and connect — with SNI and certificate checks for the hostname; redirects are failures;
request and captured response bodies are bounded to 64 KiB; 10 s timeout.
"""

import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import certifi
import httpx
from django.conf import settings

from apps.core import crypto

MAX_BODY_BYTES = 64 * 1024
MAX_URL_BYTES = 2048
TIMEOUT_SECONDS = 10.0
SNIPPET_CHARS = 2048

# One TLS context for the process: building one per delivery (loading the CA bundle) cost ~25 ms each
# (docs/benchmarks.md). Certificate and hostname checks stay on; SNI and the name come from each request.
_SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())

_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


class UnsafeDestination(ValueError):
    """The URL may not receive deliveries; the message says why (shown to the practice)."""


@dataclass(frozen=True)
class Destination:
    url: str  # the URL to connect to (host replaced by the vetted address)
    host: str  # the hostname for Host, SNI and certificate checks
    address: str


def loopback_allowed() -> bool:
    return bool(settings.SVC_WEBHOOKS_ALLOW_LOOPBACK and settings.DEBUG)


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return _is_public(address.ipv4_mapped)
        if address.sixtofour is not None or address.teredo is not None:
            return False
        if any(address in network for network in _NAT64):
            return False
        if address not in _GLOBAL_UNICAST_V6:  # e.g. IPv4-compatible ::7f00:1, IPv4-translated ::ffff:0:…
            return False
    return address.is_global and not address.is_multicast


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    # Forms the C resolver accepts as IPv4 (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short 127.1).
    try:
        socket.inet_aton(host)
        return True
    except OSError:
        return False


def check_url_shape(url: str) -> tuple[str, str, int]:
    """Static checks (no DNS): returns (scheme, host, port). Raises UnsafeDestination."""
    if len(url.encode("utf-8")) > MAX_URL_BYTES:
        raise UnsafeDestination(f"the url is longer than {MAX_URL_BYTES} bytes")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsafeDestination("the url is malformed") from None
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UnsafeDestination("the url may not carry a username or password")
    if not host:
        raise UnsafeDestination("the url has no host")
    if loopback_allowed() and parts.scheme == "http" and host in ("127.0.0.1", "localhost") and port:
        return parts.scheme, host, port
    if parts.scheme != "https":
        raise UnsafeDestination("the url must use https")
    if port not in (None, 443):
        raise UnsafeDestination("the url must use port 443")
    if _is_ip_literal(host) or ":" in host:
        raise UnsafeDestination("the url must name a DNS hostname, not an IP address")
    if "." not in host:
        raise UnsafeDestination("the url must name a public DNS hostname")
    return parts.scheme, host, 443


def resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for host (CNAME chains followed). Raises UnsafeDestination."""
    try:
        infos = socket.getaddrinfo(host + ".", port, type=socket.SOCK_STREAM)  # trailing dot: no search domains
    except OSError:
        raise UnsafeDestination(f"{host} does not resolve") from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def vet(url: str) -> Destination:
    """Check the URL and its DNS; returns where to connect. Call at registration and again at every send."""
    scheme, host, port = check_url_shape(url)
    parts = urlsplit(url)
    if scheme == "http":  # development loopback only (see loopback_allowed)
        return Destination(url=url, host=host, address="127.0.0.1")
    addresses = resolve(host, port)
    if not addresses:
        raise UnsafeDestination(f"{host} does not resolve")
    for raw in addresses:
        if not _is_public(ipaddress.ip_address(raw.split("%")[0])):
            raise UnsafeDestination(f"{host} resolves to a non-public address")
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    pinned = parts._replace(netloc=f"{literal}:{port}").geturl()
    return Destination(url=pinned, host=host, address=address)


def sign(secret: str, timestamp: int, delivery_id: str, body: bytes) -> str:
    return crypto.sign_v1(secret, timestamp, delivery_id, body)


def signature_header(secrets: list[str], timestamp: int, delivery_id: str, body: bytes) -> str:
    """One v1= per valid secret (two during a rotation overlap), comma-separated."""
    return ",".join(sign(secret, timestamp, delivery_id, body) for secret in secrets)


@dataclass(frozen=True)
class Outcome:
    status: int | None  # HTTP status, or None when no response came back
    error: str  # "" on a response; the failure otherwise (timeout, connection refused, unsafe destination…)
    snippet: str
    retry_after: str | None
    headers: dict


def post(url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    """POST body to the vetted destination. Never raises for network trouble: it is an Outcome."""
    if len(body) > MAX_BODY_BYTES:
        return Outcome(None, f"the payload is over {MAX_BODY_BYTES} bytes", "", None, {})
    try:
        destination = vet(url)
    except UnsafeDestination as exc:
        return Outcome(None, f"unsafe destination: {exc}", "", None, {})
    request_headers = {**headers, "Host": destination.host}
    extensions = {"sni_hostname": destination.host} if destination.url.startswith("https") else {}
    try:
        with httpx.Client(
            follow_redirects=False,
            trust_env=False,
            verify=_SSL_CONTEXT,
            timeout=TIMEOUT_SECONDS,
            limits=httpx.Limits(max_keepalive_connections=0),
        ) as client:
            request = client.build_request(
                "POST", destination.url, content=body, headers=request_headers, extensions=extensions
            )
            response = client.send(request, stream=True)
            try:
                captured = b""
                started = time.monotonic()
                for chunk in response.iter_bytes():
                    captured += chunk
                    if len(captured) >= MAX_BODY_BYTES or time.monotonic() - started > TIMEOUT_SECONDS:
                        break
            finally:
                response.close()
            snippet = captured[:MAX_BODY_BYTES].decode("utf-8", "replace")[:SNIPPET_CHARS]
            return Outcome(
                response.status_code, "", snippet, response.headers.get("retry-after"), dict(response.headers)
            )
    except httpx.TimeoutException:
        return Outcome(None, "timeout", "", None, {})
    except httpx.HTTPError as exc:
        return Outcome(None, f"{type(exc).__name__}: {str(exc)[:200]}", "", None, {})
