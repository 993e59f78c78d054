"""Fixtures of the reputation tests: a location with a review source (made through HTTP), a local HTTP server that
speaks the Business Profile API v4 reviews wire (the real httpx client talks to it), an SMS connection and a patient
with SMS consent for review requests, and helpers."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from apps.reputation.models import ReviewRequest
from apps.reputation.services import request_create
from tests.campaigns.conftest import connect, grant
from tests.factories import LocationFactory, PatientFactory

ACCOUNT, PLACE = "1234567890", "9876543210"
ACCESS_TOKEN = "ya29.test-access-token"
REVIEW_URL = "https://search.google.com/local/writereview?placeid=ChIJtest"
STARS = {1: "ONE", 2: "TWO", 3: "THREE", 4: "FOUR", 5: "FIVE"}


def post_json(client, path, data=None, **extra):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json", **extra)


def patch_json(client, path, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


def wire_review(review_id: str, *, stars: int = 5, comment: str = "Great care", updated: str = "2025-05-01T10:00:00Z",
                name: str = "Ann Reviewer", reply: str | None = None) -> dict:  # fmt: skip
    item = {
        "name": f"accounts/{ACCOUNT}/locations/{PLACE}/reviews/{review_id}",
        "reviewId": review_id,
        "reviewer": {"displayName": name},
        "starRating": STARS[stars],
        "comment": comment,
        "createTime": "2025-01-01T09:00:00Z",
        "updateTime": updated,
    }
    if reply is not None:
        item["reviewReply"] = {"comment": reply, "updateTime": updated}
    return item


class FakeProfile:
    """The platform's state the local server answers from (set by the test), and what it was asked."""

    def __init__(self):
        self.reviews: list[dict] = []
        self.page_size = 2
        self.reply_status = 200
        self.list_status = 200
        self.requests: list[tuple[str, str, dict, str]] = []  # method, path, query/body, authorization
        self.lock = threading.Lock()


def _handler(profile: FakeProfile):
    base = f"/v4/accounts/{ACCOUNT}/locations/{PLACE}/reviews"

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
            with profile.lock:
                profile.requests.append(("GET", url.path, query, self.headers.get("Authorization", "")))
            if url.path != base:
                return self._send(404, {"error": {"code": 404, "status": "NOT_FOUND"}})
            if profile.list_status != 200:
                return self._send(profile.list_status, {"error": {"code": profile.list_status}})
            start = int(query.get("pageToken") or 0)
            page = profile.reviews[start : start + profile.page_size]
            body = {"reviews": page, "averageRating": 4.5, "totalReviewCount": len(profile.reviews)}
            if start + profile.page_size < len(profile.reviews):
                body["nextPageToken"] = str(start + profile.page_size)
            return self._send(200, body)

        def do_PUT(self):
            url = urlsplit(self.path)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            with profile.lock:
                profile.requests.append(("PUT", url.path, body, self.headers.get("Authorization", "")))
            if not (url.path.startswith(base + "/") and url.path.endswith("/reply")):
                return self._send(404, {"error": {"code": 404}})
            if profile.reply_status != 200:
                return self._send(profile.reply_status, {"error": {"code": profile.reply_status}})
            return self._send(200, {"comment": body.get("comment"), "updateTime": "2025-06-01T12:00:00Z"})

    return Handler


@pytest.fixture
def profile(settings):
    """A local Business Profile API: the provider transport (real httpx) points at it."""
    state = FakeProfile()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.SVC_REPUTATION_TRANSPORT = "provider"
    settings.SVC_REPUTATION_API_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def location(owner):
    return LocationFactory(organization=owner.organization, name="High Street")


def make_source(client, location, **fields) -> dict:
    body = {
        "locationId": str(location.id),
        "provider": "google_business_profile",
        "name": "High Street on Google",
        "accountRef": ACCOUNT,
        "locationRef": PLACE,
        "reviewUrl": REVIEW_URL,
        "credentials": {"accessToken": ACCESS_TOKEN},
    } | fields
    response = post_json(client, "/reputation/sources", body)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def source(api, location) -> dict:
    return make_source(api, location)


@pytest.fixture
def sms(api) -> dict:
    return connect(api, "sms", "+390212345678", {"accountSid": "AC" + "0" * 32, "authToken": "reputation-sms-token"})


@pytest.fixture
def consenting(owner):
    patient = PatientFactory(organization=owner.organization, first_name="Grace")
    grant(patient, "sms")
    return patient


def issue_request(owner, patient, location, channel: str = "sms"):
    """A sent review request and its token (the service: the route never returns the token)."""
    sent = request_create(
        organization=owner.organization, user=owner.user, patient=patient, location=location, channel=channel
    )
    return ReviewRequest.objects.for_org(owner.organization).get(id=sent.request.id), sent.token


@pytest.fixture
def link(owner, consenting, location, source, sms):
    """(request, token): a review request sent by SMS to a consenting patient."""
    return issue_request(owner, consenting, location)
