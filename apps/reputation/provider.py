"""The review platform's API behind one small adapter (Google Business Profile API v4 as the reference):

- GET {api}/v4/accounts/{account}/locations/{location}/reviews?pageSize=50&pageToken=… (bearer access token) →
  {"reviews": [{"name", "reviewId", "reviewer": {"displayName"}, "starRating": "ONE".."FIVE", "comment",
  "createTime", "updateTime", "reviewReply": {"comment", "updateTime"}}], "nextPageToken", …}
- PUT {api}/v4/accounts/{account}/locations/{location}/reviews/{reviewId}/reply {"comment"} → {"comment",
  "updateTime"}

The provider transport speaks to SVC_REPUTATION_API_URL with httpx (connect 5 s, read 15 s, no redirects). 429, 5xx,
timeouts and network errors are ProviderUnavailable (the caller retries); other refusals are ProviderRefused with a
short code that is safe to store. The sandbox transport (`make run`, tests by default: SVC_REPUTATION_TRANSPORT=
sandbox) contacts nothing: a location has three fixed sample reviews and a reply is published at once."""

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

import httpx
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

logger = logging.getLogger("apps.reputation")

TIMEOUT = httpx.Timeout(15.0, connect=5.0)
PAGE_SIZE = 50
MAX_PAGES = 200  # a sync reads at most this many pages (10,000 reviews) of one location
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
STARS = {"ONE": 1, "TWO": 2, "THREE": 3, "FOUR": 4, "FIVE": 5}


class ProviderUnavailable(Exception):
    """Timeouts, network errors, 429 and 5xx: worth trying again later."""


class ProviderRefused(Exception):
    """A refusal (401, 403, 404, other 4xx) or an answer we cannot read: `code` is short and safe to store."""

    def __init__(self, code: str):
        super().__init__(code)
        self.code = code[:64]


@dataclass(frozen=True)
class ProviderReview:
    review_id: str
    reviewer_name: str
    rating: int
    comment: str
    created_at: datetime
    updated_at: datetime
    reply_comment: str
    reply_updated_at: datetime | None


@dataclass(frozen=True)
class Location:
    account_ref: str
    location_ref: str
    access_token: str


@dataclass(frozen=True)
class PublishedReply:
    comment: str
    updated_at: datetime


def _time(value) -> datetime | None:
    if not isinstance(value, str):
        return None
    parsed = parse_datetime(value)
    if parsed is None:
        return None
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


def parse_review(item) -> ProviderReview | None:
    """One review of the wire, or None when it lacks what we need (skipped, logged)."""
    if not isinstance(item, dict):
        return None
    review_id = item.get("reviewId")
    rating = STARS.get(item.get("starRating"))
    created, updated = _time(item.get("createTime")), _time(item.get("updateTime"))
    if not isinstance(review_id, str) or not review_id or len(review_id) > 255 or rating is None or updated is None:
        return None
    reviewer = item.get("reviewer") if isinstance(item.get("reviewer"), dict) else {}
    reply = item.get("reviewReply") if isinstance(item.get("reviewReply"), dict) else {}
    comment = item.get("comment")
    return ProviderReview(
        review_id=review_id,
        reviewer_name=str(reviewer.get("displayName") or "")[:200],
        rating=rating,
        comment=comment if isinstance(comment, str) else "",
        created_at=created or updated,
        updated_at=updated,
        reply_comment=reply.get("comment") if isinstance(reply.get("comment"), str) else "",
        reply_updated_at=_time(reply.get("updateTime")),
    )


class ProviderTransport:
    sandbox = False

    def _base(self, location: Location) -> str:
        base = (settings.SVC_REPUTATION_API_URL or "").rstrip("/")
        account, place = quote(location.account_ref, safe=""), quote(location.location_ref, safe="")
        return f"{base}/v4/accounts/{account}/locations/{place}"

    def _call(self, method: str, url: str, location: Location, **kwargs) -> dict:
        try:
            with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
                response = client.request(
                    method, url, headers={"Authorization": f"Bearer {location.access_token}"}, **kwargs
                )
        except httpx.HTTPError as exc:
            logger.warning("review provider unreachable (%s)", type(exc).__name__)
            raise ProviderUnavailable() from None
        if response.status_code == 429 or response.status_code >= 500:
            logger.warning("review provider answered %s", response.status_code)
            raise ProviderUnavailable()
        if response.status_code != 200:
            raise ProviderRefused(f"HTTP_{response.status_code}")
        if len(response.content) > MAX_RESPONSE_BYTES:
            raise ProviderRefused("ANSWER_TOO_LARGE")
        try:
            data = response.json()
        except ValueError:
            raise ProviderRefused("ANSWER_NOT_JSON") from None
        if not isinstance(data, dict):
            raise ProviderRefused("ANSWER_NOT_JSON")
        return data

    def list_reviews(self, location: Location) -> list[ProviderReview]:
        """Every review of the location, following nextPageToken."""
        reviews: list[ProviderReview] = []
        page_token = ""
        for _ in range(MAX_PAGES):
            params = {"pageSize": PAGE_SIZE} | ({"pageToken": page_token} if page_token else {})
            data = self._call("GET", f"{self._base(location)}/reviews", location, params=params)
            items = data.get("reviews") or []
            if not isinstance(items, list):
                raise ProviderRefused("ANSWER_NOT_READABLE")
            for item in items:
                review = parse_review(item)
                if review is None:
                    logger.warning("review provider sent a review we cannot read; skipped")
                    continue
                reviews.append(review)
            page_token = data.get("nextPageToken") or ""
            if not isinstance(page_token, str) or not page_token:
                break
        return reviews

    def publish_reply(self, location: Location, review_id: str, comment: str) -> PublishedReply:
        url = f"{self._base(location)}/reviews/{quote(review_id, safe='')}/reply"
        data = self._call("PUT", url, location, json={"comment": comment})
        return PublishedReply(
            comment=str(data.get("comment") or comment), updated_at=_time(data.get("updateTime")) or timezone.now()
        )


SANDBOX_REVIEWS = (
    ("sandbox-1", "Sam Sample", "FIVE", "Lovely team, painless check-up.", "2025-01-10T09:00:00Z"),
    ("sandbox-2", "Alex Example", "FOUR", "Good care; the wait was a little long.", "2025-02-14T12:30:00Z"),
    ("sandbox-3", "Jo Placeholder", "TWO", "Hard to get an appointment.", "2025-03-03T16:45:00Z"),
)


class SandboxTransport:
    """Contacts nothing: what `make run` and the tests use unless they point the API at a local server."""

    sandbox = True

    def list_reviews(self, location: Location) -> list[ProviderReview]:
        items = [
            {"reviewId": f"{location.location_ref}-{rid}", "reviewer": {"displayName": name}, "starRating": stars,
             "comment": text, "createTime": at, "updateTime": at}
            for rid, name, stars, text, at in SANDBOX_REVIEWS
        ]  # fmt: skip
        return [parse_review(item) for item in items]

    def publish_reply(self, location: Location, review_id: str, comment: str) -> PublishedReply:
        return PublishedReply(comment=comment, updated_at=timezone.now())


def transport():
    return SandboxTransport() if settings.SVC_REPUTATION_TRANSPORT == "sandbox" else ProviderTransport()
