"""The procedure catalogue (seeded on first read) and price-list fees."""

import pytest

from apps.plans.models import Fee, Procedure
from apps.plans.rules import STARTER_PROCEDURES
from tests.conftest import make_member
from tests.factories import PriceListFactory
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def test_the_first_read_seeds_the_starter_catalogue_once_in_the_practices_currency(client, practice):
    first = client.get("/clinical/procedures?limit=200")
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["total"] == len(STARTER_PROCEDURES)
    crown = next(row for row in body["items"] if row["code"] == "CROWN")
    assert crown["defaultFee"] == 65000 and crown["currency"] == "GBP"
    assert crown["toothRequired"] is True and crown["surfacesRequired"] is False
    filling = next(row for row in body["items"] if row["code"] == "FILL-CO")
    assert filling["surfacesRequired"] is True
    assert [row["code"] for row in body["items"]] == sorted(row["code"] for row in body["items"])

    again = client.get("/clinical/procedures?limit=200")
    assert again.json()["total"] == len(STARTER_PROCEDURES)
    assert Procedure.objects.for_org(practice).count() == len(STARTER_PROCEDURES)


def test_list_filters_by_category_and_pages(client, procedures):
    response = client.get("/clinical/procedures?category=implant&limit=2&offset=1")
    body = response.json()
    assert body["total"] == 3 and body["limit"] == 2 and body["offset"] == 1
    assert [row["code"] for row in body["items"]] == ["IMP-AB", "IMP-CR"]


def test_list_refuses_bad_query(client):
    body = assert_error(client.get("/clinical/procedures?category=magic"), 400, "VALIDATION_ERROR")
    assert "category" in body["details"]["fields"]


def test_owner_creates_a_procedure_and_codes_are_unique_case_insensitively(owner_client, practice):
    response = owner_client.post(
        "/clinical/procedures",
        {"code": "SDF", "name": "Silver diamine fluoride", "category": "preventive", "defaultFee": 2250},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["code"] == "SDF" and body["defaultFee"] == 2250 and body["currency"] == "GBP"
    assert body["archived"] is False
    # The catalogue was seeded before the first write, so the starter set is there too.
    assert Procedure.objects.for_org(practice).count() == len(STARTER_PROCEDURES) + 1

    duplicate = owner_client.post(
        "/clinical/procedures", {"code": "sdf", "name": "Again", "defaultFee": 1}, content_type="application/json"
    )
    assert_error(duplicate, 409, "PROCEDURE_CODE_TAKEN")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"code": "X1", "name": "Thing", "defaultFee": -1}, "defaultFee"),
        ({"code": "X1", "name": "Thing", "defaultFee": "100"}, "defaultFee"),
        ({"code": "X1", "name": "Thing", "defaultFee": 10.5}, "defaultFee"),
        ({"code": "X 1", "name": "Thing", "defaultFee": 1}, "code"),
        ({"code": "X1", "name": "  ", "defaultFee": 1}, "name"),
        ({"code": "X1", "name": "Thing", "defaultFee": 1, "surfacesRequired": True}, "surfacesRequired"),
        ({"code": "X1", "name": "Thing", "defaultFee": 1, "price": 3}, "price"),
    ],
)
def test_procedure_create_refuses_bad_input(owner_client, body, field):
    response = owner_client.post("/clinical/procedures", body, content_type="application/json")
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]


def test_writing_the_catalogue_needs_pms_manage(client, front_desk, procedures):
    # A dentist holds clinical:write, not pms:manage: the practice's prices are the owners' and managers'.
    response = client.post(
        "/clinical/procedures", {"code": "X1", "name": "Thing", "defaultFee": 1}, content_type="application/json"
    )
    assert assert_error(response, 403, "PERMISSION_DENIED")["details"] == {"permission": "pms:manage"}
    crown = procedures["CROWN"]
    refused = client.patch(f"/clinical/procedures/{crown['id']}", {"name": "Cap"}, content_type="application/json")
    assert_error(refused, 403, "PERMISSION_DENIED")
    # Front desk cannot even read the catalogue (no clinical:read).
    desk = front_desk.session_client()
    assert_error(desk.get("/clinical/procedures"), 403, "PERMISSION_DENIED")
    assert_error(desk.get(f"/clinical/procedures/{crown['id']}"), 403, "PERMISSION_DENIED")


