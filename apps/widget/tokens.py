"""Visitor tokens: `wv_` and 43 random URL-safe characters, shown once; the widget keeps their SHA-256 (a lookup
by hash is an exact index match, nothing to compare in variable time)."""

import hashlib
import re
import secrets

VISITOR_PREFIX = "wv_"
EMBED_PREFIX = "wk_"


def new_visitor_token() -> str:
    return f"{VISITOR_PREFIX}{secrets.token_urlsafe(32)}"


def new_embed_key() -> str:
    return f"{EMBED_PREFIX}{secrets.token_urlsafe(24)}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


# What our keys and tokens are made of: anything else (NUL included) is unknown before any lookup.
EMBED_KEY = re.compile(r"wk_[A-Za-z0-9_-]{20,60}")
VISITOR_TOKEN = re.compile(r"wv_[A-Za-z0-9_-]{20,60}")


def looks_like_embed_key(key: str | None) -> bool:
    return bool(key) and EMBED_KEY.fullmatch(key) is not None


def looks_like_visitor_token(token: str | None) -> bool:
    return bool(token) and VISITOR_TOKEN.fullmatch(token) is not None
