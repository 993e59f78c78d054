"""Another practice's connections and submissions: 404 on every route with an id in the path, 400 for an id in the
query or body, invisible in lists; nothing changes."""

import json

import pytest

from apps.leadads.models import LeadAdConnection, LeadAdSubmission
from tests.helpers import assert_error
from tests.leadads.conftest import (
    CONNECTIONS,
    SEARCH,
    SUBMISSIONS,
    post_json,
    process_all,
    search_body,
)


@pytest.fixture
def theirs(client, search, owner):
    """The owner's search-ads connection and a submission needing review (a test lead)."""
    post_json(client, SEARCH + search["routingToken"], search_body(search["googleKey"], is_test=True))
    process_all()
    return search, LeadAdSubmission.objects.for_org(owner.organization).get()


def test_every_route_with_an_id_answers_404_to_another_practice(outsider, owner, theirs):
    connection, submission = theirs
    api = outsider.api_client()
    item = f"{CONNECTIONS}/{connection['id']}"
    assert_error(api.get(item), 404, "NOT_FOUND")
    assert_error(api.patch(item, json.dumps({"name": "Mine"}), content_type="application/json"), 404, "NOT_FOUND")
    assert_error(api.delete(item), 404, "NOT_FOUND")
    assert_error(api.get(f"{SUBMISSIONS}/{submission.id}"), 404, "NOT_FOUND")
    assert_error(post_json(api, f"{SUBMISSIONS}/{submission.id}/resolve", {"action": "dismiss"}), 404, "NOT_FOUND")
    row = LeadAdConnection.objects.for_org(owner.organization).get()
    assert (row.name, row.health) == (connection["name"], "healthy")
    assert LeadAdSubmission.objects.for_org(owner.organization).get().status == "needs_review"


def test_lists_show_only_the_practices_own(outsider, theirs):
    api = outsider.api_client()
    assert api.get(CONNECTIONS).json()["total"] == 0
    assert api.get(SUBMISSIONS).json()["total"] == 0


def test_another_practices_connection_in_the_query_is_400(outsider, theirs):
    connection, _ = theirs
    refused = assert_error(outsider.api_client().get(f"{SUBMISSIONS}?connectionId={connection['id']}"), 400,
                           "VALIDATION_ERROR")  # fmt: skip
    assert refused["details"]["fields"] == {"connectionId": ["does not exist in this practice"]}


def test_the_own_connection_filter_works(api, theirs):
    connection, submission = theirs
    listed = api.get(f"{SUBMISSIONS}?connectionId={connection['id']}").json()
    assert [item["id"] for item in listed["items"]] == [str(submission.id)]


def test_malformed_ids_are_400(api):
    assert_error(api.get(f"{CONNECTIONS}/not-a-uuid"), 400, "VALIDATION_ERROR")
    assert_error(api.get(f"{SUBMISSIONS}/not-a-uuid"), 400, "VALIDATION_ERROR")


def test_a_routing_token_reaches_only_its_own_connection(client, outsider, owner, theirs):
    from tests.leadads.conftest import make_connection

    others = make_connection(outsider.api_client(), "search_ads", externalId="999-999-9999")
    # The owner's google_key under the outsider's routing token: refused, nothing stored for either.
    response = post_json(client, SEARCH + others["routingToken"], search_body(theirs[0]["googleKey"], lead_id="x"))
    assert_error(response, 401, "LEAD_AD_KEY_INVALID")
    assert not LeadAdSubmission.objects.for_org(outsider.organization).exists()
