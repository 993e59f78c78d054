"""Booking pages in the practice's settings: create, read, change, rotate the token, archive; roles and tenancy."""

import pytest

from tests.booking.helpers import PAGES, config, post_json
from tests.helpers import assert_error

FIELDS = {
    "id",
    "name",
    "active",
    "token",
    "treatmentIds",
    "locationIds",
    "practitionerIds",
    "leadTimeMinutes",
    "horizonDays",
    "slotMinutes",
    "changeNoticeMinutes",
    "consentText",
    "createdAt",
    "updatedAt",
}


def test_create_read_list_update(api, practice):
    location, practitioners, treatment = practice
    created = post_json(
        api,
        PAGES,
        {
            "name": "Implants",
            "treatmentIds": [str(treatment.id)],
            "locationIds": [str(location.id)],
            "practitionerIds": [str(practitioners[0].id)],
            "leadTimeMinutes": 60,
            "horizonDays": 14,
            "slotMinutes": 45,
        },
    )
    assert created.status_code == 201, created.content
    page = created.json()
    assert set(page) == FIELDS
    assert page["treatmentIds"] == [str(treatment.id)]
    assert page["practitionerIds"] == [str(practitioners[0].id)]
    assert (page["leadTimeMinutes"], page["horizonDays"], page["slotMinutes"]) == (60, 14, 45)
    assert page["changeNoticeMinutes"] == 1440 and page["active"] is True
    assert len(page["token"]) >= 40

    assert api.get(f"{PAGES}/{page['id']}").json() == page
    assert [item["id"] for item in api.get(PAGES).json()["items"]] == [page["id"]]

    changed = api.patch(
        f"{PAGES}/{page['id']}", {"practitionerIds": [], "horizonDays": 28}, content_type="application/json"
    )
    assert changed.status_code == 200, changed.content
    assert changed.json()["practitionerIds"] == [] and changed.json()["horizonDays"] == 28
    assert changed.json()["token"] == page["token"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x", "horizonDays": 0},
        {"name": "x", "slotMinutes": 2},
        {"name": "x", "leadTimeMinutes": "60"},
        {"name": "x", "color": "red"},
        {"name": "x", "practitionerIds": ["not-a-uuid"]},
    ],
    ids=["empty", "blank-name", "no-horizon", "short-slot", "string-number", "unknown-field", "bad-id"],
)
def test_bad_bodies_are_400(api, practice, body):
    assert_error(post_json(api, PAGES, body), 400, "VALIDATION_ERROR")


def test_another_practices_practitioner_cannot_be_offered(api, practice, outsider):
    from tests.factories import PractitionerFactory

    theirs = PractitionerFactory(organization=outsider.organization)
    response = post_json(api, PAGES, {"name": "x", "practitionerIds": [str(theirs.id)]})
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert "practitionerIds" in str(body["details"])


def test_rotating_the_token_retires_the_old_one_at_once(api, page):
    assert config(page["token"]).status_code == 200
    rotated = post_json(api, f"{PAGES}/{page['id']}/token/rotate")
    assert rotated.status_code == 200, rotated.content
    new = rotated.json()["token"]
    assert new != page["token"]
    assert_error(config(page["token"]), 404, "NOT_FOUND")
    assert config(new).status_code == 200


def test_archiving_and_deactivating_hide_the_page(api, page, practice):
    paused = api.patch(f"{PAGES}/{page['id']}", {"active": False}, content_type="application/json")
    assert paused.status_code == 200
    assert_error(config(page["token"]), 404, "NOT_FOUND")
    api.patch(f"{PAGES}/{page['id']}", {"active": True}, content_type="application/json")
    assert config(page["token"]).status_code == 200

    assert api.delete(f"{PAGES}/{page['id']}").status_code == 204
    assert_error(config(page["token"]), 404, "NOT_FOUND")
    assert_error(api.get(f"{PAGES}/{page['id']}"), 404, "NOT_FOUND")
    assert api.get(PAGES).json()["items"] == []


def test_roles(member_factory, owner, page):
    dentist = member_factory(role="dentist", organization=owner.organization).api_client()
    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    assert_error(dentist.get(PAGES), 403, "PERMISSION_DENIED")
    assert_error(dentist.get(f"{PAGES}/{page['id']}"), 403, "PERMISSION_DENIED")
    assert front_desk.get(PAGES).status_code == 200
    assert front_desk.get(f"{PAGES}/{page['id']}").status_code == 200
    assert_error(post_json(front_desk, PAGES, {"name": "x"}), 403, "PERMISSION_DENIED")
    assert_error(post_json(front_desk, f"{PAGES}/{page['id']}/token/rotate"), 403, "PERMISSION_DENIED")
    assert_error(front_desk.delete(f"{PAGES}/{page['id']}"), 403, "PERMISSION_DENIED")


def test_another_practices_page_is_404_everywhere(outsider, page):
    theirs = outsider.api_client()
    one = f"{PAGES}/{page['id']}"
    assert theirs.get(PAGES).json()["items"] == []
    assert_error(theirs.get(one), 404, "NOT_FOUND")
    assert_error(theirs.patch(one, {"name": "mine"}, content_type="application/json"), 404, "NOT_FOUND")
    assert_error(post_json(theirs, f"{one}/token/rotate"), 404, "NOT_FOUND")
    assert_error(theirs.delete(one), 404, "NOT_FOUND")
    assert config(page["token"]).json()["name"] == "Book online"
