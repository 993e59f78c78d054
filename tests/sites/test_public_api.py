"""The public site-key surface: GET /site/{siteKey}/config (linked active forms only) and POST /site/{siteKey}/forms
(form-discovery reports: validation, de-duplication, domain pinning, the 64 KiB cap, the per-site bucket, the
per-address screen, CORS)."""

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from apps.sites.models import FormDiscovery
from tests.helpers import assert_error
from tests.sites.conftest import (
    CAPTURE_FORMS,
    DOMAIN,
    ORIGIN,
    PAGE,
    a_report,
    make_capture_form,
    make_site,
    patch_json,
    post_json,
    report,
    site_path,
    snapshot,
    token_of,
)


def config(site: dict, **extra):
    return Client().get(f"/site/{site['siteKey']}/config", **extra)


def rows(site: dict) -> list[FormDiscovery]:
    return list(FormDiscovery.objects.unscoped().filter(website_id=site["id"]).order_by("first_seen_at", "id"))


def assert_field_error(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    return body


# --- configuration --------------------------------------------------------------------------------------------


def test_config_lists_the_sites_active_public_forms(owner, api, capture_form):
    paused = make_capture_form(api, name="Paused form")
    assert post_json(api, f"{CAPTURE_FORMS}/{paused['id']}/pause").status_code == 200
    signed_later = make_capture_form(api, name="Signed later")
    archived_later = make_capture_form(api, name="Archived later")
    unlinked = make_capture_form(api, name="Not on this site")
    site = make_site(api, formIds=[capture_form["id"], paused["id"], signed_later["id"], archived_later["id"]])
    assert post_json(api, f"{CAPTURE_FORMS}/{signed_later['id']}/signing/enable").status_code == 200
    assert post_json(api, f"{CAPTURE_FORMS}/{archived_later['id']}/archive").status_code == 200

    response = config(site, HTTP_AUTHORIZATION="Bearer not-a-real-key")  # credentials play no part

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["site"] == {"name": "Main website"}
    assert len(body["forms"]) == 1
    [form] = body["forms"]
    token = token_of(capture_form)
    assert form["id"] == capture_form["id"]
    assert form["name"] == "Website enquiry"
    assert form["captureUrl"] == f"{settings.SVC_BASE_URL}/capture/{token}"
    assert form["formPageUrl"] == f"{settings.SVC_BASE_URL}/form-page/{token}"
    assert [field["name"] for field in form["fields"]] == [
        "first_name",
        "last_name",
        "email",
        "phone",
        "message",
        "marketing_consent",
    ]
    assert all(set(field) == {"name", "type", "label", "required"} for field in form["fields"])
    assert unlinked["id"] not in json.dumps(body)


def test_config_of_unknown_or_archived_keys_is_404(api, site):
    assert_error(Client().get("/site/site_unknown/config"), 404, "NOT_FOUND")
    assert_error(Client().get(f"/site/{'x' * 300}/config"), 404, "NOT_FOUND")
    assert post_json(api, site_path(site, "archive")).status_code == 200
    assert_error(config(site), 404, "NOT_FOUND")


def test_config_allows_the_sites_own_origins_only(site):
    allowed = config(site, HTTP_ORIGIN=ORIGIN)
    assert allowed["Access-Control-Allow-Origin"] == ORIGIN
    assert "Origin" in allowed["Vary"]

    other = config(site, HTTP_ORIGIN="https://evil.example")
    assert other.status_code == 200
    assert "Access-Control-Allow-Origin" not in other


def test_public_screen_limits_each_client_address(settings, site):
    settings.SVC_PUBLIC_SCREEN_RATE = "2/m"

    assert config(site).status_code == 200
    assert config(site).status_code == 200
    response = config(site)

    assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) >= 1
    assert config(site, REMOTE_ADDR="198.51.100.7").status_code == 200


# --- discovery reports ----------------------------------------------------------------------------------------


def test_a_report_is_recorded_and_answered_202(owner, site):
    response = report(site, a_report(), HTTP_ORIGIN=ORIGIN)

    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": 1}
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    [row] = rows(site)
    assert row.organization_id == owner.organization.id
    assert row.page_url == PAGE
    assert row.form_key == "contact-form"
    assert row.fields == [
        {"name": "your-name", "type": "text", "label": "Your name"},
        {"name": "your-email", "type": "email", "label": "Email address"},
    ]
    assert (row.status, row.linked_form_id, row.times_seen) == ("new", None, 1)
    assert row.first_seen_at == row.last_seen_at


