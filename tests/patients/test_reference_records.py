"""Locations, lead sources, price lists and practitioners under /settings/."""

import pytest

from apps.patients.models import LeadSource, Location, Practitioner, PriceList
from tests.factories import LocationFactory
from tests.helpers import assert_error

ROUTES = [
    ("/settings/locations", Location),
    ("/settings/lead-sources", LeadSource),
    ("/settings/price-lists", PriceList),
    ("/settings/practitioners", Practitioner),
]


@pytest.mark.parametrize(("route", "model"), ROUTES)
def test_create_list_rename_archive_restore(api, owner, route, model):
    created = api.post(route, {"name": "Main"}, content_type="application/json")
    assert created.status_code == 201, created.content
    record = created.json()
    assert record["name"] == "Main" and record["archivedAt"] is None
    assert api.get(route).json()["items"] == [record]

    renamed = api.patch(f"{route}/{record['id']}", {"name": "Centre"}, content_type="application/json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Centre"

    archived = api.patch(f"{route}/{record['id']}", {"archived": True}, content_type="application/json")
    assert archived.json()["archivedAt"] is not None
    assert api.get(route).json()["items"] == []
    assert [r["id"] for r in api.get(route, {"includeArchived": "true"}).json()["items"]] == [record["id"]]

    restored = api.patch(f"{route}/{record['id']}", {"archived": False}, content_type="application/json")
    assert restored.json()["archivedAt"] is None
    assert model.objects.for_org(owner.organization).count() == 1


def test_practitioner_kind(api):
    body = api.post(
        "/settings/practitioners", {"name": "Dr Bianchi", "kind": "hygienist"}, content_type="application/json"
    ).json()
    assert body["kind"] == "hygienist"
    bad = api.post("/settings/practitioners", {"name": "X", "kind": "surgeon"}, content_type="application/json")
    assert_error(bad, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(("route", "model"), ROUTES)
def test_bad_bodies_are_refused_and_nothing_is_created(api, owner, route, model):
    for body in ({}, {"name": ""}, {"name": "x" * 201}, {"name": "A", "colour": "red"}, ["Main"]):
        assert_error(api.post(route, body, content_type="application/json"), 400, "VALIDATION_ERROR")
    assert model.objects.for_org(owner.organization).count() == 0


def test_another_practices_record_is_404(api, outsider):
    foreign = LocationFactory(organization=outsider.organization, name="Theirs")
    assert_error(api.get(f"/settings/locations/{foreign.id}"), 404, "NOT_FOUND")
    response = api.patch(f"/settings/locations/{foreign.id}", {"name": "Mine"}, content_type="application/json")
    assert_error(response, 404, "NOT_FOUND")
    foreign.refresh_from_db()
    assert foreign.name == "Theirs"
    assert api.get("/settings/locations").json()["items"] == []


@pytest.mark.parametrize(
    ("role", "read", "write"),
    [
        ("owner", 200, 201),
        ("manager", 200, 201),
        ("front_desk", 200, 403),
        ("telesales", 200, 403),
        ("analyst", 200, 403),
        ("dentist", 403, 403),
    ],
)
def test_reading_needs_settings_read_and_writing_settings_update(member_factory, owner, role, read, write):
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert client.get("/settings/locations").status_code == read
    assert client.post("/settings/locations", {"name": "A"}, content_type="application/json").status_code == write
