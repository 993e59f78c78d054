"""Websites fixtures: capture forms and websites made through the settings API, discovery reports, and a snapshot
of every row the area writes (so each refusal can assert that nothing changed)."""

import json

import pytest
from django.test import Client

from apps.sites.models import FormDiscovery, Website, WebsiteForm

SITES = "/settings/sites"
CAPTURE_FORMS = "/settings/capture-forms"
PAGE = "https://www.smile-dental.example/contact"
DOMAIN = "smile-dental.example"
ORIGIN = "https://www.smile-dental.example"


def post_json(client: Client, path: str, data=None, **extra):
    return client.post(path, {} if data is None else data, content_type="application/json", **extra)


def patch_json(client: Client, path: str, data):
    return client.patch(path, data, content_type="application/json")


def site_path(site, action: str = "") -> str:
    site_id = site["id"] if isinstance(site, dict) else site
    return f"{SITES}/{site_id}" + (f"/{action}" if action else "")


def token_of(form: dict) -> str:
    return form["captureUrl"].rsplit("/", 1)[1]


def make_capture_form(client: Client, **body) -> dict:
    payload = {"name": "Website enquiry", "confirmMapping": True} | body
    response = post_json(client, CAPTURE_FORMS, payload)
    assert response.status_code == 201, response.content
    return response.json()


def make_site(client: Client, **body) -> dict:
    payload = {"name": "Main website", "allowedDomains": [DOMAIN]} | body
    response = post_json(client, SITES, payload)
    assert response.status_code == 201, response.content
    return response.json()


def report(site: dict, body, *, client: Client | None = None, content_type: str = "application/json", **extra):
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return (client or Client()).post(f"/site/{site['siteKey']}/forms", raw, content_type=content_type, **extra)


def a_report(page: str = PAGE, *forms) -> dict:
    forms = forms or (
        {
            "formKey": "contact-form",
            "fields": [
                {"name": "your-name", "type": "text", "label": "Your name"},
                {"name": "your-email", "type": "email", "label": "Email address"},
            ],
        },
    )
    return {"pageUrl": page, "forms": list(forms)}


def snapshot(organization) -> dict:
    """Every row of the area in this practice, as values (order-stable)."""
    return {
        name: list(model.objects.for_org(organization).order_by("id").values())
        for name, model in (("sites", Website), ("links", WebsiteForm), ("discoveries", FormDiscovery))
    }


@pytest.fixture
def capture_form(api) -> dict:
    return make_capture_form(api)


@pytest.fixture
def site(api, capture_form) -> dict:
    return make_site(api, formIds=[capture_form["id"]])
