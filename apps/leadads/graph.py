"""The social ad platform's lead API behind one small adapter (Meta Graph API as the reference):

    GET {SVC_LEAD_ADS_GRAPH_URL}/{leadgen_id}?fields=id,created_time,ad_id,form_id,campaign_id,is_organic,field_data,
        custom_disclaimer_responses        (Authorization: Bearer <page access token>)
    → {"id", "created_time", "ad_id", "form_id", "campaign_id", "field_data": [{"name", "values": [...]}], …}

httpx, connect 5 s, read 15 s, no redirects, answers up to 1 MiB. Outcomes:
- TokenRefused: 401/403, or a Graph error of code 190 (invalid or expired token), 102, 10 or 200 (permissions) —
  the connection turns failing; the lead is tried again on the body's next attempt.
- LeadNotFound: 404, or Graph error code 100 (no such object): the lead cannot be read (the submission fails).
- Unavailable: timeouts, network errors, 429, 5xx, Graph rate-limit codes 4, 17, 32, 613: tried again later.
- Refused: anything else we cannot use (short code kept).
The sandbox transport (`make run`, tests by default: SVC_LEAD_ADS_TRANSPORT=sandbox) contacts nothing and answers a
made-up lead derived from the leadgen id."""

import logging
import re
from dataclasses import dataclass
from urllib.parse import quote

import httpx
from django.conf import settings

from apps.leadads.platforms import meta_fields

logger = logging.getLogger("apps.leadads")

TIMEOUT = httpx.Timeout(15.0, connect=5.0)
MAX_ANSWER_BYTES = 1024 * 1024
FIELDS = "id,created_time,ad_id,form_id,campaign_id,is_organic,field_data,custom_disclaimer_responses"
TOKEN_CODES = {190, 102, 10, 200}
RATE_CODES = {4, 17, 32, 613}


class Unavailable(Exception):
    """Worth trying again later."""


class TokenRefused(Exception):
    """The page token no longer works: the connection is failing."""


class LeadNotFound(Exception):
    """The platform has no such lead (deleted, or not this page's)."""


class Refused(Exception):
    def __init__(self, code: str):
        super().__init__(code)
        self.code = code[:32]


@dataclass(frozen=True)
class FetchedLead:
    fields: dict
    campaign_ref: str
    form_ref: str
    ad_ref: str


def _ref(value) -> str:
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return text[:64] if text.isprintable() else ""


def read_lead(data: dict) -> FetchedLead:
    return FetchedLead(
        fields=meta_fields(data),
        campaign_ref=_ref(data.get("campaign_id")),
        form_ref=_ref(data.get("form_id")),
        ad_ref=_ref(data.get("ad_id")),
    )


class GraphTransport:
    sandbox = False

    def fetch_lead(self, leadgen_id: str, page_token: str) -> FetchedLead:
        base = (settings.SVC_LEAD_ADS_GRAPH_URL or "").rstrip("/")
        if not base:
            raise Unavailable()
        url = f"{base}/{quote(leadgen_id, safe='')}"
        try:
            with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
                response = client.get(url, params={"fields": FIELDS}, headers={"Authorization": f"Bearer {page_token}"})
        except httpx.HTTPError as exc:
            logger.warning("lead API unreachable (%s)", type(exc).__name__)
            raise Unavailable() from None
        if len(response.content) > MAX_ANSWER_BYTES:
            raise Refused("ANSWER_TOO_LARGE")
        try:
            data = response.json()
        except ValueError:
            data = None
        error = data.get("error") if isinstance(data, dict) and isinstance(data.get("error"), dict) else {}
        code = error.get("code") if isinstance(error.get("code"), int) else None
        if response.status_code == 429 or response.status_code >= 500 or code in RATE_CODES:
            logger.warning("lead API answered %s", response.status_code)
            raise Unavailable()
        if response.status_code in (401, 403) or code in TOKEN_CODES:
            raise TokenRefused()
        if response.status_code == 404 or code == 100:
            raise LeadNotFound()
        if response.status_code != 200 or not isinstance(data, dict):
            raise Refused(f"HTTP_{response.status_code}")
        return read_lead(data)


class SandboxTransport:
    """Contacts nothing: a made-up lead named after the leadgen id (`make run`, tests unless they point the Graph URL
    at a local server)."""

    sandbox = True

    def fetch_lead(self, leadgen_id: str, page_token: str) -> FetchedLead:
        tag = re.sub(r"[^a-z0-9]", "", leadgen_id.lower())[-12:] or "lead"
        return read_lead(
            {
                "id": leadgen_id,
                "form_id": "sandbox-form",
                "campaign_id": "sandbox-campaign",
                "ad_id": "sandbox-ad",
                "field_data": [
                    {"name": "full_name", "values": [f"Sandbox Lead{tag[-4:]}"]},
                    {"name": "email", "values": [f"lead-{tag}@sandbox.example"]},
                ],
            }
        )


def transport():
    return SandboxTransport() if settings.SVC_LEAD_ADS_TRANSPORT == "sandbox" else GraphTransport()
