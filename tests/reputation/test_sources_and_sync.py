"""Review sources (credentials encrypted, never returned) and the review import through the real httpx client
against a local Business Profile API server: paging, emission rule 2 (first import silent, at most five deterministic
live events per location per sync, replay silent, update → .updated), no review text in events, failures."""

import json

from apps.events.models import Event
from apps.reputation import tasks
from apps.reputation.models import Review, ReviewSource
from tests.helpers import assert_error
from tests.reputation.conftest import ACCESS_TOKEN, PLACE, REVIEW_URL, make_source, patch_json, post_json, wire_review

REVIEW_EVENTS = ("reputation_review.received", "reputation_review.updated")


def review_events(organization):
    return list(Event.objects.for_org(organization).filter(type__in=REVIEW_EVENTS).order_by("created_at", "id"))


def sync(client, source):
    return post_json(client, f"/reputation/sources/{source['id']}/sync")


# --- sources --------------------------------------------------------------------------------------------------------


def test_source_is_created_and_never_returns_credentials(api, owner, location):
    body = make_source(api, location)
    assert body["credentialKeys"] == ["access_token"]
    assert body["reviewUrl"] == REVIEW_URL and body["locationId"] == str(location.id)
    assert body["importedAt"] is None
    assert ACCESS_TOKEN not in json.dumps(body)
    row = ReviewSource.objects.for_org(owner.organization).get(id=body["id"])
    assert ACCESS_TOKEN not in row.credentials_encrypted
    for path in ("/reputation/sources", f"/reputation/sources/{body['id']}"):
        assert ACCESS_TOKEN not in api.get(path).content.decode()


def test_source_validation(api, owner, outsider, location):
    from tests.factories import LocationFactory

    foreign = LocationFactory(organization=outsider.organization)
    bad = [
        {"reviewUrl": "http://example.com/review"},
        {"reviewUrl": "javascript:alert(1)"},
        {"locationId": str(foreign.id)},
        {"accountRef": "../../etc"},
        {"credentials": {}},
        {"provider": "yelp"},
        {"extra": True},
    ]
    for fields in bad:
        body = {
            "locationId": str(location.id), "name": "G", "accountRef": "1", "locationRef": "2",
            "reviewUrl": REVIEW_URL, "credentials": {"accessToken": "t"},
        } | fields  # fmt: skip
        assert_error(post_json(api, "/reputation/sources", body), 400, "VALIDATION_ERROR")
    assert not ReviewSource.objects.unscoped().exists()
    make_source(api, location)
    assert_error(post_json(api, "/reputation/sources", {
        "locationId": str(location.id), "name": "Again", "accountRef": "1234567890", "locationRef": PLACE,
        "reviewUrl": REVIEW_URL, "credentials": {"accessToken": "t"},
    }), 400, "VALIDATION_ERROR")  # fmt: skip
    assert ReviewSource.objects.unscoped().count() == 1


def test_source_list_read_update(api, owner, location, source):
    listed = api.get(f"/reputation/sources?locationId={location.id}").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == source["id"]
    change = {"name": "Renamed", "status": "paused", "credentials": {"accessToken": "new"}}
    response = patch_json(api, f"/reputation/sources/{source['id']}", change)
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Renamed" and response.json()["status"] == "paused"
    assert api.get(f"/reputation/sources/{source['id']}").json()["name"] == "Renamed"
    assert_error(patch_json(api, f"/reputation/sources/{source['id']}", {}), 400, "VALIDATION_ERROR")


# --- sync: emission rule 2 ------------------------------------------------------------------------------------------


def test_first_import_pages_through_and_is_silent(api, owner, profile, source):
    profile.reviews = [wire_review(f"r{i}", updated=f"2025-05-0{i}T10:00:00Z") for i in range(1, 6)]
    response = sync(api, source)
    assert response.status_code == 200, response.content
    assert response.json() == {"historical": True, "received": 5, "updated": 0, "unchanged": 0, "emitted": 0}
    gets = [r for r in profile.requests if r[0] == "GET"]
    assert [r[2].get("pageToken") for r in gets] == [None, "2", "4"]  # three pages of two
    assert all(r[3] == f"Bearer {ACCESS_TOKEN}" for r in gets)
    assert Review.objects.for_org(owner.organization).count() == 5
    assert review_events(owner.organization) == []
    assert api.get(f"/reputation/sources/{source['id']}").json()["importedAt"] is not None


