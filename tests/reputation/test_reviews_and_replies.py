"""Reviews: list (filters, newest first), read, reply → pending → published / failed through the local provider
server, retries on 5xx, 409 while pending, reputation_reply.status_changed without the text."""

import json

from apps.events.models import Event
from apps.reputation import services, tasks
from apps.reputation.models import Review
from tests.helpers import assert_error
from tests.reputation.conftest import ACCESS_TOKEN, post_json, wire_review


def imported(api, profile, source, reviews):
    profile.reviews = reviews
    assert post_json(api, f"/reputation/sources/{source['id']}/sync").status_code == 200


def reply_events(organization):
    rows = Event.objects.for_org(organization).filter(type="reputation_reply.status_changed")
    return [e.data["status"] for e in rows.order_by("created_at", "id")], list(rows)


def test_list_filters_and_read(api, owner, profile, source):
    imported(api, profile, source, [
        wire_review("a", stars=5, updated="2025-05-01T00:00:00Z", reply="Thanks!"),
        wire_review("b", stars=2, updated="2025-05-03T00:00:00Z"),
        wire_review("c", stars=5, updated="2025-05-02T00:00:00Z"),
    ])  # fmt: skip
    page = api.get("/reputation/reviews").json()
    assert page["total"] == 3 and [r["providerReviewId"] for r in page["items"]] == ["b", "c", "a"]
    assert [r["providerReviewId"] for r in api.get("/reputation/reviews?rating=5").json()["items"]] == ["c", "a"]
    assert [r["providerReviewId"] for r in api.get("/reputation/reviews?replied=true").json()["items"]] == ["a"]
    assert api.get("/reputation/reviews?replied=false").json()["total"] == 2
    assert api.get(f"/reputation/reviews?locationId={source['locationId']}&limit=1&offset=1").json()["items"][0][
        "providerReviewId"] == "c"  # fmt: skip
    first = page["items"][2]
    detail = api.get(f"/reputation/reviews/{first['id']}").json()
    assert detail["replyComment"] == "Thanks!" and detail["replyStatus"] == "none" and detail["rating"] == 5
    assert_error(api.get("/reputation/reviews?rating=6"), 400, "VALIDATION_ERROR")


def test_reply_is_published_through_the_provider(api, owner, profile, source):
    imported(api, profile, source, [wire_review("a", stars=3)])
    review = Review.objects.for_org(owner.organization).get()
    response = post_json(api, f"/reputation/reviews/{review.id}/reply", {"comment": "Sorry to hear that, call us."})
    assert response.status_code == 202, response.content
    assert response.json()["replyStatus"] == "pending"
    assert_error(post_json(api, f"/reputation/reviews/{review.id}/reply", {"comment": "Again"}), 409,
                 "REPUTATION_REPLY_PENDING")  # fmt: skip
    assert tasks.publish_reply(str(review.id)) == "published"
    put = [r for r in profile.requests if r[0] == "PUT"]
    assert put == [("PUT", "/v4/accounts/1234567890/locations/9876543210/reviews/a/reply",
                    {"comment": "Sorry to hear that, call us."}, f"Bearer {ACCESS_TOKEN}")]  # fmt: skip
    detail = api.get(f"/reputation/reviews/{review.id}").json()
    assert detail["replyStatus"] == "published" and detail["replyUpdatedAt"].startswith("2025-06-01T12:00:00")
    assert tasks.publish_reply(str(review.id)) == "published"  # a redelivered task: nothing sent again
    assert len([r for r in profile.requests if r[0] == "PUT"]) == 1
    statuses, events = reply_events(owner.organization)
    assert statuses == ["pending", "published"]
    for event in events:
        assert "Sorry" not in json.dumps(event.data) and "comment" not in json.dumps(event.data).lower()
    # A later sync keeps our published reply and emits nothing for it.
    profile.reviews = [wire_review("a", stars=3, reply="Sorry to hear that, call us.")]
    assert post_json(api, f"/reputation/sources/{source['id']}/sync").json()["emitted"] == 0


def test_reply_refused_fails(api, owner, profile, source):
    imported(api, profile, source, [wire_review("a")])
    review = Review.objects.for_org(owner.organization).get()
    profile.reply_status = 400
    post_json(api, f"/reputation/reviews/{review.id}/reply", {"comment": "Thank you!"})
    assert tasks.publish_reply(str(review.id)) == "failed"
    detail = api.get(f"/reputation/reviews/{review.id}").json()
    assert detail["replyStatus"] == "failed" and detail["replyError"] == "HTTP_400"
    assert reply_events(owner.organization)[0] == ["pending", "failed"]
    # Replying again is allowed after a failure.
    profile.reply_status = 200
    assert post_json(api, f"/reputation/reviews/{review.id}/reply", {"comment": "Thank you!"}).status_code == 202
    assert tasks.publish_reply(str(review.id)) == "published"


def test_reply_retries_on_5xx_then_fails(api, owner, profile, source):
    imported(api, profile, source, [wire_review("a")])
    review = Review.objects.for_org(owner.organization).get()
    profile.reply_status = 503
    post_json(api, f"/reputation/reviews/{review.id}/reply", {"comment": "Thank you!"})
    for _ in range(services.MAX_REPLY_ATTEMPTS - 1):
        assert tasks.publish_reply(str(review.id)) == services.RETRY
        assert api.get(f"/reputation/reviews/{review.id}").json()["replyStatus"] == "pending"
    assert tasks.publish_reply(str(review.id)) == "failed"
    detail = api.get(f"/reputation/reviews/{review.id}").json()
    assert detail["replyError"] == "PROVIDER_UNAVAILABLE"
    assert reply_events(owner.organization)[0] == ["pending", "failed"]


def test_reply_validation(api, owner, source):
    post_json(api, f"/reputation/sources/{source['id']}/sync")  # sandbox reviews
    review = Review.objects.for_org(owner.organization).first()
    for body in (
        {},
        {"comment": ""},
        {"comment": "   "},
        {"comment": 5},
        {"comment": "x" * 4097},
        {"comment": "a", "x": 1},
    ):
        assert_error(post_json(api, f"/reputation/reviews/{review.id}/reply", body), 400, "VALIDATION_ERROR")
    assert Review.objects.for_org(owner.organization).get(id=review.id).reply_status == "none"
    assert not Event.objects.for_org(owner.organization).filter(type="reputation_reply.status_changed").exists()
