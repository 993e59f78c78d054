"""Lead-ad connections in settings: create (secrets shown once, encrypted or hashed at rest), validation, one practice
per page, update and regeneration, disconnect with lead_ad_connection.health_changed, permissions and scopes, and the
setup status's leadAds area."""

import json

import pytest

from apps.leadads.models import LeadAdConnection
from apps.patients.models import LeadSource
from tests.factories import LeadSourceFactory, LocationFactory
from tests.helpers import assert_error
from tests.leadads.conftest import (
    ADVERTISER_ID,
    CONNECTIONS,
    PAGE_ID,
    PAGE_TOKEN,
    lead_events,
    make_connection,
    patch_json,
    post_json,
)

HEALTH = ("lead_ad_connection.health_changed",)


def test_a_social_connection_keeps_its_page_token_encrypted_and_never_returns_it(api, owner, meta):
    assert meta["platform"] == "meta_platform" and meta["externalId"] == PAGE_ID
    assert meta["hasPageToken"] is True and meta["health"] == "healthy"
    assert meta["callbackUrl"].endswith("/webhooks/lead-ads/meta-platform")
    assert meta["routingToken"].startswith("lat_") and meta["googleKey"] is None
    assert PAGE_TOKEN not in json.dumps(meta)
    row = LeadAdConnection.objects.for_org(owner.organization).get()
    assert row.page_token_encrypted and PAGE_TOKEN not in row.page_token_encrypted
    assert row.lead_source.name == "Social lead ads"
    for path in (CONNECTIONS, f"{CONNECTIONS}/{meta['id']}"):
        text = api.get(path).content.decode()
        assert PAGE_TOKEN not in text and meta["routingToken"] not in text


