"""GET /patients: paging, sorting (stable), the simple filters, PatientFilters (filters=JSON), embed=tags, the
typo-tolerant trigram search (q, sort=relevance) and its GIN index, tenancy and the query budget."""

import json
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.patients.models import Patient
from apps.patients.selectors import PatientQuery, patient_filtered
from tests.factories import LeadSourceFactory, LocationFactory, OrganizationFactory, PatientFactory, TagFactory
from tests.helpers import assert_error

PATIENTS = "/patients"
PAGE_KEYS = {"items", "total", "limit", "offset"}
SORTS = ("createdAt", "updatedAt", "lastName", "firstName", "status", "dateOfBirth", "city", "email")


# --- helpers ---------------------------------------------------------------------------------------------------


def assert_invalid(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    fields = body["details"].get("fields")
    assert isinstance(fields, dict), body
    assert field in fields, body
    assert fields[field], body
    return body


def page(client, **params) -> dict:
    response = client.get(PATIENTS, params)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == PAGE_KEYS
    return body


def ids(body: dict) -> list[str]:
    return [item["id"] for item in body["items"]]


def id_set(*patients) -> set[str]:
    return {str(p.id) for p in patients}


def listed(client, **params) -> set[str]:
    body = page(client, limit=100, **params)
    assert body["total"] == len(body["items"])
    return set(ids(body))


def filtered(client, filters: dict, **params) -> set[str]:
    return listed(client, filters=json.dumps(filters), **params)


def set_column(patient, **values) -> None:
    Patient.objects.unscoped().filter(id=patient.id).update(**values)


def at(day: int) -> datetime:
    return datetime(2025, 3, day, 12, 0, tzinfo=UTC)


@pytest.fixture
def org(owner):
    return owner.organization


def archived(org, **fields):
    return PatientFactory(organization=org, status="archived", archived_at=at(1), **fields)


# --- shape, paging, limits ------------------------------------------------------------------------------------


def test_empty_list(api):
    assert page(api) == {"items": [], "total": 0, "limit": 25, "offset": 0}


def test_default_page_is_25_from_offset_0_newest_first(api, org):
    patients = [PatientFactory(organization=org) for _ in range(30)]
    for day, patient in enumerate(patients, start=1):
        set_column(patient, created_at=at(day))

    body = page(api)

    assert body["total"] == 30
    assert body["limit"] == 25
    assert body["offset"] == 0
    assert ids(body) == [str(p.id) for p in reversed(patients)][:25]
    item = body["items"][0]
    assert {"id", "firstName", "lastName", "email", "phoneMobile", "status", "createdAt", "updatedAt"} <= set(item)
    assert "tags" not in item


def test_limit_and_offset_are_echoed_and_applied(api, org):
    patients = [PatientFactory(organization=org) for _ in range(6)]
    for day, patient in enumerate(patients, start=1):
        set_column(patient, created_at=at(day))
    newest_first = [str(p.id) for p in reversed(patients)]

    body = page(api, limit=2, offset=3)

    assert body["limit"] == 2 and body["offset"] == 3 and body["total"] == 6
    assert ids(body) == newest_first[3:5]
    assert page(api, limit=100)["limit"] == 100
    assert page(api, limit=1)["items"][0]["id"] == newest_first[0]
    beyond = page(api, offset=50)
    assert beyond["items"] == [] and beyond["total"] == 6 and beyond["offset"] == 50


@pytest.mark.parametrize(
    "params, field",
    [
        pytest.param({"limit": 0}, "limit", id="limit-0"),
        pytest.param({"limit": 101}, "limit", id="limit-101"),
        pytest.param({"limit": "x"}, "limit", id="limit-x"),
        pytest.param({"limit": -1}, "limit", id="limit-negative"),
        pytest.param({"limit": ""}, "limit", id="limit-empty"),
        pytest.param({"limit": "2.5"}, "limit", id="limit-fraction"),
        pytest.param({"offset": -1}, "offset", id="offset-negative"),
        pytest.param({"offset": "x"}, "offset", id="offset-x"),
        pytest.param({"sort": "age"}, "sort", id="sort-unknown"),
        pytest.param({"sort": "created_at"}, "sort", id="sort-snake-case"),
        pytest.param({"direction": "up"}, "direction", id="direction"),
        pytest.param({"direction": "DESC"}, "direction", id="direction-case"),
        pytest.param({"status": "customer"}, "status", id="status"),
        pytest.param({"tagId": "nope"}, "tagId", id="tag-id"),
        pytest.param({"tagId": "7d444840-9dc0-01c6-a2b5-3e5c4f3e9a1b"}, "tagId", id="tag-id-version-0"),
        pytest.param({"leadSourceId": "123"}, "leadSourceId", id="lead-source-id"),
        pytest.param({"includeArchived": "maybe"}, "includeArchived", id="include-archived"),
        pytest.param({"embed": "journeys"}, "embed", id="embed-other"),
        pytest.param({"embed": "tags,notes"}, "embed", id="embed-tags-and-other"),
        pytest.param({"colour": "red"}, "colour", id="unknown-parameter"),
        pytest.param({"pageSize": "10"}, "pageSize", id="unknown-parameter-camel"),
    ],
)
def test_invalid_query_parameters_are_400_naming_them(api, org, params, field):
    PatientFactory(organization=org)

    assert_invalid(api.get(PATIENTS, params), field)


def test_relevance_without_q_is_400(api, org):
    PatientFactory(organization=org)

    body = assert_error(api.get(PATIENTS, {"sort": "relevance"}), 400, "VALIDATION_ERROR")

    assert {"sort", "q"} & set(body["details"]["fields"]), body


# --- sorting -----------------------------------------------------------------------------------------------------


@pytest.fixture
def sortable(org):
    """Four patients whose every sortable value is distinct (and given in a shuffled order)."""
    rows = [
        ("Carla", "Esposito", "inactive", date(1990, 5, 1), "Napoli", "carla@example.com", 3, 2),
        ("Andrea", "Bianchi", "patient", date(1975, 1, 9), "Bologna", "andrea@example.com", 1, 4),
        ("Elena", "Amato", "enquiry", date(2001, 12, 30), "Torino", "elena@example.com", 4, 1),
        ("Bruno", "Conti", "lead", date(1962, 7, 15), "Ancona", "bruno@example.com", 2, 3),
    ]
    made = []
    for first, last, status, born, city, email, created_day, updated_day in rows:
        patient = PatientFactory(
            organization=org,
            first_name=first,
            last_name=last,
            status=status,
            date_of_birth=born,
            city=city,
            email=email,
        )
        set_column(patient, created_at=at(created_day), updated_at=at(updated_day))
        made.append(Patient.objects.for_org(org).get(id=patient.id))
    return made


SORT_KEYS = {
    "createdAt": lambda p: p.created_at,
    "updatedAt": lambda p: p.updated_at,
    "lastName": lambda p: p.last_name,
    "firstName": lambda p: p.first_name,
    "status": lambda p: p.status,
    "dateOfBirth": lambda p: p.date_of_birth,
    "city": lambda p: p.city,
    "email": lambda p: p.email,
}


@pytest.mark.parametrize("direction", ["asc", "desc"])
@pytest.mark.parametrize("sort", SORTS)
def test_each_sort_orders_rows(api, sortable, sort, direction):
    expected = [str(p.id) for p in sorted(sortable, key=SORT_KEYS[sort], reverse=direction == "desc")]

    body = page(api, sort=sort, direction=direction)

    assert ids(body) == expected
    assert body["total"] == 4


@pytest.mark.parametrize("sort", SORTS)
def test_direction_defaults_to_desc(api, sortable, sort):
    assert ids(page(api, sort=sort)) == ids(page(api, sort=sort, direction="desc"))


def test_sort_defaults_to_created_at(api, sortable):
    assert ids(page(api)) == ids(page(api, sort="createdAt", direction="desc"))
    assert ids(page(api, direction="asc")) == ids(page(api, sort="createdAt", direction="asc"))


@pytest.mark.parametrize("direction", ["asc", "desc"])
@pytest.mark.parametrize("sort", ["createdAt", "lastName", "status", "city"])
def test_identical_values_page_stably_with_every_id_exactly_once(api, org, sort, direction):
    fixed = at(10)
    for _ in range(30):
        PatientFactory(organization=org, last_name="Rossi", status="lead", city="Milano")
    assert Patient.objects.unscoped().filter(organization=org).update(created_at=fixed, updated_at=fixed) == 30

    seen = []
    for offset in range(0, 35, 7):
        body = page(api, sort=sort, direction=direction, limit=7, offset=offset)
        assert body["total"] == 30
        seen.extend(ids(body))

    assert len(seen) == 30
    assert len(set(seen)) == 30
    assert set(seen) == {str(i) for i in Patient.objects.for_org(org).values_list("id", flat=True)}
    assert seen == ids(page(api, sort=sort, direction=direction, limit=100))


# --- archived, merged and the simple filters ---------------------------------------------------------------


def test_archived_are_excluded_by_default_and_included_on_request(api, org):
    active = PatientFactory(organization=org, status="patient")
    gone = archived(org)

    assert listed(api) == id_set(active)
    assert listed(api, includeArchived="true") == id_set(active, gone)
    assert listed(api, includeArchived="false") == id_set(active)
    assert listed(api, status="archived") == id_set(gone)
    assert listed(api, status="patient") == id_set(active)
    assert page(api)["total"] == 1


def test_archive_through_the_api_removes_the_patient_from_the_list(api, org):
    lead = PatientFactory(organization=org)
    other = PatientFactory(organization=org)

    response = api.post(f"{PATIENTS}/{lead.id}/archive", {"reason": "moved"}, content_type="application/json")
    assert response.status_code == 200, response.content
    assert listed(api) == id_set(other)
    assert listed(api, status="archived") == id_set(lead)


def test_merged_records_are_never_listed(api, org):
    survivor = PatientFactory(organization=org, first_name="Mario", last_name="Rossi", city="Milano")
    duplicate = PatientFactory(organization=org, first_name="Mario", last_name="Rossi", city="Milano")
    tag = TagFactory(organization=org)
    merged = api.post(
        f"{PATIENTS}/{survivor.id}/merge",
        {"duplicatePatientId": str(duplicate.id)},
        content_type="application/json",
    )
    assert merged.status_code == 200, merged.content
    Patient.objects.for_org(org).get(id=duplicate.id).tag_links.create(organization=org, tag=tag)

    assert listed(api) == id_set(survivor)
    assert listed(api, includeArchived="true") == id_set(survivor)
    assert listed(api, status="lead") == id_set(survivor)
    assert listed(api, q="mario rossi") == id_set(survivor)
    assert listed(api, tagId=str(tag.id)) == set()
    assert filtered(api, {"city": "milano"}) == id_set(survivor)


def test_merged_and_archived_records_are_never_listed(api, org):
    survivor = PatientFactory(organization=org)
    duplicate = archived(org)
    set_column(duplicate, merged_into=survivor.id)

    assert listed(api, includeArchived="true") == id_set(survivor)
    assert listed(api, status="archived") == set()


@pytest.mark.parametrize("status", ["enquiry", "lead", "patient", "inactive", "deceased"])
def test_status_parameter(api, org, status):
    by_status = {s: PatientFactory(organization=org, status=s) for s in ("enquiry", "lead", "patient", "inactive")}
    by_status["deceased"] = PatientFactory(organization=org, status="deceased")
    archived(org)

    assert listed(api, status=status) == id_set(by_status[status])


def test_tag_id_parameter(api, org):
    vip, other = TagFactory(organization=org), TagFactory(organization=org)
    tagged = PatientFactory(organization=org, tags=[vip])
    both = PatientFactory(organization=org, tags=[vip, other])
    PatientFactory(organization=org, tags=[other])
    PatientFactory(organization=org)
    archived(org, tags=[vip])

    assert listed(api, tagId=str(vip.id)) == id_set(tagged, both)
    assert listed(api, tagId=str(uuid.uuid4())) == set()


def test_lead_source_id_parameter(api, org):
    web, phone = LeadSourceFactory(organization=org), LeadSourceFactory(organization=org)
    from_web = PatientFactory(organization=org, lead_source=web)
    PatientFactory(organization=org, lead_source=phone)
    PatientFactory(organization=org)

    assert listed(api, leadSourceId=str(web.id)) == id_set(from_web)


def test_simple_filters_combine(api, org):
    vip = TagFactory(organization=org)
    web = LeadSourceFactory(organization=org)
    match = PatientFactory(organization=org, status="patient", lead_source=web, tags=[vip])
    PatientFactory(organization=org, status="lead", lead_source=web, tags=[vip])
    PatientFactory(organization=org, status="patient", tags=[vip])
    PatientFactory(organization=org, status="patient", lead_source=web)

    assert listed(api, status="patient", tagId=str(vip.id), leadSourceId=str(web.id)) == id_set(match)


# --- embed=tags ----------------------------------------------------------------------------------------------


def test_embed_tags_attaches_each_rows_tags(api, org):
    beta, alpha = TagFactory(organization=org, name="Beta"), TagFactory(organization=org, name="alpha")
    both = PatientFactory(organization=org, tags=[beta, alpha])
    one = PatientFactory(organization=org, tags=[beta])
    none = PatientFactory(organization=org)

    body = page(api, embed="tags")

    rows = {item["id"]: item for item in body["items"]}
    assert set(rows) == id_set(both, one, none)
    assert sorted(t["id"] for t in rows[str(both.id)]["tags"]) == sorted([str(beta.id), str(alpha.id)])
    assert {t["name"] for t in rows[str(both.id)]["tags"]} == {"Beta", "alpha"}
    assert [t["id"] for t in rows[str(one.id)]["tags"]] == [str(beta.id)]
    assert rows[str(none.id)]["tags"] == []
    for item in body["items"]:
        for tag in item["tags"]:
            assert {"id", "name"} <= set(tag)

    plain = page(api)
    assert all("tags" not in item for item in plain["items"])


# --- PatientFilters (filters=JSON) ---------------------------------------------------------------------------


def test_filters_status_list(api, org):
    lead = PatientFactory(organization=org, status="lead")
    patient = PatientFactory(organization=org, status="patient")
    inactive = PatientFactory(organization=org, status="inactive")
    gone = archived(org)

    assert filtered(api, {"status": ["lead", "patient"]}) == id_set(lead, patient)
    assert filtered(api, {"status": ["inactive", "deceased"]}) == id_set(inactive)
    assert filtered(api, {"status": []}) == set()
    assert filtered(api, {"status": ["archived"]}, includeArchived="true") == id_set(gone)


def test_filters_tag_ids_any_all_none(api, org):
    red, blue, green = (TagFactory(organization=org) for _ in range(3))
    red_only = PatientFactory(organization=org, tags=[red])
    red_blue = PatientFactory(organization=org, tags=[red, blue])
    blue_green = PatientFactory(organization=org, tags=[blue, green])
    untagged = PatientFactory(organization=org)

    assert filtered(api, {"tagIds": {"any": [str(red.id), str(green.id)]}}) == id_set(red_only, red_blue, blue_green)
    assert filtered(api, {"tagIds": {"all": [str(red.id), str(blue.id)]}}) == id_set(red_blue)
    assert filtered(api, {"tagIds": {"none": [str(red.id)]}}) == id_set(blue_green, untagged)
    assert filtered(api, {"tagIds": {"any": [str(blue.id)], "none": [str(green.id)]}}) == id_set(red_blue)
    assert filtered(api, {"tagIds": {"all": [str(red.id), str(green.id)]}}) == set()


def test_filters_lead_source_and_location_ids(api, org):
    web, phone, walk_in = (LeadSourceFactory(organization=org) for _ in range(3))
    milan, rome = LocationFactory(organization=org), LocationFactory(organization=org)
    a = PatientFactory(organization=org, lead_source=web, location=milan)
    b = PatientFactory(organization=org, lead_source=phone, location=rome)
    c = PatientFactory(organization=org, lead_source=walk_in, location=milan)
    PatientFactory(organization=org)

    assert filtered(api, {"leadSourceIds": [str(web.id), str(phone.id)]}) == id_set(a, b)
    assert filtered(api, {"locationIds": [str(milan.id)]}) == id_set(a, c)
    assert filtered(api, {"leadSourceIds": [str(web.id), str(walk_in.id)], "locationIds": [str(milan.id)]}) == id_set(
        a, c
    )
    assert filtered(api, {"leadSourceIds": [str(phone.id)], "locationIds": [str(milan.id)]}) == set()


@pytest.mark.parametrize("key, column", [("createdAt", "created_at"), ("updatedAt", "updated_at")])
def test_filters_timestamp_ranges(api, org, key, column):
    early, middle, late = (PatientFactory(organization=org) for _ in range(3))
    set_column(early, **{column: at(1)})
    set_column(middle, **{column: at(10)})
    set_column(late, **{column: at(20)})

    assert filtered(api, {key: {"from": "2025-03-05T00:00:00Z"}}) == id_set(middle, late)
    assert filtered(api, {key: {"to": "2025-03-15T00:00:00Z"}}) == id_set(early, middle)
    assert filtered(api, {key: {"from": "2025-03-05T00:00:00Z", "to": "2025-03-15T00:00:00Z"}}) == id_set(middle)
    assert filtered(api, {key: {"from": "2025-03-10T12:00:00Z", "to": "2025-03-10T12:00:00Z"}}) == id_set(middle)
    assert filtered(api, {key: {"from": "2025-03-21T00:00:00Z"}}) == set()


def test_filters_date_of_birth_range(api, org):
    sixties = PatientFactory(organization=org, date_of_birth=date(1965, 6, 1))
    eighties = PatientFactory(organization=org, date_of_birth=date(1985, 2, 28))
    leap = PatientFactory(organization=org, date_of_birth=date(2000, 2, 29))
    PatientFactory(organization=org, date_of_birth=None)

    assert filtered(api, {"dateOfBirth": {"from": "1980-01-01", "to": "1989-12-31"}}) == id_set(eighties)
    assert filtered(api, {"dateOfBirth": {"to": "1985-02-28"}}) == id_set(sixties, eighties)
    assert filtered(api, {"dateOfBirth": {"from": "2000-02-29"}}) == id_set(leap)


def test_filters_has_email_and_has_phone(api, org):
    both = PatientFactory(organization=org)
    email_only = PatientFactory(organization=org, phone_mobile=None)
    phone_only = PatientFactory(organization=org, email=None)
    other_phone_only = PatientFactory(organization=org, email=None, phone_mobile="", phone_other="+39 02 123456")

    assert filtered(api, {"hasEmail": True}) == id_set(both, email_only)
    assert filtered(api, {"hasEmail": False}) == id_set(phone_only, other_phone_only)
    assert filtered(api, {"hasPhone": True}) == id_set(both, phone_only, other_phone_only)
    assert filtered(api, {"hasPhone": False}) == id_set(email_only)
    assert filtered(api, {"hasEmail": True, "hasPhone": True}) == id_set(both)


@pytest.mark.parametrize(
    "key, column",
    [("smsOptOut", "sms_opt_out"), ("emailOptOut", "email_opt_out"), ("whatsappOptOut", "whatsapp_opt_out")],
)
def test_filters_opt_outs(api, org, key, column):
    out = PatientFactory(organization=org, **{column: True})
    still_in = PatientFactory(organization=org)

    assert filtered(api, {key: True}) == id_set(out)
    assert filtered(api, {key: False}) == id_set(still_in)


def test_filters_gender_and_preferred_contact_method(api, org):
    woman_sms = PatientFactory(organization=org, gender="female", preferred_contact_method="sms")
    man_email = PatientFactory(organization=org, gender="male", preferred_contact_method="email")
    other_phone = PatientFactory(organization=org, gender="other", preferred_contact_method="phone")
    PatientFactory(organization=org, gender=None, preferred_contact_method=None)

    assert filtered(api, {"gender": ["female", "other"]}) == id_set(woman_sms, other_phone)
    assert filtered(api, {"gender": ["unknown"]}) == set()
    assert filtered(api, {"preferredContactMethod": ["email", "phone"]}) == id_set(man_email, other_phone)
    assert filtered(api, {"gender": ["female", "male"], "preferredContactMethod": ["email"]}) == id_set(man_email)


def test_filters_city_is_case_insensitive(api, org):
    milano = PatientFactory(organization=org, city="Milano")
    shouting = PatientFactory(organization=org, city="MILANO")
    PatientFactory(organization=org, city="Milano Marittima")
    PatientFactory(organization=org, city="Roma")
    PatientFactory(organization=org, city=None)

    assert filtered(api, {"city": "milano"}) == id_set(milano, shouting)
    assert filtered(api, {"city": "MiLaNo"}) == id_set(milano, shouting)


def test_filters_custom_fields_equality(api, org):
    vip = PatientFactory(organization=org, custom_fields={"vip": True, "insurer": "Unisalute", "referralCode": "A1"})
    vip_other = PatientFactory(organization=org, custom_fields={"vip": True, "insurer": "Generali"})
    PatientFactory(organization=org, custom_fields={"vip": False, "insurer": "Unisalute"})
    PatientFactory(organization=org, custom_fields={})

    assert filtered(api, {"customFields": {"vip": True}}) == id_set(vip, vip_other)
    assert filtered(api, {"customFields": {"vip": True, "insurer": "Unisalute"}}) == id_set(vip)
    assert filtered(api, {"customFields": {"referralCode": "A1"}}) == id_set(vip)
    assert filtered(api, {"customFields": {"vip": "true"}}) == set()


def test_filters_custom_fields_equality_with_null(api, org):
    empty = PatientFactory(organization=org, custom_fields={"referrer": None})
    PatientFactory(organization=org, custom_fields={"referrer": "Dr. Neri"})

    assert filtered(api, {"customFields": {"referrer": None}}) == id_set(empty)


def test_filters_contact_attempts_range(api, org):
    never = PatientFactory(organization=org, contact_attempts=0)
    twice = PatientFactory(organization=org, contact_attempts=2)
    often = PatientFactory(organization=org, contact_attempts=7)

    assert filtered(api, {"contactAttempts": {"min": 1}}) == id_set(twice, often)
    assert filtered(api, {"contactAttempts": {"max": 2}}) == id_set(never, twice)
    assert filtered(api, {"contactAttempts": {"min": 2, "max": 2}}) == id_set(twice)
    assert filtered(api, {"contactAttempts": {"min": 8}}) == set()


def test_filter_keys_are_anded(api, org):
    vip = TagFactory(organization=org)
    match = PatientFactory(
        organization=org, status="lead", city="Milano", gender="female", sms_opt_out=True, tags=[vip]
    )
    PatientFactory(organization=org, status="patient", city="Milano", gender="female", sms_opt_out=True, tags=[vip])
    PatientFactory(organization=org, status="lead", city="Roma", gender="female", sms_opt_out=True, tags=[vip])
    PatientFactory(organization=org, status="lead", city="Milano", gender="male", sms_opt_out=True, tags=[vip])
    PatientFactory(organization=org, status="lead", city="Milano", gender="female", sms_opt_out=False, tags=[vip])
    PatientFactory(organization=org, status="lead", city="Milano", gender="female", sms_opt_out=True)

    filters = {
        "status": ["lead"],
        "city": "milano",
        "gender": ["female"],
        "smsOptOut": True,
        "tagIds": {"any": [str(vip.id)]},
    }
    assert filtered(api, filters) == id_set(match)
    assert filtered(api, filters, q="milano") == id_set(match)
    assert filtered(api, filters, status="patient") == set()


def test_empty_filters_object_filters_nothing(api, org):
    patients = [PatientFactory(organization=org) for _ in range(3)]

    assert filtered(api, {}) == id_set(*patients)


def test_filters_of_exactly_4000_characters_are_accepted(api, org):
    patient = PatientFactory(organization=org, custom_fields={"pad": "x"})
    base = json.dumps({"customFields": {"pad": ""}})
    text = json.dumps({"customFields": {"pad": "y" * (4000 - len(base))}})
    assert len(text) == 4000

    body = page(api, filters=text)

    assert body["items"] == [] and body["total"] == 0
    assert filtered(api, {"customFields": {"pad": "x"}}) == id_set(patient)


def test_filters_over_4000_characters_are_refused(api, org):
    PatientFactory(organization=org)
    base = json.dumps({"customFields": {"pad": ""}})
    text = json.dumps({"customFields": {"pad": "y" * (4001 - len(base))}})
    assert len(text) == 4001

    assert_invalid(api.get(PATIENTS, {"filters": text}), "filters")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("{", id="unclosed"),
        pytest.param("{'city': 'Milano'}", id="single-quotes"),
        pytest.param('{"city": "Milano",}', id="trailing-comma"),
        pytest.param("city=Milano", id="not-json"),
        pytest.param("", id="empty"),
        pytest.param('{"contactAttempts": {"min": NaN}}', id="nan"),
    ],
)
def test_malformed_filters_json_is_refused(api, raw):
    assert_invalid(api.get(PATIENTS, {"filters": raw}), "filters")


