"""GET /patients/export: CSV of the list's selection, columns chosen and ordered by letters-only names, restricted by
ids, CSV-injection safe, capped at 10000 rows (EXPORT_TOO_LARGE) and allowed to roles with patient:export only."""

import csv
import io
import json
import uuid

import pytest
from django.test import Client
from django.utils import timezone

from apps.patients.api.serializers import EXPORT_COLUMNS
from apps.patients.models import Patient
from tests import helpers
from tests.factories import PatientFactory, TagFactory

EXPORT = "/patients/export"
DEFAULT_COLUMNS = [
    "id",
    "firstName",
    "lastName",
    "email",
    "phoneMobile",
    "status",
    "dateOfBirth",
    "city",
    "postalCode",
    "createdAt",
]


# --- helpers -----------------------------------------------------------------------------------------------


def assert_error(response, status: int, code: str) -> dict:
    """The envelope (tests.helpers), served as JSON even on a route that answers CSV."""
    assert response["Content-Type"].startswith("application/json"), response.content
    return helpers.assert_error(response, status, code)


def assert_validation_error(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == [field], body
    return body


def export(client: Client, **params):
    return client.get(EXPORT, params)


def csv_rows(response) -> list[list[str]]:
    assert response.status_code == 200, getattr(response, "content", b"")
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.reader(io.StringIO(text)))


def as_dicts(response) -> list[dict]:
    header, *rows = csv_rows(response)
    return [dict(zip(header, row, strict=True)) for row in rows]


def exported_ids(response) -> set[str]:
    return {row["id"] for row in as_dicts(response)}


# --- shape ------------------------------------------------------------------------------------------------------


def test_default_export_is_csv_with_the_default_columns(owner, api):
    patient = PatientFactory(
        organization=owner.organization,
        first_name="Giulia",
        last_name="Bianchi",
        email="giulia@example.com",
        phone_mobile="+39 333 0000001",
        status="patient",
        date_of_birth="1990-02-28",
        city="Torino",
        postal_code="10121",
    )

    response = export(api)

    assert response["Content-Disposition"].startswith("attachment")
    header, *rows = csv_rows(response)
    assert header == DEFAULT_COLUMNS
    assert len(rows) == 1
    row = dict(zip(header, rows[0], strict=True))
    assert row["id"] == str(patient.id)
    assert row["firstName"] == "Giulia"
    assert row["lastName"] == "Bianchi"
    assert row["email"] == "giulia@example.com"
    assert row["phoneMobile"] == "'+39 333 0000001"  # a leading + is neutralised like any formula start
    assert row["status"] == "patient"
    assert row["dateOfBirth"] == "1990-02-28"
    assert row["city"] == "Torino"
    assert row["postalCode"] == "10121"
    assert row["createdAt"].startswith(str(Patient.objects.for_org(owner.organization).get().created_at.year))


def test_an_empty_selection_is_just_the_header(owner, api):
    assert csv_rows(export(api)) == [DEFAULT_COLUMNS]


def test_columns_select_and_order(owner, api):
    PatientFactory(organization=owner.organization, first_name="Marco", last_name="Verdi", email="marco@example.com")

    rows = csv_rows(export(api, columns="email,firstName,lastName"))

    assert rows == [["email", "firstName", "lastName"], ["marco@example.com", "Marco", "Verdi"]]


def test_booleans_nulls_and_tags_are_rendered_as_text(owner, api):
    org = owner.organization
    alpha, beta = TagFactory(organization=org, name="Alpha"), TagFactory(organization=org, name="Beta")
    PatientFactory(organization=org, first_name="Tagged", sms_opt_out=True, city=None, tags=[beta, alpha])

    rows = csv_rows(export(api, columns="firstName,smsOptOut,emailOptOut,city,tags,contactAttempts"))

    assert rows == [
        ["firstName", "smsOptOut", "emailOptOut", "city", "tags", "contactAttempts"],
        ["Tagged", "true", "false", "", "Alpha;Beta", "0"],
    ]