def test_list_filters_and_pages(api, meta, short_video, search, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        listed = api.get(CONNECTIONS).json()
    assert listed["total"] == 3 and listed["limit"] == 25 and listed["offset"] == 0
    assert [c["id"] for c in listed["items"]] == [search["id"], short_video["id"], meta["id"]]
    only = api.get(f"{CONNECTIONS}?platform=short_video").json()
    assert [c["id"] for c in only["items"]] == [short_video["id"]]
    assert_error(api.get(f"{CONNECTIONS}?platform=radio"), 400, "VALIDATION_ERROR")
    assert_error(api.get(f"{CONNECTIONS}?limit=0"), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    "body",
    [
        {"platform": "meta_platform", "name": "P", "externalId": "1"},  # no page token
        {"platform": "short_video", "name": "A", "externalId": "1", "pageAccessToken": "x"},
        {"platform": "search_ads", "name": "A", "externalId": "1", "authorizedUserId": "9"},
        {"platform": "radio", "name": "R", "externalId": "1"},
        {"platform": "short_video", "name": "  ", "externalId": "1"},
        {"platform": "short_video", "name": "A", "externalId": ""},
        {"platform": "short_video", "name": "A", "externalId": "x" * 65},
        {"platform": "short_video", "name": "A", "externalId": 12},
        {"platform": "short_video", "name": "A", "externalId": "1", "extra": True},
        {"platform": "short_video", "name": "A"},
    ],
)
def test_create_validation(api, owner, body):
    assert_error(post_json(api, CONNECTIONS, body), 400, "VALIDATION_ERROR")
    assert not LeadAdConnection.objects.for_org(owner.organization).exists()


def test_records_of_another_practice_in_the_body_are_400(api, owner, outsider):
    foreign_location = LocationFactory(organization=outsider.organization)
    foreign_source = LeadSourceFactory(organization=outsider.organization)
    for field, value in (("locationId", foreign_location.id), ("leadSourceId", foreign_source.id)):
        body = {"platform": "short_video", "name": "A", "externalId": "1", field: str(value)}
        refused = assert_error(post_json(api, CONNECTIONS, body), 400, "VALIDATION_ERROR")
        assert field in refused["details"]["fields"]
    assert not LeadAdConnection.objects.for_org(owner.organization).exists()


def test_defaults_apply_to_the_leads(api, owner):
    location = LocationFactory(organization=owner.organization)
    source = LeadSourceFactory(organization=owner.organization, name="Spring campaign")
    made = make_connection(api, "short_video", locationId=str(location.id), leadSourceId=str(source.id))
    assert (made["locationId"], made["leadSourceId"]) == (str(location.id), str(source.id))
    assert LeadSource.objects.for_org(owner.organization).filter(name="Short-video lead ads").count() == 0


def test_one_practice_per_page_while_connected(api, outsider, meta):
    refused = post_json(outsider.api_client(), CONNECTIONS, {"platform": "meta_platform", "name": "Theirs",
                        "externalId": PAGE_ID, "pageAccessToken": "t"})  # fmt: skip
    assert_error(refused, 409, "LEAD_AD_ALREADY_CONNECTED")
    api.delete(f"{CONNECTIONS}/{meta['id']}")
    again = post_json(outsider.api_client(), CONNECTIONS, {"platform": "meta_platform", "name": "Theirs",
                      "externalId": PAGE_ID, "pageAccessToken": "t"})  # fmt: skip
    assert again.status_code == 201


def test_update_and_regenerate_the_routing_token(api, owner, short_video):
    path = f"{CONNECTIONS}/{short_video['id']}"
    response = patch_json(api, path, {"name": "Renamed", "regenerateRoutingToken": True})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "Renamed" and body["routingToken"].startswith("lat_")
    assert body["routingToken"] != short_video["routingToken"] and body["googleKey"] is None
    assert api.get(path).json()["name"] == "Renamed"
    assert_error(patch_json(api, path, {}), 400, "VALIDATION_ERROR")
    assert_error(patch_json(api, path, {"regenerateGoogleKey": True}), 400, "VALIDATION_ERROR")
    assert_error(patch_json(api, path, {"pageAccessToken": "x"}), 400, "VALIDATION_ERROR")
    assert_error(patch_json(api, path, {"name": 5}), 400, "VALIDATION_ERROR")
    assert LeadAdConnection.objects.for_org(owner.organization).get().name == "Renamed"


def test_disconnect_wipes_credentials_and_emits_health_changed(api, owner, meta):
    response = api.delete(f"{CONNECTIONS}/{meta['id']}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["health"] == "disconnected" and body["hasPageToken"] is False and body["disconnectedAt"]
    row = LeadAdConnection.objects.for_org(owner.organization).get()
    assert row.page_token_encrypted == "" and row.google_key_digest == ""
    events = lead_events(owner.organization, types=HEALTH)
    assert [(e.data["previousHealth"], e.data["health"], e.actor_type) for e in events] == [
        ("healthy", "disconnected", "user")
    ]
    assert api.delete(f"{CONNECTIONS}/{meta['id']}").status_code == 200  # harmless again
    assert len(lead_events(owner.organization, types=HEALTH)) == 1
    assert_error(patch_json(api, f"{CONNECTIONS}/{meta['id']}", {"name": "x"}), 409, "LEAD_AD_CONNECTION_DISCONNECTED")


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_only_ads_managers_write(member_factory, owner, meta, role):
    member = member_factory(role=role, organization=owner.organization)
    client = member.api_client()
    assert client.get(CONNECTIONS).status_code == 200  # settings:read
    body = {"platform": "short_video", "name": "A", "externalId": ADVERTISER_ID}
    assert_error(post_json(client, CONNECTIONS, body), 403, "PERMISSION_DENIED")
    assert_error(patch_json(client, f"{CONNECTIONS}/{meta['id']}", {"name": "x"}), 403, "PERMISSION_DENIED")
    assert_error(client.delete(f"{CONNECTIONS}/{meta['id']}"), 403, "PERMISSION_DENIED")
    assert LeadAdConnection.objects.for_org(owner.organization).get().health == "healthy"


def test_clinical_roles_see_nothing(member_factory, owner, meta):
    nurse = member_factory(role="nurse", organization=owner.organization).api_client()
    assert_error(nurse.get(CONNECTIONS), 403, "PERMISSION_DENIED")
    assert_error(nurse.get("/lead-ads/submissions"), 403, "PERMISSION_DENIED")


def test_oauth_scopes_apply(owner, meta):
    from tests.oauth.tokens import bearer, mint

    read_only, _ = mint(owner, "settings.read")
    assert bearer(read_only).get(CONNECTIONS).status_code == 200
    body = {"platform": "short_video", "name": "A", "externalId": ADVERTISER_ID}
    assert_error(post_json(bearer(read_only), CONNECTIONS, body), 403, "INSUFFICIENT_SCOPE")
    patients_only, _ = mint(owner, "patients.read")
    assert_error(bearer(patients_only).get(CONNECTIONS), 403, "INSUFFICIENT_SCOPE")
    assert bearer(patients_only).get("/lead-ads/submissions").status_code == 200


def test_unauthenticated_is_401(client, db):
    assert client.get(CONNECTIONS).status_code == 401
    assert client.get("/lead-ads/submissions").status_code == 401


def test_setup_status_reads_lead_ads_from_the_connections(api, owner):
    status = api.get("/settings/practice/setup-status").json()
    assert status["leadAds"] == {"available": True, "configured": False}
    assert next(s for s in status["guide"] if s["key"] == "lead_ads") == {
        "key": "lead_ads", "title": "Connect lead ads", "done": False, "available": True,
    }  # fmt: skip
    made = make_connection(api, "short_video")
    assert api.get("/settings/practice/setup-status").json()["leadAds"] == {"available": True, "configured": True}
    api.delete(f"{CONNECTIONS}/{made['id']}")
    assert api.get("/settings/practice/setup-status").json()["leadAds"]["configured"] is False