@pytest.mark.parametrize("raw", ["[]", '[{"city": "Milano"}]', '"Milano"', "42", "null", "true"])
def test_filters_that_are_not_an_object_are_refused(api, raw):
    assert_invalid(api.get(PATIENTS, {"filters": raw}), "filters")


@pytest.mark.parametrize(
    "filters, name",
    [
        pytest.param({"favouriteFood": "pizza"}, "favouriteFood", id="top-level"),
        pytest.param({"town": "Milano"}, "town", id="near-miss"),
        pytest.param({"city": "Milano", "hasTelephone": True}, "hasTelephone", id="next-to-a-valid-key"),
        pytest.param({"tagIds": {"some": []}}, "some", id="inside-tag-ids"),
        pytest.param({"createdAt": {"since": "2025-01-01T00:00:00Z"}}, "since", id="inside-range"),
        pytest.param({"contactAttempts": {"minimum": 1}}, "minimum", id="inside-count-range"),
    ],
)
def test_unknown_filter_key_is_refused_naming_it(api, filters, name):
    body = assert_invalid(api.get(PATIENTS, {"filters": json.dumps(filters)}), "filters")

    assert name in json.dumps(body["details"]["fields"]["filters"]), body


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param({"status": ["customer"]}, id="status-enum"),
        pytest.param({"status": "lead"}, id="status-not-a-list"),
        pytest.param({"gender": ["robot"]}, id="gender-enum"),
        pytest.param({"preferredContactMethod": ["pigeon"]}, id="contact-method-enum"),
        pytest.param({"leadSourceIds": ["nope"]}, id="lead-source-uuid"),
        pytest.param({"locationIds": ["7d444840-9dc0-01c6-a2b5-3e5c4f3e9a1b"]}, id="location-uuid-version-0"),
        pytest.param({"tagIds": {"any": ["nope"]}}, id="tag-any-uuid"),
        pytest.param({"tagIds": {"all": [42]}}, id="tag-all-number"),
        pytest.param({"tagIds": {"none": "7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b"}}, id="tag-none-not-a-list"),
        pytest.param({"tagIds": ["7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b"]}, id="tag-ids-not-an-object"),
        pytest.param({"dateOfBirth": {"from": "2023-02-29"}}, id="dob-not-a-date"),
        pytest.param({"dateOfBirth": {"to": "01/02/1980"}}, id="dob-format"),
        pytest.param({"createdAt": {"from": "yesterday"}}, id="created-at-not-a-timestamp"),
        pytest.param({"updatedAt": {"to": "2025-13-01T00:00:00Z"}}, id="updated-at-month-13"),
        pytest.param({"createdAt": "2025-01-01T00:00:00Z"}, id="created-at-not-a-range"),
        pytest.param({"contactAttempts": {"min": -1}}, id="attempts-negative"),
        pytest.param({"contactAttempts": {"max": "many"}}, id="attempts-not-a-number"),
        pytest.param({"hasEmail": "perhaps"}, id="has-email-not-boolean"),
        pytest.param({"smsOptOut": "perhaps"}, id="sms-opt-out-not-boolean"),
        pytest.param({"customFields": ["vip"]}, id="custom-fields-not-an-object"),
        pytest.param({"city": ["Milano"]}, id="city-not-a-string"),
    ],
)
def test_invalid_values_inside_filters_are_refused(api, org, filters):
    PatientFactory(organization=org)

    assert_invalid(api.get(PATIENTS, {"filters": json.dumps(filters)}), "filters")


