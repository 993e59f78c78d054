"""The public /r/{token} routes: config (opened), the hosted page for browsers, rating high vs low (review link or
private feedback), reviewed, status events on forward moves only, tokens valid / expired / tampered / unknown /
another practice's, the practice's buckets, the abuse screen, the 256 KiB cap and 503 when nothing can be stored."""

import json
from datetime import timedelta
from urllib.parse import urlencode

from django.db import OperationalError, connection
from django.utils import timezone

from apps.events.models import Event
from apps.reputation.models import Feedback, ReviewRequest
from tests.campaigns.conftest import connect, grant
from tests.factories import LocationFactory, PatientFactory
from tests.helpers import assert_error
from tests.reputation.conftest import REVIEW_URL, issue_request, make_source, patch_json, post_json

HTML = {"HTTP_ACCEPT": "text/html,application/xhtml+xml"}


def form(client, path, data):
    """A browser's form post (application/x-www-form-urlencoded)."""
    return client.post(path, urlencode(data), content_type="application/x-www-form-urlencoded", **HTML)


def statuses(organization):
    rows = Event.objects.for_org(organization).filter(type="reputation_request.status_changed")
    return [e.data["status"] for e in rows.order_by("created_at", "id")]


def rate(client, token, rating, comment=""):
    return post_json(client, f"/r/{token}/rating", {"rating": rating, "comment": comment})


def test_config_marks_opened_once(client, owner, link, location):
    request, token = link
    response = client.get(f"/r/{token}")
    assert response.status_code == 200, response.content
    assert response.json() == {"practiceName": owner.organization.name, "locationName": "High Street",
                               "question": "How was your visit?", "status": "opened", "rated": False}  # fmt: skip
    client.get(f"/r/{token}")
    assert statuses(owner.organization) == ["opened"]
    event = Event.objects.for_org(owner.organization).get(type="reputation_request.status_changed")
    assert event.data["requestId"] == str(request.id) and token not in json.dumps(event.data)


def test_high_rating_points_to_the_review_site(api, client, owner, link):
    request, token = link
    client.get(f"/r/{token}")
    response = rate(client, token, 5, "Lovely")
    assert response.status_code == 200, response.content
    assert response.json() == {"outcome": "review", "rating": 5, "reviewUrl": REVIEW_URL}
    assert not Feedback.objects.unscoped().exists()
    reviewed = post_json(client, f"/r/{token}/reviewed")
    assert reviewed.status_code == 200 and reviewed.json()["reviewUrl"] == REVIEW_URL
    assert post_json(client, f"/r/{token}/reviewed").status_code == 200  # once: no second event
    assert statuses(owner.organization) == ["opened", "rated", "reviewed"]
    detail = api.get(f"/reputation/requests/{request.id}").json()
    assert detail["status"] == "reviewed" and detail["rating"] == 5 and detail["reviewedAt"]


def test_low_rating_becomes_private_feedback(api, client, owner, link):
    request, token = link
    response = rate(client, token, 2, "The wait was too long")
    assert response.json() == {"outcome": "feedback", "rating": 2, "reviewUrl": None}
    assert statuses(owner.organization) == ["rated"]  # sent → rated in one forward move
    event = Event.objects.for_org(owner.organization).get(type="reputation_feedback.received")
    assert event.data["rating"] == 2 and event.data["requestId"] == str(request.id)
    assert "wait" not in json.dumps(event.data)
    listed = api.get("/reputation/feedback").json()
    assert listed["total"] == 1 and listed["items"][0]["comment"] == "The wait was too long"
    assert api.get(f"/reputation/feedback/{listed['items'][0]['id']}").json()["rating"] == 2
    # Rating again changes nothing; reviewed is not offered.
    assert rate(client, token, 5).json() == {"outcome": "feedback", "rating": 2, "reviewUrl": None}
    assert_error(post_json(client, f"/r/{token}/reviewed"), 409, "REPUTATION_REVIEW_NOT_INVITED")
    assert Feedback.objects.for_org(owner.organization).count() == 1
    assert statuses(owner.organization) == ["rated"]


def test_threshold_is_a_practice_setting(api, client, owner, link):
    _, token = link
    assert api.get("/reputation/settings").json()["ratingThreshold"] == 4
    response = patch_json(api, "/reputation/settings", {"ratingThreshold": 5, "question": "How did we do today?"})
    assert response.status_code == 200 and response.json()["ratingThreshold"] == 5
    assert client.get(f"/r/{token}").json()["question"] == "How did we do today?"
    assert rate(client, token, 4).json()["outcome"] == "feedback"
    assert_error(patch_json(api, "/reputation/settings", {"ratingThreshold": 0}), 400, "VALIDATION_ERROR")


def test_rating_validation(client, owner, link):
    _, token = link
    for body in ({}, {"rating": 0}, {"rating": 6}, {"rating": "5"}, {"rating": 5, "comment": 3}, {"rating": 5, "x": 1}):
        assert_error(post_json(client, f"/r/{token}/rating", body), 400, "VALIDATION_ERROR")
    assert_error(post_json(client, f"/r/{token}/reviewed"), 409, "REPUTATION_REVIEW_NOT_INVITED")
    assert ReviewRequest.objects.for_org(owner.organization).get().status == "sent"


