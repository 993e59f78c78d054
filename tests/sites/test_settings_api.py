"""Website settings (/settings/sites): create and its validation, list paging and filters, read, PATCH, archive,
site-key regeneration, the form-discovery review list with link and dismiss, role permissions and tenancy."""

import uuid

import pytest
from django.conf import settings
from django.test import Client

from apps.sites.models import FormDiscovery, Website, WebsiteForm
from tests.helpers import assert_error
from tests.sites.conftest import (
    CAPTURE_FORMS,
    PAGE,
    SITES,
    a_report,
    make_capture_form,
    make_site,
    patch_json,
    post_json,
    report,
    site_path,
    snapshot,
)

SITE_KEYS = {
    "id",
    "name",
    "siteKey",
    "status",
    "allowedDomains",
    "formIds",
    "configUrl",
    "discoveryUrl",
    "newDiscoveries",
    "archivedAt",
    "createdAt",
    "updatedAt",
}
DISCOVERY_KEYS = {
    "id",
    "websiteId",
    "pageUrl",
    "formKey",
    "fields",
    "status",
    "linkedFormId",
    "firstSeenAt",
    "lastSeenAt",
    "timesSeen",
}


def assert_field_error(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    return body


def discoveries(api: Client, site: dict, query: str = "") -> dict:
    response = api.get(site_path(site, "form-discoveries") + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.content
    return response.json()


def discovered(site: dict, *pages: str) -> list[dict]:
    for page in pages or (PAGE,):
        assert report(site, a_report(page)).status_code == 202
    return list(FormDiscovery.objects.unscoped().filter(website_id=site["id"]).order_by("first_seen_at", "id").values())


# --- create ---------------------------------------------------------------------------------------------------


def test_create_answers_the_site_with_a_fresh_public_key(owner, api, capture_form):
    response = post_json(
        api,
        SITES,
        {
            "name": "Main website",
            "allowedDomains": ["Smile-Dental.example.", "www.other-clinic.example", "smile-dental.example"],
            "formIds": [capture_form["id"]],
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == SITE_KEYS
    assert body["name"] == "Main website"
    assert body["status"] == "active"
    assert body["siteKey"].startswith("site_") and len(body["siteKey"]) >= 37
    # Normalized (lower case, no trailing dot) and without repeats.
    assert body["allowedDomains"] == ["smile-dental.example", "www.other-clinic.example"]
    assert body["formIds"] == [capture_form["id"]]
    assert body["configUrl"] == f"{settings.SVC_BASE_URL}/site/{body['siteKey']}/config"
    assert body["discoveryUrl"] == f"{settings.SVC_BASE_URL}/site/{body['siteKey']}/forms"
    assert body["newDiscoveries"] == 0
    assert body["archivedAt"] is None
    row = Website.objects.for_org(owner.organization).get(id=body["id"])
    assert row.created_by_id == owner.user.id
    assert list(row.forms.values_list("id", flat=True)) == [uuid.UUID(capture_form["id"])]


def test_site_keys_differ_and_international_domains_are_stored_in_idna(api):
    first = make_site(api, allowedDomains=["zahnärzte.example"])
    second = make_site(api, allowedDomains=[])

    assert first["siteKey"] != second["siteKey"]
    assert first["allowedDomains"] == ["xn--zahnrzte-3za.example"]
    assert second["allowedDomains"] == []
    assert second["formIds"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "Site", "colour": "blue"}, "colour"),
        ({"name": "Site", "siteKey": "site_mine"}, "siteKey"),
        ({"name": "Site", "allowedDomains": "example.com"}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["https://example.com"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["example.com/contact"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["example.com:8080"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["*.example.com"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["com"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["exa mple.com"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": ["-bad-.example"]}, "allowedDomains"),
        ({"name": "Site", "allowedDomains": [f"d{i}.example" for i in range(51)]}, "allowedDomains"),
        ({"name": "Site", "formIds": ["not-a-uuid"]}, "formIds"),
        ({"name": "Site", "formIds": [str(uuid.uuid4())]}, "formIds"),
        ({"name": "Site", "formIds": "abc"}, "formIds"),
    ],
)
def test_create_validation_names_the_field(owner, api, body, field):
    before = snapshot(owner.organization)

    assert_field_error(post_json(api, SITES, body), field)

    assert snapshot(owner.organization) == before


def test_create_refuses_an_empty_body_and_bad_json(owner, api):
    assert_field_error(api.post(SITES, "", content_type="application/json"), "body")
    assert_field_error(api.post(SITES, "{nope", content_type="application/json"), "body")
    assert Website.objects.for_org(owner.organization).count() == 0


@pytest.mark.parametrize("kind", ["signed", "calls", "archived"])
def test_form_ids_must_be_public_form_submission_forms_not_archived(owner, api, kind):
    if kind == "signed":
        form = make_capture_form(api, deliveryMode="signed")
    elif kind == "calls":
        form = make_capture_form(api, kind="incoming_calls")
    else:
        form = make_capture_form(api)
        assert post_json(api, f"{CAPTURE_FORMS}/{form['id']}/archive").status_code == 200
    before = snapshot(owner.organization)

    body = assert_field_error(post_json(api, SITES, {"name": "Site", "formIds": [form["id"]]}), "formIds")

    assert form["id"] in body["message"]
    assert snapshot(owner.organization) == before


def test_another_practices_capture_form_is_a_400(owner, outsider, api):
    theirs = make_capture_form(outsider.api_client())
    before = snapshot(owner.organization)

    assert_field_error(post_json(api, SITES, {"name": "Site", "formIds": [theirs["id"]]}), "formIds")

    assert snapshot(owner.organization) == before


def test_a_paused_form_may_be_linked(api):
    form = make_capture_form(api)
    assert post_json(api, f"{CAPTURE_FORMS}/{form['id']}/pause").status_code == 200

    assert make_site(api, formIds=[form["id"]])["formIds"] == [form["id"]]


# --- list -----------------------------------------------------------------------------------------------------


def test_list_pages_newest_first_and_leaves_archived_out(api, django_assert_max_num_queries):
    sites = [make_site(api, name=f"Site {i}") for i in range(4)]
    assert post_json(api, site_path(sites[0], "archive")).status_code == 200

    with django_assert_max_num_queries(12):
        response = api.get(f"{SITES}?limit=2&offset=1")

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items", "total", "limit", "offset"}
    assert body["total"] == 3
    assert (body["limit"], body["offset"]) == (2, 1)
    assert [item["id"] for item in body["items"]] == [sites[2]["id"], sites[1]["id"]]
    assert all(set(item) == SITE_KEYS for item in body["items"])

    archived = api.get(f"{SITES}?status=archived").json()
    assert [item["id"] for item in archived["items"]] == [sites[0]["id"]]
    everything = api.get(f"{SITES}?includeArchived=true").json()
    assert everything["total"] == 4


def test_list_counts_new_discoveries_and_names_forms(api, site, capture_form):
    discovered(site, PAGE, PAGE + "/other")

    item = api.get(SITES).json()["items"][0]

    assert item["newDiscoveries"] == 2
    assert item["formIds"] == [capture_form["id"]]


@pytest.mark.parametrize(
    ("query", "field"),
    [("limit=0", "limit"), ("limit=101", "limit"), ("offset=-1", "offset"), ("status=gone", "status"), ("x=1", "x")],
)
def test_list_query_validation(api, query, field):
    assert_field_error(api.get(f"{SITES}?{query}"), field)


# --- read, update, archive, regenerate ------------------------------------------------------------------------


def test_read_one(api, site):
    response = api.get(site_path(site))

    assert response.status_code == 200
    assert response.json() == site


def test_patch_name_domains_and_forms(owner, api, site, capture_form):
    other = make_capture_form(api, name="Implants landing page")

    response = patch_json(
        api, site_path(site), {"name": "New site", "allowedDomains": ["new-site.example"], "formIds": [other["id"]]}
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "New site"
    assert body["allowedDomains"] == ["new-site.example"]
    assert body["formIds"] == [other["id"]]
    assert body["siteKey"] == site["siteKey"]
    assert WebsiteForm.objects.for_org(owner.organization).count() == 1

    # Fields left out stay as they are; an empty list empties.
    body = patch_json(api, site_path(site), {"formIds": []}).json()
    assert (body["name"], body["formIds"], body["allowedDomains"]) == ("New site", [], ["new-site.example"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"allowedDomains": ["http://x.example"]}, "allowedDomains"),
        ({"formIds": [str(uuid.uuid4())]}, "formIds"),
        ({"status": "archived"}, "status"),
    ],
)
def test_patch_validation_changes_nothing(owner, api, site, body, field):
    before = snapshot(owner.organization)

    assert_field_error(patch_json(api, site_path(site), body), field)

    assert snapshot(owner.organization) == before


def test_archive_is_final_and_retires_the_key(owner, api, site):
    response = post_json(api, site_path(site, "archive"))

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "archived"
    assert body["archivedAt"] is not None
    assert_error(Client().get(f"/site/{site['siteKey']}/config"), 404, "NOT_FOUND")
    before = snapshot(owner.organization)
    assert_error(post_json(api, site_path(site, "archive")), 409, "SITE_ARCHIVED")
    assert_error(patch_json(api, site_path(site), {"name": "Again"}), 409, "SITE_ARCHIVED")
    assert_error(post_json(api, site_path(site, "regenerate-key")), 409, "SITE_ARCHIVED")
    assert snapshot(owner.organization) == before
    # Still readable.
    assert api.get(site_path(site)).json()["status"] == "archived"


def test_regenerate_key_stops_the_old_key_at_once(api, site):
    response = post_json(api, site_path(site, "regenerate-key"))

    assert response.status_code == 200, response.content
    new_key = response.json()["siteKey"]
    assert new_key != site["siteKey"] and new_key.startswith("site_")
    assert_error(Client().get(f"/site/{site['siteKey']}/config"), 404, "NOT_FOUND")
    assert Client().get(f"/site/{new_key}/config").status_code == 200


# --- form discoveries -----------------------------------------------------------------------------------------


def test_discovery_list_pages_and_filters(api, site):
    rows = discovered(site, PAGE, PAGE + "/a", PAGE + "/b")
    FormDiscovery.objects.unscoped().filter(id=rows[0]["id"]).update(status="dismissed")

    body = discoveries(api, site, "limit=1")
    assert set(body) == {"items", "total", "limit", "offset"}
    assert body["total"] == 3
    assert [item["pageUrl"] for item in body["items"]] == [PAGE + "/b"]  # most recently seen first
    item = body["items"][0]
    assert set(item) == DISCOVERY_KEYS
    assert item["websiteId"] == site["id"]
    assert item["formKey"] == "contact-form"
    assert item["fields"] == [
        {"name": "your-name", "type": "text", "label": "Your name"},
        {"name": "your-email", "type": "email", "label": "Email address"},
    ]
    assert (item["status"], item["linkedFormId"], item["timesSeen"]) == ("new", None, 1)

    new = discoveries(api, site, "status=new")
    assert new["total"] == 2
    assert {item["pageUrl"] for item in new["items"]} == {PAGE + "/a", PAGE + "/b"}
    assert discoveries(api, site, "status=dismissed")["total"] == 1
    assert_field_error(api.get(site_path(site, "form-discoveries") + "?status=maybe"), "status")


def test_link_marks_the_discovery_and_adds_the_form_to_the_site(owner, api):
    site = make_site(api)
    form = make_capture_form(api, name="Contact page")
    [row] = discovered(site)

    response = post_json(api, site_path(site, f"form-discoveries/{row['id']}/link"), {"captureFormId": form["id"]})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["linkedFormId"]) == ("linked", form["id"])
    assert api.get(site_path(site)).json()["formIds"] == [form["id"]]
    config = Client().get(f"/site/{site['siteKey']}/config").json()
    assert [item["id"] for item in config["forms"]] == [form["id"]]
    # Linking again is harmless: the site keeps one link.
    assert (
        post_json(api, site_path(site, f"form-discoveries/{row['id']}/link"), {"captureFormId": form["id"]}).status_code
        == 200
    )
    assert WebsiteForm.objects.for_org(owner.organization).count() == 1


def test_dismiss_takes_the_discovery_off_the_list_without_touching_forms(api, site, capture_form):
    [row] = discovered(site)

    response = post_json(api, site_path(site, f"form-discoveries/{row['id']}/dismiss"))

    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["linkedFormId"]) == ("dismissed", None)
    assert api.get(site_path(site)).json()["formIds"] == [capture_form["id"]]
    assert api.get(site_path(site)).json()["newDiscoveries"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "captureFormId"),
        ({"captureFormId": "nope"}, "captureFormId"),
        ({"captureFormId": str(uuid.uuid4())}, "captureFormId"),
        ({"captureFormId": None}, "captureFormId"),
        ({"captureFormId": str(uuid.uuid4()), "extra": 1}, "extra"),
    ],
)
def test_link_validation_changes_nothing(owner, api, site, body, field):
    [row] = discovered(site)
    before = snapshot(owner.organization)

    assert_field_error(post_json(api, site_path(site, f"form-discoveries/{row['id']}/link"), body), field)

    assert snapshot(owner.organization) == before


def test_link_refuses_a_signed_form_and_another_practices_form(owner, outsider, api, site):
    [row] = discovered(site)
    signed = make_capture_form(api, deliveryMode="signed")
    theirs = make_capture_form(outsider.api_client())
    before = snapshot(owner.organization)

    for form in (signed, theirs):
        response = post_json(api, site_path(site, f"form-discoveries/{row['id']}/link"), {"captureFormId": form["id"]})
        assert_field_error(response, "captureFormId")

    assert snapshot(owner.organization) == before


def test_a_discovery_of_another_site_is_404_under_this_one(owner, api, site):
    other = make_site(api, name="Second site")
    [row] = discovered(other)
    before = snapshot(owner.organization)

    assert_error(post_json(api, site_path(site, f"form-discoveries/{row['id']}/dismiss")), 404, "NOT_FOUND")
    assert_error(
        post_json(api, site_path(site, f"form-discoveries/{row['id']}/link"), {"captureFormId": site["formIds"][0]}),
        404,
        "NOT_FOUND",
    )
    assert snapshot(owner.organization) == before


def test_review_actions_on_an_archived_site_are_409(owner, api, site):
    [row] = discovered(site)
    assert post_json(api, site_path(site, "archive")).status_code == 200
    before = snapshot(owner.organization)

    assert_error(post_json(api, site_path(site, f"form-discoveries/{row['id']}/dismiss")), 409, "SITE_ARCHIVED")
    assert_error(
        post_json(api, site_path(site, f"form-discoveries/{row['id']}/link"), {"captureFormId": site["formIds"][0]}),
        409,
        "SITE_ARCHIVED",
    )
    assert snapshot(owner.organization) == before
    assert discoveries(api, site)["total"] == 1


def test_bad_ids_in_the_path_are_400(api, site):
    assert_field_error(api.get(f"{SITES}/not-a-uuid"), "id")
    assert_field_error(post_json(api, site_path(site, "form-discoveries/nope/dismiss")), "discoveryId")


# --- permissions and tenancy ----------------------------------------------------------------------------------


def _write_calls(site: dict, discovery_id, form_id):
    return [
        ("post", SITES, {"name": "Mine"}),
        ("patch", site_path(site), {"name": "Mine"}),
        ("post", site_path(site, "archive"), None),
        ("post", site_path(site, "regenerate-key"), None),
        ("post", site_path(site, f"form-discoveries/{discovery_id}/link"), {"captureFormId": form_id}),
        ("post", site_path(site, f"form-discoveries/{discovery_id}/dismiss"), None),
    ]


def _call(client: Client, method: str, path: str, body):
    if method == "get":
        return client.get(path)
    if method == "patch":
        return patch_json(client, path, body)
    return post_json(client, path, body)


@pytest.mark.parametrize("role", ["analyst", "front_desk", "telesales"])
def test_roles_without_settings_update_read_but_cannot_write(owner, member_factory, site, capture_form, role):
    [row] = discovered(site)
    member = member_factory(role=role, organization=owner.organization).api_client()
    before = snapshot(owner.organization)

    assert member.get(SITES).status_code == 200
    assert member.get(site_path(site)).status_code == 200
    assert member.get(site_path(site, "form-discoveries")).status_code == 200
    for method, path, body in _write_calls(site, row["id"], capture_form["id"]):
        assert_error(_call(member, method, path, body), 403, "PERMISSION_DENIED")

    assert snapshot(owner.organization) == before


def test_clinical_roles_cannot_read(owner, member_factory, site):
    dentist = member_factory(role="dentist", organization=owner.organization).api_client()

    assert_error(dentist.get(SITES), 403, "PERMISSION_DENIED")
    assert_error(dentist.get(site_path(site)), 403, "PERMISSION_DENIED")
    assert_error(dentist.get(site_path(site, "form-discoveries")), 403, "PERMISSION_DENIED")


def test_no_credential_is_401(site):
    assert_error(Client().get(SITES), 401, "UNAUTHENTICATED")
    assert_error(post_json(Client(), site_path(site, "archive")), 401, "UNAUTHENTICATED")


def test_another_practice_sees_nothing_and_changes_nothing(owner, outsider, api, site, capture_form):
    [row] = discovered(site)
    theirs = outsider.api_client()
    their_form = make_capture_form(theirs)
    before = snapshot(owner.organization)

    listed = theirs.get(SITES).json()
    assert listed["items"] == [] and listed["total"] == 0
    assert_error(theirs.get(site_path(site)), 404, "NOT_FOUND")
    assert_error(theirs.get(site_path(site, "form-discoveries")), 404, "NOT_FOUND")
    for method, path, body in _write_calls(site, row["id"], their_form["id"])[1:]:
        assert_error(_call(theirs, method, path, body), 404, "NOT_FOUND")
    # Their own site cannot reach our discovery either.
    their_site = make_site(theirs)
    for action in ("dismiss", "link"):
        response = post_json(
            theirs, site_path(their_site, f"form-discoveries/{row['id']}/{action}"), {"captureFormId": their_form["id"]}
        )
        assert_error(response, 404, "NOT_FOUND")
    assert discoveries(theirs, their_site)["total"] == 0

    assert snapshot(owner.organization) == before
    assert api.get(site_path(site)).json()["formIds"] == [capture_form["id"]]
