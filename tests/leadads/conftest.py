"""Fixtures of the lead-ads tests: connections made through HTTP, bodies signed with the platforms' real schemes, a
local HTTP server that speaks the social platform's lead API (the real httpx client talks to it), and a local peer
region that records what is forwarded to it."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.conf import settings

from apps.events.models import Event
from apps.leadads import signatures, tasks
from apps.leadads.models import LeadIntake

CONNECTIONS = "/lead-ads/connections"
SUBMISSIONS = "/lead-ads/submissions"
META = "/webhooks/lead-ads/meta-platform"
SHORT_VIDEO = "/webhooks/lead-ads/short-video"
SEARCH = "/webhooks/lead-ads/search-ads/"
DEAUTHORIZE = "/webhooks/lead-ads/meta-platform/deauthorize"
DATA_DELETION = "/webhooks/lead-ads/meta-platform/data-deletion"
PAGE_ID = "104857600123"
PAGE_TOKEN = "EAAB-page-token-secret"
ADVERTISER_ID = "7001234567890"
AD_ACCOUNT = "123-456-7890"
META_USER = "10220000111"
LEAD_EVENTS = ("lead_ad_submission.received", "lead_ad_submission.status_changed")


def post_json(client, path, data=None, **extra):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json", **extra)


def patch_json(client, path, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


def lead_events(organization, types=LEAD_EVENTS):
    return list(Event.objects.for_org(organization).filter(type__in=types).order_by("created_at", "id"))


def intake_of(response) -> LeadIntake:
    """The newest intake row (the route answers no id: the platform does not need one)."""
    assert response.status_code == 200, response.content
    return LeadIntake.objects.order_by("-created_at").first()


def process_all() -> list[str]:
    """Run the processing task once for every waiting intake, as the worker would."""
    waiting = LeadIntake.objects.filter(status="received").order_by("created_at").values_list("id", flat=True)
    return [tasks.process_intake(str(intake_id)) for intake_id in waiting]


# --- bodies and signatures ----------------------------------------------------------------------------------------


def meta_body(*leadgen_ids, page_id=PAGE_ID, form_id="form-1", ad_id="ad-1") -> dict:
    changes = [
        {"field": "leadgen", "value": {"leadgen_id": lead, "page_id": page_id, "form_id": form_id, "ad_id": ad_id,
                                       "adgroup_id": "adgroup-1", "created_time": 1767225600}}
        for lead in leadgen_ids
    ]  # fmt: skip
    return {"object": "page", "entry": [{"id": page_id, "time": 1767225600, "changes": changes}]}


def post_meta(client, body, *, secret=None, header=None, **extra):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    signed = signatures.meta_header(secret or settings.SVC_LEAD_ADS_META_APP_SECRET, raw)
    headers = {"HTTP_X_HUB_SIGNATURE_256": signed if header is None else header} if header != "omit" else {}
    return client.post(META, raw, content_type="application/json", **headers, **extra)


def short_video_lead(n: int, *, advertiser_id=ADVERTISER_ID, email=None, phone=None, is_test=False, **extra) -> dict:
    fields = [{"name": "name", "value": f"Video Person{n}"}]
    fields.append({"name": "email", "value": email if email is not None else f"video{n}@example.com"})
    if phone:
        fields.append({"name": "phone_number", "value": phone})
    return {
        "lead_id": f"tt-{n}", "advertiser_id": advertiser_id, "campaign_id": "cmp-9", "ad_id": "ad-9",
        "form_id": "form-9", "create_time": 1767225600, "is_test": is_test, "ttclid": f"ttclid-{n}",
        "fields": fields, "consent": True,
    } | extra  # fmt: skip


def post_short_video(client, body, *, secret=None, timestamp=None, header=None, **extra):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    signed = signatures.short_video_header(
        secret or settings.SVC_LEAD_ADS_SHORT_VIDEO_SECRET, raw, int(time.time()) if timestamp is None else timestamp
    )
    headers = {"HTTP_TIKTOK_SIGNATURE": signed if header is None else header} if header != "omit" else {}
    return client.post(SHORT_VIDEO, raw, content_type="application/json", **headers, **extra)


def search_body(google_key, *, lead_id="gl-1", email="search@example.com", is_test=False, **extra) -> dict:
    columns = [{"column_id": "FULL_NAME", "column_name": "Full Name", "string_value": "Sam Search"}]
    if email:
        columns.append({"column_id": "EMAIL", "column_name": "User Email", "string_value": email})
    columns.append({"column_id": "PHONE_NUMBER", "column_name": "User Phone", "string_value": "+44 7700 900123"})
    columns.append({"column_id": "SERVICE", "column_name": "Which treatment?", "string_value": "Implants"})
    return {
        "lead_id": lead_id, "api_version": "1.0", "form_id": 4321, "campaign_id": 8765, "adgroup_id": 1,
        "creative_id": 2, "gcl_id": "Cj0KCQ-click", "google_key": google_key, "is_test": is_test,
        "user_column_data": columns,
    } | extra  # fmt: skip


def signed_form(payload: dict, *, secret=None) -> str:
    value = signatures.signed_request(secret or settings.SVC_LEAD_ADS_META_APP_SECRET, payload)
    return urlencode({"signed_request": value})


# --- connections --------------------------------------------------------------------------------------------------


def make_connection(client, platform: str, **fields) -> dict:
    body = {"platform": platform, "name": f"{platform} connection"}
    if platform == "meta_platform":
        body |= {"externalId": PAGE_ID, "pageAccessToken": PAGE_TOKEN, "authorizedUserId": META_USER}
    elif platform == "short_video":
        body |= {"externalId": ADVERTISER_ID}
    else:
        body |= {"externalId": AD_ACCOUNT}
    response = post_json(client, CONNECTIONS, body | fields)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def meta(api) -> dict:
    return make_connection(api, "meta_platform")


@pytest.fixture
def short_video(api) -> dict:
    return make_connection(api, "short_video")


@pytest.fixture
def search(api) -> dict:
    return make_connection(api, "search_ads")


# --- the social platform's lead API, served locally ----------------------------------------------------------------


class FakeGraph:
    """The platform's state the local server answers from (set by the test), and what it was asked."""

    def __init__(self):
        self.leads: dict[str, dict] = {}
        self.status: int | None = None  # force an answer status
        self.error_code: int | None = None
        self.requests: list[tuple[str, dict, str]] = []  # path, query, authorization
        self.lock = threading.Lock()

    def add(self, leadgen_id: str, *, email="meta@example.com", name="Mia Meta", phone=None, consent=True) -> None:
        fields = [{"name": "full_name", "values": [name]}]
        if email:
            fields.append({"name": "email", "values": [email]})
        if phone:
            fields.append({"name": "phone_number", "values": [phone]})
        fields.append({"name": "which_treatment?", "values": ["Whitening"]})
        self.leads[leadgen_id] = {
            "id": leadgen_id, "created_time": "2026-01-01T00:00:00+0000", "ad_id": "ad-1", "form_id": "form-1",
            "campaign_id": "campaign-1", "field_data": fields,
            "custom_disclaimer_responses": [{"checkbox_key": "optin", "is_checked": "1" if consent else ""}],
        }  # fmt: skip