# --- search ----------------------------------------------------------------------------------------------------


@pytest.fixture
def mario(org):
    return PatientFactory(
        organization=org,
        first_name="Mario",
        last_name="Rossi",
        email="mario.rossi@example.com",
        phone_mobile="+39 333 1234567",
        phone_other=None,
        fiscal_code="RSSMRA80A01H501U",
        address_line1="via Roma 10",
        city="Milano",
        postal_code="20121",
    )


@pytest.fixture
def noise(org):
    people = [
        (
            "Giulia",
            "Bianchi",
            "giulia.bianchi@example.org",
            "+39 347 9876543",
            "BNCGLI92C41L219X",
            "corso Francia 3",
            "Torino",
            "10138",
        ),
        (
            "Luca",
            "Ferrari",
            "l.ferrari@posta.it",
            "+39 320 5550001",
            "FRRLCU75D12F839K",
            "piazza Dante 7",
            "Napoli",
            "80135",
        ),
        (
            "Anna",
            "Verdi",
            "anna.verdi@example.net",
            "+39 389 4440002",
            "VRDNNA88E50D612Z",
            "viale Europa 21",
            "Firenze",
            "50126",
        ),
        (
            "Paolo",
            "Esposito",
            "paolo.esposito@mail.com",
            "+39 366 7770003",
            "SPSPLA69H03A944Q",
            "largo Augusto 2",
            "Bologna",
            "40121",
        ),
        (
            "Chiara",
            "Colombo",
            "chiara.colombo@example.org",
            "+39 340 6660004",
            "CLMCHR95M45G273T",
            "corso Vittorio 88",
            "Palermo",
            "90133",
        ),
    ]
    return [
        PatientFactory(
            organization=org,
            first_name=first,
            last_name=last,
            email=email,
            phone_mobile=phone,
            phone_other=None,
            fiscal_code=fiscal,
            address_line1=street,
            city=city,
            postal_code=postal,
        )
        for first, last, email, phone, fiscal, street, city, postal in people
    ]


