"""The payment platform's callback signature (Stripe's scheme, research/providers.md):

    Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(endpoint secret, "<t>.<raw body>")>[,v1=…][,v0=…]

Verified over the raw bytes before anything parses them. Several v1 values may be present (the platform signs with
each active secret while one is rolled); any one matching passes. The timestamp must be within 300 seconds of the
server's clock either way (a replayed capture of an old delivery is refused even with a valid signature)."""

import hashlib
import hmac
import time

TOLERANCE_SECONDS = 300
MAX_HEADER_CHARS = 4096


class SignatureRefused(Exception):
    pass


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The v1 value for `body` at `timestamp` (tests and the development simulator sign with it)."""
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def header(secret: str, body: bytes, timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    return f"t={timestamp},v1={sign(secret, body, timestamp)}"


def verify(secret: str, body: bytes, value: str | None, *, now: float | None = None) -> None:
    if not secret:
        raise SignatureRefused("no signing secret is configured for this callback")
    if not value or len(value) > MAX_HEADER_CHARS:
        raise SignatureRefused("Stripe-Signature is missing")
    timestamp, candidates = None, []
    for part in value.split(","):
        key, _, item = part.strip().partition("=")
        if key == "t" and item.isdigit() and len(item) <= 12:
            timestamp = int(item)
        elif key == "v1" and item:
            candidates.append(item.strip().lower())
    if timestamp is None or not candidates:
        raise SignatureRefused("Stripe-Signature needs t= and at least one v1=")
    if abs((time.time() if now is None else now) - timestamp) > TOLERANCE_SECONDS:
        raise SignatureRefused("the signature's timestamp is outside the 300-second tolerance")
    expected = sign(secret, body, timestamp)
    if not any(hmac.compare_digest(expected.encode(), candidate.encode()) for candidate in candidates):
        raise SignatureRefused("no v1 signature matches")