def _graph_handler(graph: FakeGraph):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, body: dict):
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            with graph.lock:
                graph.requests.append((url.path, query, self.headers.get("Authorization", "")))
            if graph.status is not None:
                return self._send(graph.status, {"error": {"code": graph.error_code or graph.status}})
            if self.headers.get("Authorization") != f"Bearer {PAGE_TOKEN}":
                return self._send(400, {"error": {"code": 190, "type": "OAuthException"}})
            lead = graph.leads.get(url.path.rsplit("/", 1)[-1])
            if lead is None:
                return self._send(400, {"error": {"code": 100, "type": "GraphMethodException"}})
            return self._send(200, lead)

    return Handler


@pytest.fixture
def graph(settings):
    """A local lead API: the provider transport (real httpx) points at it."""
    state = FakeGraph()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _graph_handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.SVC_LEAD_ADS_TRANSPORT = "provider"
    settings.SVC_LEAD_ADS_GRAPH_URL = f"http://127.0.0.1:{server.server_address[1]}/v21.0"
    yield state
    server.shutdown()
    server.server_close()


# --- the peer region, served locally -------------------------------------------------------------------------------


class FakePeer:
    def __init__(self):
        self.status = 200
        self.received: list[tuple[str, dict, bytes]] = []
        self.lock = threading.Lock()


@pytest.fixture
def peer_region(settings):
    state = FakePeer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with state.lock:
                state.received.append((self.path, dict(self.headers), raw))
            body = b'{"received": true}'
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.SVC_LEAD_ADS_PEER_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()
