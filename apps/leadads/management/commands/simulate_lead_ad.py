"""Play an ad platform locally: post a correctly signed callback to the running server, exactly as the platform would.

    python manage.py simulate_lead_ad meta_platform <connection id>              # a leadgen notification (signed)
    python manage.py simulate_lead_ad short_video <connection id> --count 100   # a batch of 100 leads (signed)
    python manage.py simulate_lead_ad search_ads <connection id> --routing-token lat_… --google-key lgk_…
    python manage.py simulate_lead_ad deauthorize --user-id 1234                 # signed_request
    python manage.py simulate_lead_ad data_deletion --user-id 1234               # signed_request; prints the tracker

Signed with this deployment's SVC_LEAD_ADS_META_APP_SECRET / SVC_LEAD_ADS_SHORT_VIDEO_SECRET (fixed local values
under `make run`). Search ads carry no signature: the routing token and google_key shown when the connection was
made (only their digests are kept, so they are passed here). Under `make run` the social platform's lead answers
come from the sandbox (SVC_LEAD_ADS_TRANSPORT=sandbox), and the worker makes the leads moments later."""

import json
import secrets
import time
from urllib.parse import urlencode

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.leadads import signatures
from apps.leadads.models import LeadAdConnection, Platform

KINDS = ("meta_platform", "search_ads", "short_video", "deauthorize", "data_deletion")


def meta_body(page_id: str, count: int = 1) -> dict:
    now = int(time.time())
    changes = [
        {
            "field": "leadgen",
            "value": {
                "leadgen_id": str(secrets.randbelow(10**15) + 10**15),
                "page_id": page_id,
                "form_id": "sandbox-form",
                "ad_id": "sandbox-ad",
                "adgroup_id": "sandbox-adgroup",
                "created_time": now,
            },
        }
        for _ in range(count)
    ]
    return {"object": "page", "entry": [{"id": page_id, "time": now, "changes": changes}]}


def short_video_body(advertiser_id: str, count: int = 1) -> dict:
    leads = []
    for n in range(count):
        tag = secrets.token_hex(4)
        leads.append(
            {
                "lead_id": f"tt-{secrets.token_hex(8)}",
                "advertiser_id": advertiser_id,
                "campaign_id": "sandbox-campaign",
                "ad_id": "sandbox-ad",
                "form_id": "sandbox-form",
                "create_time": int(time.time()),
                "is_test": False,
                "ttclid": f"E.C.P.{secrets.token_hex(6)}",
                "fields": [
                    {"name": "name", "value": f"Video Lead{n} {tag}"},
                    {"name": "email", "value": f"video-{tag}-{n}@sandbox.example"},
                    {"name": "phone_number", "value": f"+44 7700 9{secrets.randbelow(10**5):05d}"},
                ],
                "consent": True,
            }
        )
    return {"leads": leads}


def search_ads_body(google_key: str) -> dict:
    tag = secrets.token_hex(4)
    return {
        "lead_id": f"gl-{secrets.token_hex(8)}",
        "api_version": "1.0",
        "form_id": 123456,
        "campaign_id": 987654,
        "gcl_id": f"Cj0K{secrets.token_hex(8)}",
        "google_key": google_key,
        "is_test": False,
        "user_column_data": [
            {"column_id": "FULL_NAME", "column_name": "Full Name", "string_value": f"Search Lead {tag}"},
            {"column_id": "EMAIL", "column_name": "User Email", "string_value": f"search-{tag}@sandbox.example"},
            {"column_id": "PHONE_NUMBER", "column_name": "User Phone", "string_value": "+44 7700 900123"},
        ],
    }


class Command(BaseCommand):
    help = "Post a correctly signed lead-ad callback (see the module docstring for the kinds)."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=KINDS)
        parser.add_argument("connection_id", nargs="?")
        parser.add_argument("--count", type=int, default=1, help="leads in the body (at most 100 are accepted)")
        parser.add_argument("--routing-token", default="", help="search_ads: the routing token shown once")
        parser.add_argument("--google-key", default="", help="search_ads: the google_key shown once")
        parser.add_argument("--user-id", default="", help="deauthorize / data_deletion: the person's platform id")
        parser.add_argument("--url", default=None, help="the server's base URL (default SVC_BASE_URL)")

    def handle(self, *args, kind, connection_id, count, routing_token, google_key, user_id, url, **options):
        base = (url or settings.SVC_BASE_URL).rstrip("/") + "/webhooks/lead-ads"
        if kind in ("deauthorize", "data_deletion"):
            if not user_id:
                raise CommandError("--user-id is required")
            payload = {"algorithm": "HMAC-SHA256", "issued_at": int(time.time()), "user_id": user_id}
            form = urlencode({"signed_request": signatures.signed_request(settings.SVC_LEAD_ADS_META_APP_SECRET,
                                                                          payload)})  # fmt: skip
            path = "/meta-platform/deauthorize" if kind == "deauthorize" else "/meta-platform/data-deletion"
            response = httpx.post(
                base + path, content=form, headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10
            )
            self.stdout.write(f"{kind} → {response.status_code} {response.text}")
            return
        connection = LeadAdConnection.objects.unscoped().filter(id=connection_id or None, platform=kind).first()
        if connection is None:
            raise CommandError(f"No {kind} lead-ad connection with that id.")
        headers = {"Content-Type": "application/json"}
        if kind == Platform.META_PLATFORM:
            raw = json.dumps(meta_body(connection.external_id, count)).encode()
            headers[signatures.META_HEADER] = signatures.meta_header(settings.SVC_LEAD_ADS_META_APP_SECRET, raw)
            target = base + "/meta-platform"
        elif kind == Platform.SHORT_VIDEO:
            raw = json.dumps(short_video_body(connection.external_id, count)).encode()
            headers[signatures.SHORT_VIDEO_HEADER] = signatures.short_video_header(
                settings.SVC_LEAD_ADS_SHORT_VIDEO_SECRET, raw
            )
            target = base + "/short-video"
        else:
            if not routing_token or not google_key:
                raise CommandError("search_ads needs --routing-token and --google-key (shown when it was made)")
            raw = json.dumps(search_ads_body(google_key)).encode()
            target = f"{base}/search-ads/{routing_token}"
        response = httpx.post(target, content=raw, headers=headers, timeout=30)
        self.stdout.write(f"{kind} → {response.status_code} {response.text}")