@pytest.mark.parametrize(
    "columns",
    [
        "firstName,shoeSize",
        "medicalAlert",
        "note",
        "firstName,note",
        "first_name",
        "first name",
        "firstName,",
        ",firstName",
        "firstName;lastName",
        "firstName,lastName2",
        "",
        "ﬁrstName",
    ],
)
def test_bad_columns_are_400_naming_columns(owner, api, columns):
    PatientFactory(organization=owner.organization, medical_alert="penicillin", note="private")

    response = export(api, columns=columns)

    assert_validation_error(response, "columns")


def test_errors_stay_json_even_when_csv_is_asked_for(owner, api):
    response = api.get(EXPORT, {"columns": "note"}, HTTP_ACCEPT="text/csv")

    assert_validation_error(response, "columns")


@pytest.mark.parametrize("param", ["limit", "offset", "embed", "colums"])
def test_unknown_query_parameters_are_400(owner, api, param):
    response = export(api, **{param: "1"})

    assert_validation_error(response, param)


# --- selection ------------------------------------------------------------------------------------------------------


def test_ids_restrict_the_export(owner, api):
    org = owner.organization
    first, second, third = (PatientFactory(organization=org) for _ in range(3))

    response = export(api, ids=f"{first.id},{third.id}")

    assert exported_ids(response) == {str(first.id), str(third.id)}
    assert str(second.id) not in exported_ids(export(api, ids=str(first.id)))


@pytest.mark.parametrize(
    "bad",
    [
        lambda good: str(good)[:35],
        lambda good: f"{good},{str(uuid.uuid4())[:35]}",
        lambda good: "not-a-uuid",
        lambda good: f"{good},",
        lambda good: f"{good}, {uuid.uuid4()}",
        lambda good: f"{good};{uuid.uuid4()}",
        lambda good: str(good).replace("-", "") + "abcd",
        lambda good: "",
    ],
)
def test_bad_ids_are_400_naming_ids(owner, api, bad):
    patient = PatientFactory(organization=owner.organization)

    response = export(api, ids=bad(patient.id))

    assert_validation_error(response, "ids")


def test_the_lists_filters_apply(owner, api):
    org = owner.organization
    tag = TagFactory(organization=org)
    lead = PatientFactory(organization=org, status="lead", last_name="Rossi", tags=[tag])
    patient = PatientFactory(organization=org, status="patient", last_name="Esposito", city="Napoli")
    archived = PatientFactory(organization=org, status="patient", last_name="Ferrari")
    assert api.post(f"/patients/{archived.id}/archive", {}, content_type="application/json").status_code == 200
    survivor = PatientFactory(organization=org, status="patient", last_name="Romano")
    duplicate = PatientFactory(organization=org, status="patient", last_name="Romano")
    merged = api.post(
        f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}, content_type="application/json"
    )
    assert merged.status_code == 200, merged.content

    assert exported_ids(export(api)) == {str(lead.id), str(patient.id), str(survivor.id)}
    assert exported_ids(export(api, status="lead")) == {str(lead.id)}
    assert exported_ids(export(api, status="archived")) == {str(archived.id)}
    assert exported_ids(export(api, includeArchived="true")) == {
        str(lead.id),
        str(patient.id),
        str(archived.id),
        str(survivor.id),
    }
    assert exported_ids(export(api, filters=json.dumps({"status": ["patient"]}))) == {str(patient.id), str(survivor.id)}
    assert exported_ids(export(api, filters=json.dumps({"city": "napoli"}))) == {str(patient.id)}
    assert exported_ids(export(api, tagId=str(tag.id))) == {str(lead.id)}
    assert exported_ids(export(api, q="Esposito")) == {str(patient.id)}
    assert exported_ids(export(api, q="Esposto")) == {str(patient.id)}  # typo-tolerant like the list
    assert exported_ids(export(api, ids=f"{duplicate.id},{lead.id}")) == {str(lead.id)}