def test_a_repeated_report_refreshes_instead_of_duplicating(site, time_machine):
    assert report(site, a_report()).status_code == 202
    [first] = rows(site)
    time_machine.move_to(timezone.now() + timedelta(minutes=5))
    newer_fields = {"formKey": "contact-form", "fields": [{"name": "email", "type": "email", "label": "Email"}]}

    # The same page with a fragment and campaign parameters is the same page.
    response = report(site, a_report(PAGE + "?utm_source=google&gclid=abc#top", newer_fields))

    assert response.status_code == 202
    assert response.json() == {"accepted": 1}
    [row] = rows(site)
    assert row.id == first.id
    assert row.times_seen == 2
    assert row.first_seen_at == first.first_seen_at
    assert row.last_seen_at > first.last_seen_at
    assert row.fields == [{"name": "email", "type": "email", "label": "Email"}]


def test_pages_and_form_keys_make_distinct_discoveries(site):
    two_forms = a_report(
        PAGE + "?page_id=7",
        {"formKey": "newsletter", "fields": [{"name": "email"}]},
        {"formKey": "booking", "fields": []},
        {"formKey": "newsletter", "fields": [{"name": "email", "type": "email"}]},
    )

    response = report(site, two_forms)

    assert response.json() == {"accepted": 2}
    assert report(site, a_report("https://smile-dental.example/")).json() == {"accepted": 1}
    found = {(row.page_url, row.form_key): row.fields for row in rows(site)}
    assert found == {
        (PAGE + "?page_id=7", "newsletter"): [{"name": "email", "type": "email", "label": ""}],
        (PAGE + "?page_id=7", "booking"): [],
        ("https://smile-dental.example/", "contact-form"): a_report()["forms"][0]["fields"],
    }


def test_a_report_without_forms_records_nothing(site):
    response = report(site, {"pageUrl": PAGE, "forms": []})

    assert response.status_code == 202
    assert response.json() == {"accepted": 0}
    assert rows(site) == []


def test_a_beacon_sent_as_text_plain_is_accepted(site):
    response = report(site, a_report(), content_type="text/plain;charset=UTF-8")

    assert response.status_code == 202, response.content
    assert len(rows(site)) == 1


@pytest.mark.parametrize(
    ("page", "origin"),
    [
        ("https://evil.example/contact", None),
        ("https://evilsmile-dental.example/contact", None),  # a suffix, not a subdomain
        ("https://smile-dental.example.evil.example/", None),
        (PAGE, "https://evil.example"),
        (PAGE, "null"),
        (PAGE, "not an origin"),
    ],
)
def test_domain_pinning_refuses_other_hosts(owner, site, page, origin):
    before = snapshot(owner.organization)
    extra = {"HTTP_ORIGIN": origin} if origin is not None else {}

    response = report(site, a_report(page), **extra)

    assert_error(response, 403, "SITE_DOMAIN_NOT_ALLOWED")
    assert "Access-Control-Allow-Origin" not in response
    assert snapshot(owner.organization) == before


def test_subdomains_and_the_bare_domain_are_allowed(site):
    for page in (
        "https://smile-dental.example/",
        "http://blog.smile-dental.example/post?x=1",
        "https://SMILE-DENTAL.example./",
    ):
        response = report(site, a_report(page), HTTP_ORIGIN=f"https://{DOMAIN}")
        assert response.status_code == 202, (page, response.content)


def test_a_site_without_allowed_domains_accepts_no_reports(owner, api):
    site = make_site(api, allowedDomains=[])
    before = snapshot(owner.organization)

    assert_error(report(site, a_report()), 403, "SITE_DOMAIN_NOT_ALLOWED")

    assert snapshot(owner.organization) == before
    assert patch_json(api, site_path(site), {"allowedDomains": [DOMAIN]}).status_code == 200
    assert report(site, a_report()).status_code == 202


