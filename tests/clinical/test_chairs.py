"""/clinical/chairs: the surgery chairs of each location (pms:diary reads, pms:manage changes)."""

import pytest

from apps.clinical.models import Chair
from tests.clinical.conftest import patch_json, post_json
from tests.factories import LocationFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint


def _create(client, location, name="Chair 1", **extra):
    return post_json(client, "/clinical/chairs", {"locationId": str(location.id), "name": name, **extra})


def test_create_list_read_update_delete(owner, front_desk, location, org):
    client = owner.session_client()
    created = _create(client, location, "Surgery 2", position=2)
    assert created.status_code == 201, created.content
    chair = created.json()
    assert chair["locationId"] == str(location.id)
    assert chair["locationName"] == "Centre"
    assert (chair["name"], chair["active"], chair["position"]) == ("Surgery 2", True, 2)
    assert _create(client, location, "Surgery 1", position=1).status_code == 201

    listed = front_desk.session_client().get("/clinical/chairs").json()["items"]
    assert [c["name"] for c in listed] == ["Surgery 1", "Surgery 2"]
    assert client.get(f"/clinical/chairs/{chair['id']}").json()["name"] == "Surgery 2"

    updated = patch_json(client, f"/clinical/chairs/{chair['id']}", {"active": False, "name": "Surgery 3"})
    assert updated.status_code == 200, updated.content
    assert (updated.json()["active"], updated.json()["name"]) == (False, "Surgery 3")
    assert [c["name"] for c in client.get("/clinical/chairs?includeInactive=false").json()["items"]] == ["Surgery 1"]

    assert client.delete(f"/clinical/chairs/{chair['id']}").status_code == 204
    assert not Chair.objects.for_org(org).filter(id=chair["id"]).exists()


def test_names_are_unique_per_location_ignoring_case(owner, location, org):
    client = owner.session_client()
    assert _create(client, location, "Chair A").status_code == 201
    assert_error(_create(client, location, "chair a"), 409, "CHAIR_NAME_TAKEN")
    other = LocationFactory(organization=org)
    assert _create(client, other, "Chair A").status_code == 201
    assert [c["name"] for c in client.get(f"/clinical/chairs?locationId={other.id}").json()["items"]] == ["Chair A"]


def test_bad_input(owner, location):
    client = owner.session_client()
    fields = assert_error(post_json(client, "/clinical/chairs", {"name": "x"}), 400, "VALIDATION_ERROR")["details"]
    assert "locationId" in fields["fields"]
    assert_error(_create(client, location, "   "), 400, "VALIDATION_ERROR")
    assert_error(_create(client, location, "x", position=-1), 400, "VALIDATION_ERROR")
    assert_error(_create(client, location, "x", colour="red"), 400, "VALIDATION_ERROR")
    chair = _create(client, location).json()
    assert_error(patch_json(client, f"/clinical/chairs/{chair['id']}", {}), 400, "VALIDATION_ERROR")
    assert_error(client.get("/clinical/chairs?locationId=nope"), 400, "VALIDATION_ERROR")


def test_other_practices_chairs_and_locations(owner, outsider, location):
    theirs_location = LocationFactory(organization=outsider.organization)
    theirs = Chair.objects.create(organization=outsider.organization, location=theirs_location, name="Theirs")
    client = owner.session_client()

    body = assert_error(_create(client, theirs_location), 400, "VALIDATION_ERROR")
    assert "locationId" in body["details"]["fields"]
    assert_error(client.get(f"/clinical/chairs?locationId={theirs_location.id}"), 400, "VALIDATION_ERROR")
    assert_error(client.get(f"/clinical/chairs/{theirs.id}"), 404, "NOT_FOUND")
    assert_error(patch_json(client, f"/clinical/chairs/{theirs.id}", {"name": "Mine"}), 404, "NOT_FOUND")
    assert_error(client.delete(f"/clinical/chairs/{theirs.id}"), 404, "NOT_FOUND")
    mine = _create(client, location).json()
    assert_error(
        patch_json(client, f"/clinical/chairs/{mine['id']}", {"locationId": str(theirs_location.id)}),
        400,
        "VALIDATION_ERROR",
    )
    theirs.refresh_from_db()
    assert (theirs.name, theirs.location_id) == ("Theirs", theirs_location.id)
    assert client.get("/clinical/chairs").json()["items"] == [mine]


def test_permissions(owner, dentist, front_desk, location, member_factory, org):
    chair = _create(owner.session_client(), location).json()
    for member in (dentist, front_desk):
        client = member.session_client()
        assert client.get("/clinical/chairs").status_code == 200
        assert_error(_create(client, location, "Mine"), 403, "PERMISSION_DENIED")
        assert_error(patch_json(client, f"/clinical/chairs/{chair['id']}", {"name": "x"}), 403, "PERMISSION_DENIED")
        assert_error(client.delete(f"/clinical/chairs/{chair['id']}"), 403, "PERMISSION_DENIED")
    telesales = member_factory(role="telesales", organization=org)
    assert_error(telesales.session_client().get("/clinical/chairs"), 403, "PERMISSION_DENIED")


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_clinical_transport_and_workspace(owner, closed, location, method):
    raw, _ = mint(owner, "read write")
    for client in (owner.api_client(), bearer(raw)):
        assert_error(client.generic(method, "/clinical/chairs"), 403, "transport_not_allowed")
    assert_error(
        closed.session_client(enforce_csrf=False).generic(method, "/clinical/chairs"), 403, "PMS_WORKSPACE_UNAVAILABLE"
    )
    assert_error(closed.api_client().generic(method, "/clinical/chairs"), 403, "PMS_WORKSPACE_UNAVAILABLE")
