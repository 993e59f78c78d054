"""Another practice's sources, reviews, requests and feedback are 404 and absent from its lists; who may read and
write (reputation:read / reputation:update, settings:update for sources and settings); erasure and merge."""

import pytest

from apps.reputation.models import Feedback, Review, ReviewRequest, ReviewSource
from tests.helpers import assert_error
from tests.reputation.conftest import make_source, patch_json, post_json


@pytest.fixture
def records(api, client, owner, link, source):
    """One of each record in the owner's practice."""
    post_json(api, f"/reputation/sources/{source['id']}/sync")  # sandbox reviews
    request, token = link
    post_json(client, f"/r/{token}/rating", {"rating": 1, "comment": "Cold room"})
    return {
        "source": source["id"],
        "review": str(Review.objects.for_org(owner.organization).first().id),
        "request": str(request.id),
        "feedback": str(Feedback.objects.for_org(owner.organization).get().id),
    }


def test_another_practice_sees_nothing(outsider, owner, records):
    other = outsider.api_client()
    for path in (
        f"/reputation/sources/{records['source']}",
        f"/reputation/reviews/{records['review']}",
        f"/reputation/requests/{records['request']}",
        f"/reputation/feedback/{records['feedback']}",
    ):
        assert_error(other.get(path), 404, "NOT_FOUND")
    assert_error(post_json(other, f"/reputation/sources/{records['source']}/sync"), 404, "NOT_FOUND")
    assert_error(post_json(other, f"/reputation/reviews/{records['review']}/reply", {"comment": "Hi"}), 404,
                 "NOT_FOUND")  # fmt: skip
    assert_error(patch_json(other, f"/reputation/sources/{records['source']}", {"name": "Mine"}), 404, "NOT_FOUND")
    for path in ("/reputation/sources", "/reputation/reviews", "/reputation/requests", "/reputation/feedback"):
        assert other.get(path).json()["total"] == 0
    assert ReviewSource.objects.for_org(owner.organization).get(id=records["source"]).name != "Mine"
    assert Review.objects.for_org(owner.organization).get(id=records["review"]).reply_status == "none"


@pytest.mark.parametrize(
    ("role", "reads", "replies", "connects"),
    [
        ("owner", True, True, True),
        ("manager", True, True, True),
        ("front_desk", True, True, False),
        ("analyst", True, False, False),
        ("telesales", False, False, False),
        ("dentist", False, False, False),
    ],
)
def test_roles(member_factory, owner, records, location, role, reads, replies, connects):
    member = member_factory(role=role, organization=owner.organization).api_client()
    for path in ("/reputation/reviews", "/reputation/feedback", "/reputation/requests", "/reputation/sources",
                 "/reputation/settings", f"/reputation/reviews/{records['review']}"):  # fmt: skip
        response = member.get(path)
        assert response.status_code == (200 if reads else 403), (path, response.content)
    reply = post_json(member, f"/reputation/reviews/{records['review']}/reply", {"comment": "Thanks"})
    assert reply.status_code == (202 if replies else 403)
    if not replies:
        assert Review.objects.for_org(owner.organization).get(id=records["review"]).reply_status == "none"
    from tests.factories import LocationFactory

    other_location = LocationFactory(organization=owner.organization)
    body = {"locationId": str(other_location.id), "name": "G", "accountRef": "9", "locationRef": "9",
            "reviewUrl": "https://example.com/r", "credentials": {"accessToken": "t"}}  # fmt: skip
    created = post_json(member, "/reputation/sources", body)
    assert created.status_code == (201 if connects else 403)
    changed = patch_json(member, "/reputation/settings", {"ratingThreshold": 3})
    assert changed.status_code == (200 if connects else 403)
    if not connects:
        assert_error(changed, 403, "PERMISSION_DENIED")
        assert not ReviewSource.objects.for_org(owner.organization).filter(location=other_location).exists()


def test_scope_area_is_reputation(owner, records):
    from apps.reputation.api import views

    for view in (views.ReviewListView, views.SourceListView, views.RequestListView, views.FeedbackListView):
        assert view.scope_area == "reputation"


def test_erasure_removes_requests_and_feedback(api, client, owner, records, link):
    _, token = link
    patient_id = ReviewRequest.objects.for_org(owner.organization).get(id=records["request"]).patient_id
    assert api.delete(f"/patients/{patient_id}").status_code == 200
    assert not ReviewRequest.objects.for_org(owner.organization).exists()
    assert not Feedback.objects.for_org(owner.organization).exists()
    assert_error(client.get(f"/r/{token}"), 404, "NOT_FOUND")
    assert Review.objects.for_org(owner.organization).exists()  # the platform's reviews are not the patient's


def test_merge_moves_requests_and_feedback(api, owner, records):
    from tests.factories import PatientFactory

    duplicate = ReviewRequest.objects.for_org(owner.organization).get(id=records["request"]).patient_id
    survivor = PatientFactory(organization=owner.organization)
    merged = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate)})
    assert merged.status_code == 200, merged.content
    assert api.get(f"/reputation/requests?patientId={survivor.id}").json()["total"] == 1
    assert api.get(f"/reputation/feedback?patientId={survivor.id}").json()["total"] == 1


def test_sources_of_another_location_stay_apart(api, owner, location):
    from tests.factories import LocationFactory

    second = make_source(api, LocationFactory(organization=owner.organization), locationRef="second")
    assert api.get(f"/reputation/sources?locationId={location.id}").json()["total"] == 0
    assert api.get(f"/reputation/sources?locationId={second['locationId']}").json()["total"] == 1
