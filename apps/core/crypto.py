"""Secrets that must stay readable (webhook and capture signing secrets) are encrypted at rest with Fernet
(AES-128-CBC + HMAC-SHA256) from `cryptography`. Keys come from SVC_ENCRYPTION_KEYS (newest first, so old keys
still decrypt after a rotation); without it a key is derived from SECRET_KEY."""

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
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