@pytest.mark.parametrize(
    "q",
    [
        pytest.param("rosi", id="surname-typo"),
        pytest.param("Rossi", id="surname"),
        pytest.param("Mrio Rossi", id="full-name-typo"),
        pytest.param("mario rossi", id="full-name"),
        pytest.param("+39 333-123", id="phone-formatted-prefix"),
        pytest.param("3331234", id="phone-digits"),
        pytest.param("333 1234567", id="phone-spaced"),
        pytest.param("RSSMRA80", id="fiscal-code-prefix"),
        pytest.param("rssmra80a01h501u", id="fiscal-code-lower"),
        pytest.param("milano", id="city"),
        pytest.param("Milan", id="city-truncated"),
        pytest.param("20121", id="postal-code"),
        pytest.param("via roma", id="street"),
        pytest.param("mario.rossi@example.com", id="email"),
        pytest.param("mario.rossi@exmaple.com", id="email-typo"),
    ],
)
def test_search_finds_mario(api, mario, noise, q):
    body = page(api, q=q, limit=100)

    assert str(mario.id) in ids(body), (q, body)
    assert body["total"] == len(body["items"])
    assert body["total"] < 1 + len(noise), (q, body)


@pytest.mark.parametrize("q", ["zzzzqqq", "Xylophone", "99999999"])
def test_search_for_something_unrelated_finds_nothing(api, mario, noise, q):
    assert page(api, q=q) == {"items": [], "total": 0, "limit": 25, "offset": 0}


