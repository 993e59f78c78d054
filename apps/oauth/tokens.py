"""Token generators (both set: oauthlib falls back to the access generator for refresh tokens otherwise), and the
region marker every code and token carries after its prefix (svc_oat_eu_…, svc_ort_us_…, eu_… for codes), so the
global developer front door can route a token, refresh or revocation request to the region that issued it."""

import re
import secrets

from django.conf import settings

ACCESS_PREFIX = "svc_oat_"
REFRESH_PREFIX = "svc_ort_"
REGIONS = ("eu", "us")

_REGION_MARKED = re.compile(r"^(?:svc_oat_|svc_ort_)?(eu|us)_")


def _region() -> str:
    return settings.SVC_REGION


def access_token_generator(request, refresh_token=False) -> str:
    return f"{ACCESS_PREFIX}{_region()}_{secrets.token_urlsafe(32)}"


def refresh_token_generator(request, refresh_token=False) -> str:
    return f"{REFRESH_PREFIX}{_region()}_{secrets.token_urlsafe(32)}"


def authorization_code_generator() -> str:
    return f"{_region()}_{secrets.token_urlsafe(32)}"


def region_of(value: str | None) -> str | None:
    """The region a code, access token or refresh token was issued in; None when it carries no marker."""
    match = _REGION_MARKED.match(value or "")
    return match.group(1) if match else None
