"""Hostnames for domain pinning, and the page URLs form-discovery reports name. Pure functions; no database."""

import hashlib
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from apps.capture.public import ATTRIBUTION_FIELDS

MAX_DOMAINS = 50
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def normalize_host(value: str) -> str | None:
    """A hostname in lower-case IDNA form without a trailing dot, or None when it is not a hostname."""
    host = (value or "").strip().lower().rstrip(".")
    if not host or len(host) > 253:
        return None
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        return None
    return host


def normalize_domain(value: str) -> str:
    """An allowed domain as a practice types it. Raises ValueError with the problem."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a hostname")
    if any(mark in value for mark in ("://", "/", ":", "@", "*", "?", "#")) or any(c.isspace() for c in value.strip()):
        raise ValueError(f'"{value[:80]}": a hostname only (example.com), without scheme, port, path or wildcard')
    host = normalize_host(value)
    if host is None:
        raise ValueError(f'"{value[:80]}" is not a valid hostname')
    if "." not in host and host != "localhost":
        raise ValueError(f'"{value[:80]}": name a whole domain (example.com), not a top-level domain')
    return host


def host_allowed(host: str | None, domains: list[str]) -> bool:
    """Whether the host is one of the domains or a subdomain of one."""
    host = normalize_host(host or "")
    if host is None:
        return False
    return any(host == domain or host.endswith("." + domain) for domain in domains)


def origin_host(origin: str) -> str | None:
    """The host of an Origin header (scheme://host[:port]); None for "null" or anything malformed."""
    try:
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or parts.path not in ("", "/"):
            return None
        return parts.hostname
    except ValueError:
        return None


def normalize_page_url(value: str) -> tuple[str, str]:
    """(page URL, its host) for a reported page: http(s) with a host; the fragment and marketing parameters
    (utm_*, click ids) are dropped so one page is one page whatever campaign brought the visitor. Raises
    ValueError with the problem."""
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        raise ValueError("is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ValueError("must be an http or https URL with a host")
    query = [
        (key, val)
        for key, val in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() not in ATTRIBUTION_FIELDS and not key.lower().startswith("utm_")
    ]
    netloc = parts.netloc.rsplit("@", 1)[-1].lower()  # credentials in a page URL are never kept
    url = urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", urlencode(query), ""))
    return url, host


def page_digest(page_url: str) -> str:
    return hashlib.sha256(page_url.encode()).hexdigest()