def test_search_finds_noise_people_by_their_own_details(api, mario, noise):
    giulia, luca = noise[0], noise[1]

    assert str(giulia.id) in ids(page(api, q="Bianci"))
    assert str(luca.id) in ids(page(api, q="+39 320 555"))
    assert str(mario.id) not in ids(page(api, q="Bianci"))


def test_search_by_phone_matches_digits_of_the_other_phone_too(api, org, noise):
    patient = PatientFactory(organization=org, phone_mobile=None, phone_other="(02) 8765-4321", email="x@example.com")

    assert str(patient.id) in ids(page(api, q="0287654321"))
    assert str(patient.id) in ids(page(api, q="02 8765 4321"))


def test_search_respects_filters_and_archived(api, org, mario, noise):
    gone = archived(
        org, first_name="Mario", last_name="Rossi", email="m.rossi@old.example.com", phone_mobile="+39 333 0000009"
    )

    assert str(gone.id) not in listed(api, q="rossi")
    assert str(gone.id) in listed(api, q="rossi", includeArchived="true")
    assert listed(api, q="rossi", status="archived") == id_set(gone)
    assert filtered(api, {"city": "Torino"}, q="rossi") == set()


def test_sort_relevance_puts_the_best_match_first(api, org, mario, noise):
    rossini = PatientFactory(organization=org, first_name="Maria", last_name="Rossini", city="Roma", email="mr@x.it")
    rossetti = PatientFactory(organization=org, first_name="Marino", last_name="Rossetti", email="rossetti@x.it")
    for index, patient in enumerate([mario, rossini, rossetti]):
        set_column(patient, created_at=at(1 + index))  # mario oldest: createdAt order would put him last

    body = page(api, q="mario rossi", sort="relevance")

    assert ids(body)[0] == str(mario.id)
    assert body["total"] == len(body["items"])
    assert page(api, q="mario rossi", sort="relevance", direction="desc")["items"][0]["id"] == str(mario.id)
    ascending = page(api, q="mario rossi", sort="relevance", direction="asc")
    assert ids(ascending)[-1] == str(mario.id)
    assert set(ids(ascending)) == set(ids(body))


