"""Forwarding a body to the peer region (spec inbound rule 7: one intake for both regions, saved, then forwarded to
the owning region's API).

The platforms post every practice's leads to one URL per platform. A body whose pages or advertisers are none of
this region's connections is posted, exactly as received (same bytes, same provider signature header), to the same
route of the peer region's API at SVC_LEAD_ADS_PEER_URL, with `X-Service-Forwarded-From: <this region>`. The peer
verifies the provider's signature as usual (one platform app serves both regions), saves the body in its own intake
and processes it; a forwarded body is never forwarded again (it is parked there when that region does not own it
either). httpx, connect 5 s, read 15 s, no redirects; any 2xx is success; anything else is tried again on the body's
next attempt. Without a peer URL nothing is forwarded: the body stays parked for operator review."""

import logging

import httpx
from django.conf import settings

from apps.leadads import signatures
from apps.leadads.models import Platform

logger = logging.getLogger("apps.leadads")

FORWARDED_HEADER = "X-Service-Forwarded-From"
TIMEOUT = httpx.Timeout(15.0, connect=5.0)
PATHS = {
    Platform.META_PLATFORM: ("/webhooks/lead-ads/meta-platform", signatures.META_HEADER),
    Platform.SHORT_VIDEO: ("/webhooks/lead-ads/short-video", signatures.SHORT_VIDEO_HEADER),
}


class ForwardFailed(Exception):
    pass


def configured() -> bool:
    return bool((settings.SVC_LEAD_ADS_PEER_URL or "").strip())


def forwardable(platform: str) -> bool:
    return platform in PATHS


def forward(*, platform: str, raw: bytes, signature: str) -> int:
    """Post the body to the peer region; the peer's status on success, ForwardFailed otherwise."""
    path, header = PATHS[platform]
    url = settings.SVC_LEAD_ADS_PEER_URL.rstrip("/") + path
    headers = {"Content-Type": "application/json", header: signature, FORWARDED_HEADER: settings.SVC_REGION}
    try:
        with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
            response = client.post(url, content=raw, headers=headers)
    except httpx.HTTPError as exc:
        logger.warning("peer region unreachable (%s)", type(exc).__name__)
        raise ForwardFailed(type(exc).__name__) from None
    if not 200 <= response.status_code < 300:
        raise ForwardFailed(f"HTTP_{response.status_code}")
    return response.status_code


def forward_form(*, path: str, form: bytes) -> int:
    """Deauthorize and data-deletion forms, posted on to the peer region as received."""
    url = settings.SVC_LEAD_ADS_PEER_URL.rstrip("/") + path
    headers = {"Content-Type": "application/x-www-form-urlencoded", FORWARDED_HEADER: settings.SVC_REGION}
    try:
        with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
            response = client.post(url, content=form, headers=headers)
    except httpx.HTTPError as exc:
        raise ForwardFailed(type(exc).__name__) from None
    if not 200 <= response.status_code < 300:
        raise ForwardFailed(f"HTTP_{response.status_code}")
    return response.status_code