def test_update_and_archive_a_procedure(owner_client, procedures, client):
    crown = procedures["CROWN"]
    response = owner_client.patch(
        f"/clinical/procedures/{crown['id']}",
        {"name": "Crown (porcelain)", "defaultFee": 70000, "archived": True},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Crown (porcelain)" and response.json()["archived"] is True
    listed = client.get("/clinical/procedures?limit=200").json()["items"]
    assert crown["id"] not in {row["id"] for row in listed}
    with_archived = client.get("/clinical/procedures?limit=200&includeArchived=true").json()["items"]
    assert crown["id"] in {row["id"] for row in with_archived}
    assert client.get(f"/clinical/procedures/{crown['id']}").json()["defaultFee"] == 70000

    filling = procedures["FILL-CO"]
    bad = owner_client.patch(
        f"/clinical/procedures/{filling['id']}", {"toothRequired": False}, content_type="application/json"
    )
    assert "surfacesRequired" in assert_error(bad, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert_error(
        owner_client.patch(f"/clinical/procedures/{filling['id']}", {}, content_type="application/json"),
        400,
        "VALIDATION_ERROR",
    )
    assert client.get(f"/clinical/procedures/{filling['id']}").json()["toothRequired"] is True


def test_another_practices_procedure_is_404_and_unchanged(other, procedures):
    crown = procedures["CROWN"]
    outsider = make_member(role="owner", organization=other.organization).session_client()
    assert_error(outsider.get(f"/clinical/procedures/{crown['id']}"), 404, "NOT_FOUND")
    response = outsider.patch(f"/clinical/procedures/{crown['id']}", {"name": "Mine"}, content_type="application/json")
    assert_error(response, 404, "NOT_FOUND")
    assert Procedure.objects.for_org(other.organization).filter(id=crown["id"]).count() == 0
    assert Procedure.objects.unscoped().get(id=crown["id"]).name == "Crown"


# --- fees -----------------------------------------------------------------------------------------------------------


def test_set_list_and_clear_price_list_fees(owner_client, client, procedures, price_list, practice):
    crown, exam = procedures["CROWN"], procedures["EXAM"]
    response = owner_client.put(
        f"/clinical/price-lists/{price_list.id}/fees",
        {"fees": [{"procedureId": crown["id"], "amount": 55000}, {"procedureId": exam["id"], "amount": 0}]},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["priceListId"] == str(price_list.id)
    assert {(row["procedureCode"], row["amount"], row["currency"], row["defaultFee"]) for row in body["items"]} == {
        ("CROWN", 55000, "GBP", 65000),
        ("EXAM", 0, "GBP", 5000),
    }
    # Setting again updates in place; null clears (the default fee applies again).
    again = owner_client.put(
        f"/clinical/price-lists/{price_list.id}/fees",
        {"fees": [{"procedureId": crown["id"], "amount": 56000}, {"procedureId": exam["id"], "amount": None}]},
        content_type="application/json",
    )
    assert [(row["procedureCode"], row["amount"]) for row in again.json()["items"]] == [("CROWN", 56000)]
    assert client.get(f"/clinical/price-lists/{price_list.id}/fees").json()["items"][0]["amount"] == 56000
    assert Fee.objects.for_org(practice).count() == 1


@pytest.mark.parametrize(
    "fees",
    [
        [],
        [{"amount": 1}],
        [{"procedureId": "not-a-uuid", "amount": 1}],
        [{"procedureId": "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f", "amount": 1}],
        "CROWN",
    ],
)
def test_fee_set_refuses_bad_input(owner_client, price_list, fees, practice):
    response = owner_client.put(
        f"/clinical/price-lists/{price_list.id}/fees", {"fees": fees}, content_type="application/json"
    )
    assert "fees" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not Fee.objects.for_org(practice).exists()


def test_fee_set_refuses_negative_and_repeated(owner_client, price_list, procedures):
    crown = procedures["CROWN"]["id"]
    for fees in ([{"procedureId": crown, "amount": -5}], [{"procedureId": crown, "amount": 1}] * 2):
        response = owner_client.put(
            f"/clinical/price-lists/{price_list.id}/fees", {"fees": fees}, content_type="application/json"
        )
        assert_error(response, 400, "VALIDATION_ERROR")


def test_fees_of_another_practice(other, owner_client, price_list, procedures, practice):
    """Another practice's price list in the path is 404; another practice's procedure in the body is 400."""
    theirs = PriceListFactory(organization=other.organization)
    crown = procedures["CROWN"]["id"]
    for response in (
        owner_client.get(f"/clinical/price-lists/{theirs.id}/fees"),
        owner_client.put(
            f"/clinical/price-lists/{theirs.id}/fees",
            {"fees": [{"procedureId": crown, "amount": 1}]},
            content_type="application/json",
        ),
    ):
        assert_error(response, 404, "NOT_FOUND")
    their_owner = make_member(role="owner", organization=other.organization).session_client()
    their_procedure = their_owner.get("/clinical/procedures").json()["items"][0]["id"]
    response = owner_client.put(
        f"/clinical/price-lists/{price_list.id}/fees",
        {"fees": [{"procedureId": their_procedure, "amount": 1}]},
        content_type="application/json",
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    assert not Fee.objects.for_org(practice).exists() and not Fee.objects.for_org(other.organization).exists()


def test_setting_fees_needs_pms_manage_and_reading_them_clinical_read(client, front_desk, price_list, procedures):
    response = client.put(
        f"/clinical/price-lists/{price_list.id}/fees",
        {"fees": [{"procedureId": procedures["CROWN"]["id"], "amount": 1}]},
        content_type="application/json",
    )
    assert assert_error(response, 403, "PERMISSION_DENIED")["details"] == {"permission": "pms:manage"}
    assert client.get(f"/clinical/price-lists/{price_list.id}/fees").status_code == 200
    assert_error(
        front_desk.session_client().get(f"/clinical/price-lists/{price_list.id}/fees"), 403, "PERMISSION_DENIED"
    )