def test_live_sync_with_seven_changes_emits_the_five_most_recent(api, owner, profile, source):
    profile.reviews = [wire_review("old1"), wire_review("old2"), wire_review("old3")]
    sync(api, source)
    # Seven changes: two reviews edited, five new; two of them share the latest updateTime (then review id decides).
    profile.reviews = [
        wire_review("old1", comment="Edited", updated="2025-06-01T10:00:00Z"),
        wire_review("old2", stars=2, updated="2025-06-03T10:00:00Z"),
        wire_review("old3"),
        wire_review("new-a", updated="2025-06-02T10:00:00Z"),
        wire_review("new-b", updated="2025-06-07T10:00:00Z"),
        wire_review("new-c", updated="2025-06-07T10:00:00Z"),
        wire_review("new-d", updated="2025-06-05T10:00:00Z"),
        wire_review("new-e", updated="2025-06-04T10:00:00Z"),
    ]
    response = sync(api, source)
    assert response.json() == {"historical": False, "received": 5, "updated": 2, "unchanged": 1, "emitted": 5}
    events = review_events(owner.organization)
    reviews = {str(r.id): r.provider_review_id for r in Review.objects.for_org(owner.organization)}
    emitted = {(e.type, reviews[e.data["reviewId"]]) for e in events}
    assert emitted == {
        ("reputation_review.received", "new-c"),
        ("reputation_review.received", "new-b"),
        ("reputation_review.received", "new-d"),
        ("reputation_review.received", "new-e"),
        ("reputation_review.updated", "old2"),
    }
    # The other two are stored, silently.
    assert Review.objects.for_org(owner.organization).get(provider_review_id="old1").comment == "Edited"
    assert Review.objects.for_org(owner.organization).filter(provider_review_id="new-a").exists()
    # Event data: ids, rating, location, source; never the text or the reviewer's name.
    for event in events:
        assert set(event.data) == {"reviewId", "sourceId", "locationId", "provider", "rating"}
        text = json.dumps(event.data)
        assert "Great care" not in text and "Ann Reviewer" not in text
    assert {e.data["rating"] for e in events} == {5, 2}
    assert {e.data["locationId"] for e in events} == {source["locationId"]}


def test_replaying_a_version_emits_nothing_and_an_update_emits_updated(api, owner, profile, source):
    profile.reviews = [wire_review("r1")]
    sync(api, source)
    profile.reviews = [wire_review("r1"), wire_review("r2", updated="2025-06-01T00:00:00Z")]
    assert sync(api, source).json()["emitted"] == 1
    assert sync(api, source).json() == {"historical": False, "received": 0, "updated": 0, "unchanged": 2,
                                        "emitted": 0}  # fmt: skip
    assert tasks.sync_source(source["id"]) == {"ok": True, "emitted": 0}  # the beat's task: the same replay
    assert [e.type for e in review_events(owner.organization)] == ["reputation_review.received"]
    profile.reviews = [wire_review("r1"), wire_review("r2", stars=1, comment="Changed my mind",
                                                      updated="2025-06-02T00:00:00Z")]  # fmt: skip
    assert sync(api, source).json()["updated"] == 1
    types = [e.type for e in review_events(owner.organization)]
    assert types == ["reputation_review.received", "reputation_review.updated"]
    detail = api.get("/reputation/reviews?rating=1").json()["items"][0]
    assert detail["comment"] == "Changed my mind" and detail["reviewerName"] == "Ann Reviewer"


def test_each_location_has_its_own_five(api, owner, profile, location, source):
    from tests.factories import LocationFactory

    other = make_source(api, LocationFactory(organization=owner.organization), locationRef="other-place")
    profile.reviews = []
    sync(api, source)
    tasks.sync_source(other["id"])  # the other place answers 404 on the local server: recorded, not raised
    assert ReviewSource.objects.for_org(owner.organization).get(id=other["id"]).last_sync_error == "HTTP_404"
    profile.reviews = [wire_review(f"n{i}", updated=f"2025-07-0{i}T00:00:00Z") for i in range(1, 8)]
    assert sync(api, source).json()["emitted"] == 5


def test_provider_failures(api, owner, profile, source):
    profile.list_status = 503
    body = assert_error(sync(api, source), 503, "REPUTATION_PROVIDER_UNAVAILABLE")
    assert body and int(sync(api, source)["Retry-After"]) >= 1
    assert api.get(f"/reputation/sources/{source['id']}").json()["lastSyncError"] == "PROVIDER_UNAVAILABLE"
    profile.list_status = 401
    body = assert_error(sync(api, source), 409, "REPUTATION_SOURCE_REFUSED")
    assert body["details"] == {"providerCode": "HTTP_401"}
    assert not Review.objects.unscoped().exists()
    assert api.get(f"/reputation/sources/{source['id']}").json()["importedAt"] is None
    patch_json(api, f"/reputation/sources/{source['id']}", {"status": "paused"})
    assert_error(sync(api, source), 409, "REPUTATION_SOURCE_PAUSED")


def test_sandbox_transport_contacts_nothing(api, owner, source):
    response = sync(api, source)
    assert response.status_code == 200 and response.json()["received"] == 3
    assert tasks.sync_all() == 1
    assert Review.objects.for_org(owner.organization).count() == 3
