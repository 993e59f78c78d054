"""The back office: website and form-discovery pages open for a superuser and list every practice; the site key
and the discovery counters stay read-only there."""

import pytest
from django.test import Client

from apps.sites.models import FormDiscovery, Website
from tests.factories import UserFactory
from tests.sites.conftest import a_report, make_site, report


@pytest.fixture
def staff_client(db):
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def rows(api, outsider, site):
    make_site(outsider.api_client(), name="Their website")
    assert report(site, a_report()).status_code == 202
    return Website.objects.unscoped().get(id=site["id"]), FormDiscovery.objects.unscoped().get(website_id=site["id"])


@pytest.mark.parametrize(
    "path",
    [
        "/admin/sites/",
        "/admin/sites/website/",
        "/admin/sites/website/?status__exact=archived",
        "/admin/sites/formdiscovery/",
        "/admin/sites/formdiscovery/?status__exact=new",
    ],
)
def test_staff_reach_the_changelists(staff_client, rows, path):
    assert staff_client.get(path).status_code == 200, path


def test_the_changelist_lists_every_practice(staff_client, rows):
    assert staff_client.get("/admin/sites/website/").context["cl"].result_count == 2


def test_the_change_pages_open_with_read_only_keys_and_counters(staff_client, rows):
    website, discovery = rows

    page = staff_client.get(f"/admin/sites/website/{website.id}/change/")
    assert page.status_code == 200
    assert "site_key" not in page.context["adminform"].form.fields
    assert website.site_key in page.content.decode()
    page = staff_client.get(f"/admin/sites/formdiscovery/{discovery.id}/change/")
    assert page.status_code == 200
    assert {"times_seen", "first_seen_at", "page_digest"}.isdisjoint(page.context["adminform"].form.fields)
    assert staff_client.get("/admin/sites/formdiscovery/add/").status_code == 403
