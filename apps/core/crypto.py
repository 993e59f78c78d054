"""Secrets that must stay readable (webhook and capture signing secrets) are encrypted at rest with Fernet
(AES-128-CBC + HMAC-SHA256) from `cryptography`. Keys come from SVC_ENCRYPTION_KEYS (newest first, so old keys
still decrypt after a rotation); without it a key is derived from SECRET_KEY.

Also the signature checks shared by several areas: constant-time comparison, the v1 HMAC of signed deliveries, and
the Ed25519 scheme of the telephony provider (Telnyx), used by conversations (texting) and the dialer (calls)."""

import base64
import binascii
import functools
import hashlib
import hmac

from cryptography.exceptions import InvalidSignature
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.conf import settings


def _fernet_key(material: str) -> bytes:
    return base64.urlsafe_b64encode(hashlib.sha256(b"svc-encryption:" + material.encode()).digest())


def _cipher() -> MultiFernet:
    keys = list(getattr(settings, "SVC_ENCRYPTION_KEYS", None) or []) or [settings.SECRET_KEY]
    return MultiFernet([Fernet(_fernet_key(key)) for key in keys])


def encrypt(plaintext: str) -> str:
    return _cipher().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise ValueError("the stored secret cannot be decrypted with the configured keys") from None


def constant_time_equals(a: str | bytes, b: str | bytes) -> bool:
    a = a.encode() if isinstance(a, str) else a
    b = b.encode() if isinstance(b, str) else b
    return hmac.compare_digest(a, b)


def sign_v1(secret: str, timestamp: int | str, delivery_id: str, body: bytes) -> str:
    """The signature scheme of signed deliveries both ways (outbound webhooks, signed captures): "v1=" and the hex
    HMAC-SHA256 over "<timestamp>.<delivery id>.<raw body>"."""
    message = f"{timestamp}.{delivery_id}.".encode() + body
    return "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


# --- Ed25519 callback signatures (Telnyx: research/providers.md) ---------------------------------------------------

ED25519_WINDOW_SECONDS = 300  # a timestamp older or newer than this is refused


class Ed25519SignatureRefused(ValueError):
    """The signature is missing, wrong, or its timestamp is outside the window: says which (no key material in it)."""


@functools.lru_cache(maxsize=1024)
def _ed25519_key(public_key: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key))


def ed25519_public_key_valid(public_key: str) -> bool:
    """Whether `public_key` is the base64 of a 32-byte Ed25519 public key."""
    try:
        _ed25519_key(public_key)
    except (binascii.Error, ValueError, TypeError):
        return False
    return True


def verify_telnyx_signature(
    public_key: str, signature: str, timestamp: str, raw: bytes, *, now: float, window: int = ED25519_WINDOW_SECONDS
) -> None:
    """Telnyx's callback signature: header telnyx-signature-ed25519 is the base64 Ed25519 signature, made with the
    account's key, of "<telnyx-timestamp>|<raw body>"; the timestamp (Unix seconds) must be within `window` seconds
    of `now`. Checked over the untouched bytes, before anything parses them. Raises Ed25519SignatureRefused."""
    if not signature or not timestamp:
        raise Ed25519SignatureRefused("telnyx-signature-ed25519 and telnyx-timestamp are required")
    try:
        in_window = abs(now - int(timestamp)) <= window
    except (TypeError, ValueError):
        in_window = False
    if not in_window:
        raise Ed25519SignatureRefused("telnyx-timestamp is more than five minutes from now")
    try:
        _ed25519_key(public_key).verify(base64.b64decode(signature, validate=True), timestamp.encode() + b"|" + raw)
    except (InvalidSignature, binascii.Error, ValueError, TypeError):
        raise Ed25519SignatureRefused("telnyx-signature-ed25519 does not match") from None
