"""GET /settings/practice/setup-status reads website, emailDomains and pendingAgreements from the areas themselves
(leadAds: tests/leadads/test_connections.py); conversions stays not offered. Another practice's data never counts."""

import json

import pytest

from tests.agreements.conftest import seeded
from tests.conversations.conftest import connect
from tests.sites.conftest import make_capture_form, make_site, patch_json, site_path

pytestmark = pytest.mark.usefixtures("clock")
SETUP_STATUS = "/settings/practice/setup-status"


def status(member) -> dict:
    response = member.api_client().get(SETUP_STATUS)
    assert response.status_code == 200, response.content
    return response.json()


def guide(body: dict) -> dict:
    return {step["key"]: (step["done"], step["available"]) for step in body["guide"]}


def test_a_website_with_a_domain_and_a_usable_form_is_configured(owner, outsider):
    api = owner.api_client()
    form = make_capture_form(api)
    make_site(outsider.api_client(), formIds=[make_capture_form(outsider.api_client())["id"]])  # not ours
    bare = make_site(api, name="No forms yet")
    assert status(owner)["website"] == {"available": True, "configured": False}

    patch_json(api, site_path(bare), {"allowedDomains": []})
    site = make_site(api, name="Domainless", allowedDomains=[], formIds=[form["id"]])
    assert status(owner)["website"]["configured"] is False  # a form but no domain

    assert patch_json(api, site_path(site), {"allowedDomains": ["smile-dental.example"]}).status_code == 200
    body = status(owner)
    assert body["website"] == {"available": True, "configured": True}
    assert guide(body)["website"] == (True, True)

    assert api.post(site_path(site, "archive")).status_code in (200, 204)
    assert status(owner)["website"]["configured"] is False  # archived websites do not count


def test_an_active_email_connection_is_a_verified_sending_domain(owner, outsider):
    api = owner.api_client()
    made = connect(api, "email", "reception")
    theirs = connect(outsider.api_client(), "email", "front")
    outsider.api_client().patch(
        f"/settings/channel-connections/{theirs['id']}",
        json.dumps({"status": "active"}),
        content_type="application/json",
    )
    assert made["status"] == "pending"
    assert status(owner)["emailDomains"] == {"available": True, "configured": False}

    response = api.patch(
        f"/settings/channel-connections/{made['id']}", json.dumps({"status": "active"}), content_type="application/json"
    )
    assert response.status_code == 200, response.content

    body = status(owner)
    assert body["emailDomains"] == {"available": True, "configured": True}
    assert guide(body)["email_domains"] == (True, True)
    assert body["conversions"] == {"available": False, "configured": False}
    assert guide(body)["conversions"] == (False, False)


def test_pending_agreements_empty_once_the_owner_accepted_them(owner, outsider):
    terms, dpa = seeded("terms"), seeded("data_processing")
    outsider.session_client().generic("POST", f"/agreements/{terms.id}/accept")  # not ours
    assert [item["id"] for item in status(owner)["pendingAgreements"]["items"]] == [str(terms.id), str(dpa.id)]

    session = owner.session_client()
    session.generic("POST", f"/agreements/{terms.id}/accept")
    body = status(owner)
    assert body["pendingAgreements"] == {
        "available": True,
        "items": [{"id": str(dpa.id), "kind": "data_processing", "version": "2025-06", "title": dpa.title}],
    }
    assert guide(body)["agreements"] == (False, True)

    session.generic("POST", f"/agreements/{dpa.id}/accept")
    body = status(owner)
    assert body["pendingAgreements"] == {"available": True, "items": []}
    assert guide(body)["agreements"] == (True, True)