def test_search_pages_stably_under_relevance(api, org):
    for _ in range(12):
        PatientFactory(organization=org, first_name="Mario", last_name="Rossi", city="Milano")

    seen = []
    for offset in range(0, 12, 5):
        body = page(api, q="rossi", sort="relevance", limit=5, offset=offset)
        assert body["total"] == 12
        seen.extend(ids(body))

    assert len(seen) == len(set(seen)) == 12


@pytest.mark.parametrize(
    "q",
    [
        pytest.param("", id="empty"),
        pytest.param(" ", id="one-space"),
        pytest.param("    ", id="spaces"),
        pytest.param("\t\n", id="whitespace"),
        pytest.param("ros\x00si", id="nul"),
        pytest.param("\x00", id="only-nul"),
    ],
)
def test_invalid_q_is_400_naming_q(api, mario, q):
    assert_invalid(api.get(PATIENTS, {"q": q}), "q")


@pytest.mark.parametrize("q", ["%", "_", "\\", "'", "rossi%", "ro_si", "' OR 1=1 --", "😀", "Ångström"])
def test_search_with_special_characters_does_not_fail(api, mario, noise, q):
    body = page(api, q=q)

    assert body["total"] == len(body["items"])
    if q in ("%", "_", "\\", "'"):
        assert body["total"] == 0


