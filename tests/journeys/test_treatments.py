"""The treatment catalogue: /treatments and /treatments/{id}."""

import uuid

import pytest

from apps.journeys.models import Treatment
from tests.helpers import assert_error

JSON = "application/json"


def _create(client, **body):
    return client.post("/treatments", {"name": "Implant", **body}, content_type=JSON)


def test_first_read_seeds_general_enquiry_once(api, owner):
    first = api.get("/treatments")
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["total"] == 1 and body["limit"] == 100 and body["offset"] == 0
    (builtin,) = body["items"]
    assert builtin["name"] == "General enquiry" and builtin["builtin"] is True and builtin["active"] is True
    assert builtin["defaultValue"] == "0.00" and builtin["currency"] == "EUR"
    assert api.get("/treatments").json()["items"] == [builtin]
    assert Treatment.objects.for_org(owner.organization).count() == 1


def test_create_read_update_archive_restore(api, owner):
    created = _create(api, category="Implants", defaultValue="3500.50", currency="GBP")
    assert created.status_code == 201, created.content
    record = created.json()
    assert set(record) == {
        "id",
        "name",
        "category",
        "defaultValue",
        "currency",
        "durationMinutes",
        "active",
        "builtin",
        "createdAt",
        "updatedAt",
    }
    assert (record["name"], record["category"], record["defaultValue"], record["currency"]) == (
        "Implant",
        "Implants",
        "3500.50",
        "GBP",
    )
    assert record["active"] is True and record["builtin"] is False
    assert api.get(f"/treatments/{record['id']}").json() == record

    patched = api.patch(f"/treatments/{record['id']}", {"defaultValue": 4000}, content_type=JSON)
    assert patched.status_code == 200 and patched.json()["defaultValue"] == "4000.00"

    archived = api.delete(f"/treatments/{record['id']}")
    assert archived.status_code == 200 and archived.json()["active"] is False
    assert api.get(f"/treatments/{record['id']}").json()["active"] is False  # still readable
    names = [t["name"] for t in api.get("/treatments").json()["items"]]
    assert names == ["General enquiry"]
    everything = api.get("/treatments", {"includeArchived": "true"}).json()
    assert [t["name"] for t in everything["items"]] == ["General enquiry", "Implant"] and everything["total"] == 2

    restored = api.patch(f"/treatments/{record['id']}", {"active": True}, content_type=JSON)
    assert restored.json()["active"] is True


def test_list_filters_by_category_and_pages(api):
    for name, category in (("Aligners", "Orthodontics"), ("Braces", "orthodontics"), ("Whitening", "Cosmetic")):
        assert _create(api, name=name, category=category).status_code == 201
    ortho = api.get("/treatments", {"category": "ORTHODONTICS"}).json()
    assert [t["name"] for t in ortho["items"]] == ["Aligners", "Braces"]
    page = api.get("/treatments", {"limit": 2, "offset": 1}).json()
    assert [t["name"] for t in page["items"]] == ["Braces", "General enquiry"] and page["total"] == 4


def test_name_is_unique_in_the_practice_case_insensitive(api, owner, outsider):
    assert _create(api).status_code == 201
    assert_error(_create(api, name="  IMPLANT "), 409, "TREATMENT_NAME_TAKEN")
    other = _create(api, name="Crown").json()
    assert_error(
        api.patch(f"/treatments/{other['id']}", {"name": "implant"}, content_type=JSON), 409, "TREATMENT_NAME_TAKEN"
    )
    assert_error(_create(api, name="general ENQUIRY"), 409, "TREATMENT_NAME_TAKEN")
    assert _create(outsider.api_client()).status_code == 201  # another practice may use the name


def test_builtin_cannot_be_archived(api, owner):
    builtin = api.get("/treatments").json()["items"][0]
    assert_error(api.delete(f"/treatments/{builtin['id']}"), 409, "TREATMENT_BUILTIN")
    response = api.patch(f"/treatments/{builtin['id']}", {"active": False}, content_type=JSON)
    assert_error(response, 409, "TREATMENT_BUILTIN")
    assert Treatment.objects.for_org(owner.organization).get(is_builtin=True).active is True
    renamed = api.patch(f"/treatments/{builtin['id']}", {"defaultValue": "50"}, content_type=JSON)
    assert renamed.status_code == 200