def _forms(count: int, fields: int = 0, name: str = "f") -> list[dict]:
    return [{"formKey": f"form-{i}", "fields": [{"name": f"{name}{j}"} for j in range(fields)]} for i in range(count)]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"forms": []}, "pageUrl"),
        ({"pageUrl": PAGE}, "forms"),
        ({"pageUrl": "ftp://smile-dental.example/x", "forms": []}, "pageUrl"),
        ({"pageUrl": "javascript:alert(1)", "forms": []}, "pageUrl"),
        ({"pageUrl": "https:///nohost", "forms": []}, "pageUrl"),
        ({"pageUrl": "https://smile-dental.example:99999/", "forms": []}, "pageUrl"),
        ({"pageUrl": PAGE + "/" + "a" * 2048, "forms": []}, "pageUrl"),
        ({"pageUrl": 5, "forms": []}, "pageUrl"),
        ({"pageUrl": PAGE, "forms": _forms(21)}, "forms"),
        ({"pageUrl": PAGE, "forms": _forms(1, 101)}, "forms"),
        ({"pageUrl": PAGE, "forms": _forms(1, 1, name="n" * 201)}, "forms"),
        ({"pageUrl": PAGE, "forms": [{"formKey": ""}]}, "forms"),
        ({"pageUrl": PAGE, "forms": [{"formKey": "k" * 201}]}, "forms"),
        ({"pageUrl": PAGE, "forms": [{"formKey": "a", "fields": [{"name": "x", "colour": "red"}]}]}, "forms"),
        ({"pageUrl": PAGE, "forms": "contact"}, "forms"),
        ({"pageUrl": PAGE, "forms": [], "extra": True}, "extra"),
    ],
)
def test_report_validation_names_the_field(owner, site, body, field):
    before = snapshot(owner.organization)

    assert_field_error(report(site, body), field)

    assert snapshot(owner.organization) == before


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", "", "NaN"])
def test_bad_json_is_400(owner, site, raw):
    before = snapshot(owner.organization)

    assert_error(report(site, raw), 400, "VALIDATION_ERROR")

    assert snapshot(owner.organization) == before


def test_other_media_types_are_415(site):
    response = report(site, "pageUrl=x", content_type="application/x-www-form-urlencoded")

    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_a_body_over_64_kib_is_413_before_parsing(owner, site):
    body = json.dumps(a_report()) + " " * (64 * 1024)
    before = snapshot(owner.organization)

    response = report(site, body)

    body = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert body["details"] == {"maxBytes": 64 * 1024}
    assert snapshot(owner.organization) == before


def test_the_per_site_bucket_answers_429_with_retry_after(settings, owner, api, site):
    settings.SVC_SITE_DISCOVERY_BUCKET = (2, 0.001)
    other_site = make_site(api, name="Other site")

    assert report(site, a_report()).status_code == 202
    assert report(site, a_report(PAGE + "/2")).status_code == 202
    before = snapshot(owner.organization)
    response = report(site, a_report(PAGE + "/3"))

    body = assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) >= 1
    assert body["details"]["retryAfter"] == int(response["Retry-After"])
    assert snapshot(owner.organization) == before
    # The bucket is the site's own.
    assert report(other_site, a_report()).status_code == 202


def test_unknown_and_archived_keys_are_404(owner, api, site):
    assert_error(report({"siteKey": "site_nope"}, a_report()), 404, "NOT_FOUND")
    assert post_json(api, site_path(site, "archive")).status_code == 200
    before = snapshot(owner.organization)

    assert_error(report(site, a_report()), 404, "NOT_FOUND")

    assert snapshot(owner.organization) == before


def test_other_methods_are_405(site):
    assert_error(Client().get(f"/site/{site['siteKey']}/forms"), 405, "METHOD_NOT_ALLOWED")
    assert_error(Client().post(f"/site/{site['siteKey']}/config"), 405, "METHOD_NOT_ALLOWED")


def test_cors_preflight_answers_allowed_origins(site):
    path = f"/site/{site['siteKey']}/forms"

    preflight = {"HTTP_ACCESS_CONTROL_REQUEST_METHOD": "POST", "HTTP_ACCESS_CONTROL_REQUEST_HEADERS": "content-type"}
    allowed = Client().options(path, HTTP_ORIGIN=ORIGIN, **preflight)
    assert allowed.status_code == 204
    assert allowed["Access-Control-Allow-Origin"] == ORIGIN
    assert allowed["Access-Control-Allow-Methods"] == "POST"
    assert allowed["Access-Control-Allow-Headers"] == "Content-Type"

    refused = Client().options(path, HTTP_ORIGIN="https://evil.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert refused.status_code == 204
    assert "Access-Control-Allow-Origin" not in refused
    assert "Access-Control-Allow-Methods" not in refused
    assert_error(Client().options("/site/site_nope/forms", HTTP_ORIGIN=ORIGIN), 404, "NOT_FOUND")


def test_the_site_keeps_at_most_its_cap_of_discoveries(owner, site, monkeypatch):
    from apps.sites import services

    monkeypatch.setattr(services, "MAX_DISCOVERIES_PER_SITE", 2)
    assert report(site, a_report(PAGE, *_forms(2))).json() == {"accepted": 2}

    # Full: new keys are dropped, known ones still refresh.
    response = report(site, a_report(PAGE, *_forms(3)))

    assert response.json() == {"accepted": 2}
    assert sorted((row.form_key, row.times_seen) for row in rows(site)) == [("form-0", 2), ("form-1", 2)]