def test_bad_tokens_are_the_same_404(client, owner, outsider, link):
    request, token = link
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    for bad in (tampered, "rr_unknown", "nonsense", "rr_" + "a" * 100, token + "x"):
        assert_error(client.get(f"/r/{bad}"), 404, "NOT_FOUND")
        assert_error(rate(client, bad, 5), 404, "NOT_FOUND")
        assert_error(post_json(client, f"/r/{bad}/reviewed"), 404, "NOT_FOUND")
    page = client.get(f"/r/{tampered}", **HTML)
    assert page.status_code == 404 and "This link is not valid" in page.content.decode()
    ReviewRequest.objects.for_org(owner.organization).filter(id=request.id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert_error(client.get(f"/r/{token}"), 404, "NOT_FOUND")
    assert_error(rate(client, token, 5), 404, "NOT_FOUND")
    assert ReviewRequest.objects.for_org(owner.organization).get().status == "sent"
    assert statuses(owner.organization) == []


def test_another_practices_token_shows_only_that_practice(client, owner, outsider, link):
    other_api = outsider.api_client()
    other_location = LocationFactory(organization=outsider.organization, name="Elm Road")
    make_source(other_api, other_location)
    connect(other_api, "sms", "+390299999999", {"accountSid": "AC" + "1" * 32, "authToken": "other"})
    patient = PatientFactory(organization=outsider.organization)
    grant(patient, "sms")
    _, other_token = issue_request(outsider, patient, other_location)
    assert client.get(f"/r/{other_token}").json()["locationName"] == "Elm Road"
    rate(client, other_token, 1, "Bad")
    assert not Feedback.objects.for_org(owner.organization).exists()
    assert owner.api_client().get("/reputation/feedback").json()["total"] == 0


def test_hosted_page_rates_and_goes_on_to_the_review_site(client, owner, link):
    _, token = link
    page = client.get(f"/r/{token}", **HTML)
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert "How was your visit?" in text and f'action="/r/{token}/page/rating"' in text
    assert "default-src 'none'" in page["Content-Security-Policy"] and page["Cache-Control"] == "no-store"
    missing = form(client, f"/r/{token}/page/rating", {"comment": "no stars"})
    assert missing.status_code == 400 and "Choose a rating" in missing.content.decode()
    thanks = form(client, f"/r/{token}/page/rating", {"rating": "5", "comment": ""})
    assert thanks.status_code == 200 and "Leave a public review" in thanks.content.decode()
    assert "https://search.google.com" in thanks["Content-Security-Policy"]
    go = form(client, f"/r/{token}/page/reviewed", {})
    assert go.status_code == 303 and go["Location"] == REVIEW_URL
    assert statuses(owner.organization) == ["opened", "rated", "reviewed"]


def test_hosted_page_low_rating(client, owner, link):
    _, token = link
    thanks = form(client, f"/r/{token}/page/rating", {"rating": "1", "comment": "Rude"})
    assert thanks.status_code == 200 and "privately" in thanks.content.decode()
    assert Feedback.objects.for_org(owner.organization).get().comment == "Rude"
    refused = form(client, f"/r/{token}/page/reviewed", {})
    assert refused.status_code == 409 and "privately" in refused.content.decode()
    again = client.get(f"/r/{token}", **HTML)
    assert "privately" in again.content.decode()


def test_buckets_per_practice(client, settings, owner, link, outsider):
    settings.SVC_REPUTATION_READ_BUCKET = (2, 0.001)
    settings.SVC_REPUTATION_WRITE_BUCKET = (1, 0.001)
    _, token = link
    assert client.get(f"/r/{token}").status_code == 200
    assert client.get(f"/r/{token}").status_code == 200
    limited = client.get(f"/r/{token}")
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert rate(client, token, 5).status_code == 200
    assert_error(post_json(client, f"/r/{token}/reviewed"), 429, "RATE_LIMITED")
    assert ReviewRequest.objects.for_org(owner.organization).get().status == "rated"
    # Unknown tokens never reach the practice's bucket.
    assert client.get("/r/rr_unknown").status_code == 404


def test_abuse_screen(client, settings, link):
    settings.SVC_PUBLIC_SCREEN_RATE = "2/m"
    _, token = link
    assert client.get("/r/rr_unknown").status_code == 404
    assert client.get(f"/r/{token}").status_code == 200
    assert client.get(f"/r/{token}").status_code == 429


def test_body_cap(client, owner, link):
    _, token = link
    big = json.dumps({"rating": 1, "comment": "x" * (256 * 1024)})
    response = client.post(f"/r/{token}/rating", big, content_type="application/json")
    assert response.status_code == 413
    assert not Feedback.objects.unscoped().exists()
    assert ReviewRequest.objects.for_org(owner.organization).get().status == "sent"


def test_rating_not_stored_answers_503(client, owner, link):
    _, token = link

    def refuse(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE")):
            raise OperationalError("storage outage")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        response = rate(client, token, 1, "Bad")
    assert_error(response, 503, "REPUTATION_NOT_STORED")
    assert int(response["Retry-After"]) >= 1
    assert not Feedback.objects.unscoped().exists()
    assert ReviewRequest.objects.for_org(owner.organization).get().status == "sent"
    assert statuses(owner.organization) == []
