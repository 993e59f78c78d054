"""The patient form token of /patient-form/{token}: opaque, random, prefixed `pf_`; only its SHA-256 is stored, so the
database never holds a usable link."""

import hashlib
import secrets

PREFIX = "pf_"
MAX_LENGTH = 64


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str | None:
    """The stored form of a token, or None for anything that is not one of ours (never looked up)."""
    if not isinstance(token, str) or not token.startswith(PREFIX) or len(token) > MAX_LENGTH:
        return None
    return hashlib.sha256(token.encode()).hexdigest()