# --- tenancy ---------------------------------------------------------------------------------------------------


def test_another_practice_never_sees_my_patients(api, org, outsider):
    mine = [
        PatientFactory(organization=org, first_name="Mario", last_name="Rossi", city="Milano", status="lead")
        for _ in range(3)
    ]
    tag = TagFactory(organization=org)
    mine.append(PatientFactory(organization=org, first_name="Mario", last_name="Rossi", tags=[tag]))
    mine_archived = archived(org, first_name="Mario", last_name="Rossi")
    theirs = PatientFactory(organization=outsider.organization, first_name="Mario", last_name="Rossi", city="Milano")
    their_client = outsider.api_client()

    assert listed(their_client) == id_set(theirs)
    assert listed(their_client, q="mario rossi") == id_set(theirs)
    assert listed(their_client, q="rosi", sort="relevance") == id_set(theirs)
    assert listed(their_client, includeArchived="true") == id_set(theirs)
    assert listed(their_client, status="archived") == set()
    assert listed(their_client, tagId=str(tag.id)) == set()
    assert filtered(their_client, {"city": "milano"}) == id_set(theirs)
    assert filtered(their_client, {"tagIds": {"any": [str(tag.id)]}}) == set()
    assert page(their_client, embed="tags")["total"] == 1

    assert listed(api) == id_set(*mine)
    assert listed(api, q="mario rossi") == id_set(*mine)
    assert listed(api, includeArchived="true") == id_set(*mine, mine_archived)
    assert page(api)["total"] == 4


# --- query budget and the search index -------------------------------------------------------------------------


def _list_with_tags(org, count: int) -> None:
    tags = [TagFactory(organization=org) for _ in range(3)]
    for index in range(count):
        PatientFactory(organization=org, tags=tags[: index % 4])


def test_list_with_embedded_tags_uses_a_small_fixed_number_of_queries(api, org, django_assert_max_num_queries):
    _list_with_tags(org, 25)
    api.get(PATIENTS)  # warm up the credential's first-use bookkeeping

    with django_assert_max_num_queries(8):
        body = page(api, embed="tags")

    assert len(body["items"]) == 25