def test_a_practice_treatment_named_general_enquiry_becomes_the_builtin(owner, api):
    Treatment.objects.create(organization=owner.organization, name="GENERAL ENQUIRY")
    (only,) = api.get("/treatments").json()["items"]
    assert only["name"] == "GENERAL ENQUIRY" and only["builtin"] is True


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 121},
        {"name": "A", "defaultValue": -1},
        {"name": "A", "defaultValue": "abc"},
        {"name": "A", "defaultValue": "1.234"},
        {"name": "A", "defaultValue": "1" * 13},
        {"name": "A", "currency": "eur"},
        {"name": "A", "currency": "XYZ"},
        {"name": "A", "currency": "EURO"},
        {"name": "A", "currency": 978},
        {"name": "A", "active": "maybe"},
        {"name": "A", "colour": "red"},
        {"name": "A", "builtin": True},
        {"name": "A", "category": "c" * 81},
        ["Implant"],
        {"name": ["A"]},
    ],
)
def test_bad_bodies_are_400_and_nothing_is_created(api, owner, body):
    api.get("/treatments")
    assert_error(api.post("/treatments", body, content_type=JSON), 400, "VALIDATION_ERROR")
    builtin = Treatment.objects.for_org(owner.organization).get()
    if isinstance(body, dict) and body != {}:
        assert_error(api.patch(f"/treatments/{builtin.id}", body, content_type=JSON), 400, "VALIDATION_ERROR")
    assert Treatment.objects.for_org(owner.organization).get().updated_at == builtin.updated_at


def test_bad_queries_and_ids_are_400(api):
    for query in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"includeArchived": "perhaps"}, {"sort": "name"}):
        assert_error(api.get("/treatments", query), 400, "VALIDATION_ERROR")
    assert_error(api.get("/treatments/not-a-uuid"), 400, "VALIDATION_ERROR")
    assert_error(api.get(f"/treatments/{uuid.uuid4()}"), 404, "NOT_FOUND")
    assert_error(api.post("/treatments", "", content_type=JSON), 400, "VALIDATION_ERROR")


def test_another_practices_treatment_is_404_everywhere_and_never_listed(api, owner, outsider):
    theirs = _create(outsider.api_client(), name="Veneers").json()
    assert_error(api.get(f"/treatments/{theirs['id']}"), 404, "NOT_FOUND")
    assert_error(api.patch(f"/treatments/{theirs['id']}", {"name": "Mine"}, content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.delete(f"/treatments/{theirs['id']}"), 404, "NOT_FOUND")
    stored = Treatment.objects.for_org(outsider.organization).get(id=theirs["id"])
    assert stored.name == "Veneers" and stored.active is True
    listed = api.get("/treatments", {"includeArchived": "true"}).json()["items"]
    assert [t["name"] for t in listed] == ["General enquiry"]


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
def test_reading_needs_treatment_read_and_writing_treatment_update(member_factory, owner, role, read, write):
    client = member_factory(role=role, organization=owner.organization).api_client()
    builtin = owner.api_client().get("/treatments").json()["items"][0]
    assert client.get("/treatments").status_code == read
    assert client.get(f"/treatments/{builtin['id']}").status_code == read
    response = _create(client, name=f"T {role}")
    assert response.status_code == write
    if write == 403:
        assert_error(response, 403, "PERMISSION_DENIED")
        patch = client.patch(f"/treatments/{builtin['id']}", {"name": "X"}, content_type=JSON)
        assert_error(patch, 403, "PERMISSION_DENIED")
        assert_error(client.delete(f"/treatments/{builtin['id']}"), 403, "PERMISSION_DENIED")
        assert Treatment.objects.for_org(owner.organization).count() == 1


def test_openapi_documents_the_treatment_routes(api):
    schema = api.get("/openapi.json").json()
    assert set(schema["paths"]["/treatments"]) >= {"get", "post"}
    assert set(schema["paths"]["/treatments/{id}"]) >= {"get", "patch", "delete"}
    for operation in (*schema["paths"]["/treatments"].values(), *schema["paths"]["/treatments/{id}"].values()):
        assert operation["tags"] == ["treatments"]
    assert "409" in schema["paths"]["/treatments"]["post"]["responses"]