def test_sort_and_direction_order_the_rows(owner, api):
    org = owner.organization
    for name in ("Carla", "anna", "Bruno"):
        PatientFactory(organization=org, first_name=name)

    ascending = [row["firstName"] for row in as_dicts(export(api, sort="firstName", direction="asc"))]
    descending = [row["firstName"] for row in as_dicts(export(api, sort="firstName", direction="desc"))]

    assert ascending == ["anna", "Bruno", "Carla"]
    assert descending == ["Carla", "Bruno", "anna"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "gone"}, "status"),
        ({"sort": "shoeSize"}, "sort"),
        ({"direction": "up"}, "direction"),
        ({"filters": "{not json"}, "filters"),
        ({"filters": json.dumps({"shoeSize": 42})}, "filters"),
        ({"filters": "x" * 4001}, "filters"),
        ({"tagId": "not-a-uuid"}, "tagId"),
        ({"includeArchived": "yes"}, "includeArchived"),
        ({"sort": "relevance"}, "sort"),
    ],
)
def test_bad_list_parameters_are_400_on_export_too(owner, api, params, field):
    response = export(api, **params)

    assert_validation_error(response, field)


def test_another_practices_patients_are_never_exported(owner, outsider, api):
    mine = PatientFactory(organization=owner.organization, last_name="Mine")
    theirs = PatientFactory(organization=outsider.organization, last_name="Theirs")

    assert exported_ids(export(api)) == {str(mine.id)}
    assert exported_ids(export(api, ids=str(theirs.id))) == set()
    assert exported_ids(export(api, ids=f"{theirs.id},{mine.id}")) == {str(mine.id)}
    assert exported_ids(export(api, q="Theirs")) == set()
    assert exported_ids(export(api, includeArchived="true", columns="id")) == {str(mine.id)}


# --- CSV injection ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1+1", "'\t=1+1"),
        ("Plain", "Plain"),
        ("O'Brien", "O'Brien"),
        ("Anna=Maria", "Anna=Maria"),
        ('Quote "me", please', 'Quote "me", please'),
        ("Line\nbreak", "Line\nbreak"),
    ],
)
def test_cells_a_spreadsheet_would_run_are_neutralised(owner, api, value, expected):
    PatientFactory(organization=owner.organization, first_name=value, last_name=value)

    rows = csv_rows(export(api, columns="firstName,lastName"))

    assert rows == [["firstName", "lastName"], [expected, expected]]


def test_every_exported_column_is_neutralised(owner, api):
    PatientFactory(
        organization=owner.organization,
        first_name="=1",
        email="=x@example.com",
        city="@city",
        fiscal_code="+fc",
        preferred_name="-nick",
    )

    (row,) = as_dicts(export(api, columns="firstName,email,city,fiscalCode,preferredName"))

    assert row == {
        "firstName": "'=1",
        "email": "'=x@example.com",
        "city": "'@city",
        "fiscalCode": "'+fc",
        "preferredName": "'-nick",
    }


def test_every_export_column_can_be_asked_for_by_name(owner, api):
    """The columns parameter takes letters-only names, so every column the export offers must have one."""
    PatientFactory(organization=owner.organization, address_line1="Via Roma 1", address_line2="Scala B")

    for name in EXPORT_COLUMNS:
        response = export(api, columns=name)
        assert response.status_code == 200, (name, response.content)
        assert csv_rows(response)[0] == [name]


# --- the cap --------------------------------------------------------------------------------------------------------


def _bulk(organization, count: int, **fields) -> None:
    Patient.objects.bulk_create(
        [
            Patient(
                organization=organization,
                first_name=f"P{n}",
                email=f"p{n}.{uuid.uuid4().hex[:6]}@example.com",
                **fields,
            )
            for n in range(count)
        ],
        batch_size=5000,
    )


def test_exactly_10000_rows_export_and_10001_are_export_too_large(owner, outsider, api):
    org = owner.organization
    _bulk(org, 10_000)
    _bulk(outsider.organization, 5)

    response = export(api, columns="id,firstName")
    text = b"".join(response.streaming_content).decode("utf-8")
    lines = text.splitlines()
    assert response.status_code == 200
    assert len(lines) == 10_001
    assert lines[0] == "id,firstName"
    assert len(set(lines[1:])) == 10_000

    _bulk(org, 1, status="patient")
    too_large = export(api, columns="id,firstName")

    assert_error(too_large, 400, "EXPORT_TOO_LARGE")
    assert not too_large.streaming  # refused before any row is sent

    # The cap counts matching rows, not the practice: a narrower selection exports.
    narrowed = csv_rows(export(api, columns="firstName", status="patient"))
    assert narrowed == [["firstName"], ["P0"]]