def test_query_count_does_not_grow_with_the_page(api, org):
    _list_with_tags(org, 5)
    api.get(PATIENTS)

    with CaptureQueriesContext(connection) as five:
        assert len(page(api, embed="tags", q="example")["items"]) == 5
    _list_with_tags(org, 20)
    with CaptureQueriesContext(connection) as twenty_five:
        assert len(page(api, embed="tags", q="example")["items"]) == 25

    assert len(twenty_five.captured_queries) == len(five.captured_queries)


CROWD = 8000


@pytest.fixture
def crowded(org, mario, noise):
    """Two practices with enough rows (and statistics on them) for the planner to weigh its indexes as it would in
    production; with a handful of rows an index on organization alone is cheaper than the trigram one."""
    other = OrganizationFactory()
    with connection.cursor() as cursor:
        for organization in (org, other):
            cursor.execute(
                """
                INSERT INTO patients_patient (
                    id, organization_id, created_at, updated_at, first_name, last_name, email, phone_mobile, city,
                    postal_code, sts_opposition, sms_opt_out, email_opt_out, whatsapp_opt_out, custom_fields, status,
                    status_before_archive, contact_attempts
                )
                SELECT gen_random_uuid(), %s, now(), now(), 'Person' || n, 'Family' || (n %% 97),
                       'person' || n || '@example.org', '+39 340 ' || lpad(n::text, 7, '0'),
                       (ARRAY['Torino', 'Napoli', 'Firenze', 'Bologna'])[1 + n %% 4], (10000 + n)::text,
                       false, false, false, false, '{}'::jsonb, 'lead', '', 0
                FROM generate_series(1, %s) AS n
                """,
                [organization.id, CROWD],
            )
    with connection.cursor() as cursor:
        for index in ("patients_searchterm_trgm_idx", "patients_search_keys_idx"):
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
        cursor.execute("ANALYZE patients_patient")
        cursor.execute("ANALYZE patients_searchterm")
    return mario


def _plan(queryset) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        sql, params = queryset.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_search_uses_the_vocabulary_and_keyed_words_gin_indexes(org, crowded):
    """Both steps of the search are index scans: the practice's similar terms (trigram GIN on the vocabulary),
    then the patients holding one of them (GIN on their practice-keyed words)."""
    from apps.patients.selectors import patient_ordered

    plans = {}
    for q in (
        "rosi",
        "Mrio Rossi",
        "milano",
        "via roma",
        "RSSMRA80",
        "mario.rossi@exmaple.com",
        "3331234",
        "+39 333-123",
        "20121",
    ):
        for sort in ("createdAt", "relevance"):
            query = PatientQuery(q=q, sort=sort)
            queryset = patient_ordered(patient_filtered(organization=org, query=query), query)
            plans[(q, sort)] = _plan(queryset)
            assert str(crowded.id) in {str(i) for i in queryset.values_list("id", flat=True)}, (q, sort)

    missing = {
        key: plan
        for key, plan in plans.items()
        if "patients_searchterm_trgm_idx" not in plan or "patients_search_keys_idx" not in plan
    }
    assert not missing, "\n\n".join(f"{key}:\n{plan}" for key, plan in missing.items())


def test_default_list_orders_by_created_at_descending_within_the_day(api, org):
    same_day = [PatientFactory(organization=org) for _ in range(3)]
    for offset, patient in enumerate(same_day):
        set_column(patient, created_at=at(5) + timedelta(seconds=offset))

    assert ids(page(api)) == [str(p.id) for p in reversed(same_day)]


def _patients_statements(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if '"patients_' in q["sql"]]


def test_the_default_list_is_two_patient_statements_and_three_with_tags(api, org):
    _list_with_tags(org, 25)
    api.get(PATIENTS)

    with CaptureQueriesContext(connection) as plain:
        assert len(page(api)["items"]) == 25
    with CaptureQueriesContext(connection) as tagged:
        assert len(page(api, embed="tags")["items"]) == 25

    assert len(_patients_statements(plain)) == 2  # the counter row, the page
    assert len(_patients_statements(tagged)) == 3  # and the page's tags


@pytest.mark.parametrize("params", [{}, {"embed": "tags"}, {"embed": "tags", "q": "example"}, {"sort": "lastName"}])
def test_value_rows_render_exactly_what_the_serializer_renders(api, org, params):
    """The list renders from .values() rows; PatientListItemSerializer (the schema) over the model instances gives
    the same items: same keys in the same order, same values."""
    from apps.core.renderers import CamelCaseJSONRenderer
    from apps.patients.public import PatientListItemSerializer
    from apps.patients.selectors import with_tags

    _list_with_tags(org, 6)
    full = PatientFactory(
        organization=org,
        title="Dott.",
        preferred_name="Bea",
        date_of_birth=date(1984, 2, 29),
        city="Milano",
        location=LocationFactory(organization=org),
        lead_source=LeadSourceFactory(organization=org),
        contact_attempts=3,
        sms_opt_out=True,
    )
    set_column(full, archived_at=None, created_at=datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC))
    body = page(api, limit=100, **params)
    by_id = {str(p.id): p for p in with_tags(Patient.objects.for_org(org))}
    expected = PatientListItemSerializer(
        [by_id[item["id"]] for item in body["items"]], many=True, context={"embed_tags": "embed" in params}
    ).data

    rendered = json.loads(CamelCaseJSONRenderer().render({"items": expected}))["items"]
    assert [list(item) for item in body["items"]] == [list(item) for item in rendered]
    assert body["items"] == rendered
