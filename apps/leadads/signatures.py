"""How each ad platform signs what it posts (research/providers.md), verified over the untouched bytes before
anything is parsed, compared in constant time.

- Social platform (Meta): `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>` on lead
  notifications; deauthorize and data-deletion post a form field `signed_request` = `<base64url sig>.<base64url
  payload>`, sig = HMAC-SHA256(app secret, the payload part as sent), payload JSON with "algorithm": "HMAC-SHA256"
  and "user_id".
- Short-video platform (TikTok): `TikTok-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(app secret, "<t>.<raw
  body>")>`, the timestamp within 300 seconds of the server's clock (a replayed capture of an old body is refused).
- Search platform (Google Ads lead form webhook): no header; the body's `google_key` must equal the key set for the
  ad account, kept here as its SHA-256 only (apps.leadads.platforms checks it after parsing, before storing).
"""

import base64
import binascii
import hashlib
import hmac
import json
import time

META_HEADER = "X-Hub-Signature-256"
SHORT_VIDEO_HEADER = "TikTok-Signature"
TOLERANCE_SECONDS = 300
MAX_HEADER_CHARS = 512
MAX_SIGNED_REQUEST_CHARS = 8192


class SignatureRefused(Exception):
    """Missing, malformed, stale or not matching: `str()` says which, safe to answer."""


def _hmac(secret: str, message: bytes) -> bytes:
    return hmac.new(secret.encode(), message, hashlib.sha256).digest()


# --- social platform ------------------------------------------------------------------------------------------------


def meta_header(app_secret: str, raw: bytes) -> str:
    return "sha256=" + _hmac(app_secret, raw).hex()


def meta_verify(app_secret: str, raw: bytes, header: str | None) -> None:
    if not app_secret:
        raise SignatureRefused("the social ad platform is not configured on this deployment")
    if not header or len(header) > MAX_HEADER_CHARS:
        raise SignatureRefused(f"{META_HEADER} is missing")
    if not header.strip().lower().startswith("sha256="):
        raise SignatureRefused(f"{META_HEADER} must be sha256=<hex>")
    if not hmac.compare_digest(meta_header(app_secret, raw).encode(), header.strip().lower().encode()):
        raise SignatureRefused(f"{META_HEADER} does not match the body")


def _b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def signed_request(app_secret: str, payload: dict) -> str:
    """A signed_request as the social platform makes one (tests and the simulator)."""
    body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{_b64url(_hmac(app_secret, body.encode()))}.{body}"


def signed_request_verify(app_secret: str, value: str | None) -> dict:
    """The verified payload of a signed_request: the signature is checked over the payload part as sent, before
    it is decoded."""
    if not app_secret:
        raise SignatureRefused("the social ad platform is not configured on this deployment")
    if not value or len(value) > MAX_SIGNED_REQUEST_CHARS or value.count(".") != 1:
        raise SignatureRefused("signed_request must be <signature>.<payload>")
    signature_part, payload_part = value.split(".")
    try:
        signature = _b64url_decode(signature_part)
    except (binascii.Error, ValueError):
        raise SignatureRefused("signed_request's signature is not base64url") from None
    if not hmac.compare_digest(_hmac(app_secret, payload_part.encode()), signature):
        raise SignatureRefused("signed_request's signature does not match")
    try:
        payload = json.loads(_b64url_decode(payload_part))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise SignatureRefused("signed_request's payload is not base64url JSON") from None
    if not isinstance(payload, dict) or str(payload.get("algorithm", "")).upper() != "HMAC-SHA256":
        raise SignatureRefused('signed_request\'s payload must be an object with "algorithm": "HMAC-SHA256"')
    return payload


# --- short-video platform -------------------------------------------------------------------------------------------


def short_video_header(app_secret: str, raw: bytes, timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    return f"t={timestamp},s={_hmac(app_secret, f'{timestamp}.'.encode() + raw).hex()}"


def short_video_verify(app_secret: str, raw: bytes, header: str | None, *, now: float | None = None) -> None:
    if not app_secret:
        raise SignatureRefused("the short-video ad platform is not configured on this deployment")
    if not header or len(header) > MAX_HEADER_CHARS:
        raise SignatureRefused(f"{SHORT_VIDEO_HEADER} is missing")
    timestamp, offered = None, []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit() and len(value) <= 12:
            timestamp = int(value)
        elif key == "s" and value:
            offered.append(value.strip().lower())
    if timestamp is None or not offered:
        raise SignatureRefused(f"{SHORT_VIDEO_HEADER} needs t=<unix seconds> and s=<hex>")
    if abs((time.time() if now is None else now) - timestamp) > TOLERANCE_SECONDS:
        raise SignatureRefused(f"{SHORT_VIDEO_HEADER}'s timestamp is outside the 300-second tolerance")
    expected = _hmac(app_secret, f"{timestamp}.".encode() + raw).hex().encode()
    if not any(hmac.compare_digest(expected, candidate.encode()) for candidate in offered):
        raise SignatureRefused(f"{SHORT_VIDEO_HEADER} does not match the body")


# --- search platform ------------------------------------------------------------------------------------------------


def key_digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def google_key_matches(stored_digest: str, offered) -> bool:
    if not stored_digest or not isinstance(offered, str) or not offered or len(offered) > 512:
        return False
    return hmac.compare_digest(stored_digest.encode(), key_digest(offered).encode())