def test_archived_rows_outside_the_selection_do_not_count_towards_the_cap(owner, api):
    org = owner.organization
    _bulk(org, 10_000)
    _bulk(org, 5, status="archived", archived_at=timezone.now())

    response = export(api, columns="id")
    assert len(csv_rows(response)) == 10_001
    assert_error(export(api, columns="id", includeArchived="true"), 400, "EXPORT_TOO_LARGE")


# --- permissions ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["owner", "manager", "analyst"])
def test_roles_with_patient_export_may_export(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    patient = PatientFactory(organization=owner.organization)

    assert exported_ids(export(member.api_client())) == {str(patient.id)}


@pytest.mark.parametrize("role", ["front_desk", "telesales", "dentist", "hygienist", "nurse"])
def test_roles_without_patient_export_get_403(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    PatientFactory(organization=owner.organization)

    response = export(member.api_client())

    assert_error(response, 403, "PERMISSION_DENIED")


def test_export_needs_a_credential(owner):
    PatientFactory(organization=owner.organization)

    response = Client().get(EXPORT)

    assert_error(response, 401, "UNAUTHENTICATED")


# --- long selections: GET holds 1000 ids, POST holds 10000 (issue 26 §3) ------------------------------------------


def post_export(client: Client, body):
    return client.post(EXPORT, json.dumps(body), content_type="application/json")


def test_get_takes_1000_ids_and_1001_are_400_pointing_to_post(owner, api):
    patient = PatientFactory(organization=owner.organization)
    ids = [str(patient.id)] + [str(uuid.uuid4()) for _ in range(999)]

    assert exported_ids(export(api, ids=",".join(ids))) == {str(patient.id)}
    assert_validation_error(export(api, ids=",".join([*ids, str(uuid.uuid4())])), "ids")


def test_post_exports_a_selection_of_10000_ids_with_the_lists_parameters(owner, outsider, api):
    mine = [PatientFactory(organization=owner.organization, city="Leeds") for _ in range(3)]
    other_city = PatientFactory(organization=owner.organization, city="York")
    theirs = PatientFactory(organization=outsider.organization, city="Leeds")
    ids = [str(p.id) for p in [*mine, other_city, theirs]] + [str(uuid.uuid4()) for _ in range(9995)]

    response = post_export(
        api, {"ids": ids, "columns": "id,city", "filters": json.dumps({"city": "Leeds"}), "sort": "createdAt"}
    )

    header, *rows = csv_rows(response)
    assert header == ["id", "city"]
    assert {row[0] for row in rows} == {str(p.id) for p in mine}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ids": [str(uuid.uuid4())] * 10001}, "ids"),
        ({"ids": []}, "ids"),
        ({"ids": ["not-a-uuid"]}, "ids"),
        ({"ids": "a,b"}, "ids"),
        ({"colums": "id"}, "colums"),
        ({"sort": "shoeSize"}, "sort"),
        ({"filters": {"city": "Leeds"}}, "filters"),
        ({"columns": 5}, "columns"),
        ({"ids": None}, "ids"),
    ],
    ids=[
        "10001-ids",
        "empty",
        "not-a-uuid",
        "a-string",
        "unknown-key",
        "bad-sort",
        "filters-object",
        "columns-int",
        "ids-null",
    ],
)
def test_post_export_refuses_bad_bodies_naming_the_field(owner, api, body, field):
    assert_validation_error(post_export(api, body), field)


def test_post_export_needs_patient_export_and_a_credential(owner, member_factory):
    analyst_without = member_factory(role="dentist", organization=owner.organization)
    assert post_export(analyst_without.api_client(), {"ids": [str(uuid.uuid4())]}).status_code == 403
    assert assert_error(post_export(Client(), {}), 401, "UNAUTHENTICATED")
