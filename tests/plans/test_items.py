"""Plan items: teeth and surfaces, the fee rules, totals per phase and plan, changes and removal."""

import pytest

from apps.plans.models import PlanItem
from tests.helpers import assert_error
from tests.plans.conftest import add_item, plan_events

pytestmark = pytest.mark.django_db


def _set_fee(owner_client, price_list, procedure_id, amount):
    response = owner_client.put(
        f"/clinical/price-lists/{price_list.id}/fees",
        {"fees": [{"procedureId": procedure_id, "amount": amount}]},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content


def test_add_an_item(client, plan, procedures, practitioner, practice):
    response = add_item(
        client,
        plan["id"],
        procedures["FILL-CO"]["id"],
        tooth=36,
        surfaces=["O", "M", "D"],
        quantity=1,
        phase=2,
        practitionerId=str(practitioner.id),
    )
    assert response.status_code == 201, response.content
    item = response.json()
    assert item["planId"] == plan["id"] and item["procedureCode"] == "FILL-CO"
    assert item["tooth"] == 36 and item["surfaces"] == ["M", "O", "D"]
    assert item["phase"] == 2 and item["quantity"] == 1 and item["status"] == "planned"
    assert item["fee"] == 12000 and item["feeSource"] == "default" and item["lineTotal"] == 12000
    assert item["practitionerId"] == str(practitioner.id)

    event = plan_events(practice)[-1]
    assert event.data["action"] == "item_added" and event.data["changedFields"] == ["items"]
    assert event.data["itemId"] == item["id"]
    assert event.data["totals"] == {"total": 12000, "completed": 0, "remaining": 12000, "itemCount": 1}


def test_primary_teeth_and_incisal_surfaces(client, plan, procedures):
    ok = add_item(client, plan["id"], procedures["FILL-GI"]["id"], tooth=51, surfaces=["I", "M"])
    assert ok.status_code == 201, ok.content
    assert ok.json()["surfaces"] == ["M", "I"]
    assert add_item(client, plan["id"], procedures["FILL-GI"]["id"], tooth=85, surfaces=["O"]).status_code == 201


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"tooth": 19}, "tooth"),
        ({"tooth": 90}, "tooth"),
        ({"tooth": 10}, "tooth"),
        ({"tooth": 56}, "tooth"),
        ({"tooth": "16"}, "tooth"),
        ({"tooth": 16.0}, "tooth"),
        ({}, "tooth"),  # a crown needs a tooth
        ({"tooth": 11, "surfaces": ["O"]}, "surfaces"),  # no occlusal surface on an incisor
        ({"tooth": 16, "surfaces": ["I"]}, "surfaces"),  # no incisal edge on a molar
        ({"tooth": 16, "surfaces": ["X"]}, "surfaces"),
        ({"tooth": 16, "surfaces": ["M", "M"]}, "surfaces"),
        ({"tooth": 16, "surfaces": "MO"}, "surfaces"),
        ({"tooth": 16, "quantity": 0}, "quantity"),
        ({"tooth": 16, "quantity": 100}, "quantity"),
        ({"tooth": 16, "phase": 0}, "phase"),
        ({"tooth": 16, "phase": 21}, "phase"),
        ({"tooth": 16, "fee": -1}, "fee"),
        ({"tooth": 16, "colour": "A2"}, "colour"),
    ],
)
def test_add_refuses_bad_input(client, plan, procedures, practice, fields, field):
    response = add_item(client, plan["id"], procedures["CROWN"]["id"], **fields)
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not PlanItem.objects.for_org(practice).exists()


def test_surfaces_required_and_surfaces_without_tooth(client, plan, procedures, practice):
    needs = add_item(client, plan["id"], procedures["FILL-CO"]["id"], tooth=36)
    assert "surfaces" in assert_error(needs, 400, "VALIDATION_ERROR")["details"]["fields"]
    loose = add_item(client, plan["id"], procedures["EXAM"]["id"], surfaces=["M"])
    assert "surfaces" in assert_error(loose, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not PlanItem.objects.for_org(practice).exists()


def test_unknown_archived_and_other_practices_procedures_are_400(
    client, plan, procedures, other, owner_client, practice
):
    unknown = add_item(client, plan["id"], "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f")
    assert "procedureId" in assert_error(unknown, 400, "VALIDATION_ERROR")["details"]["fields"]
    theirs = other.session_client().get("/clinical/procedures").json()["items"][0]["id"]
    foreign = add_item(client, plan["id"], theirs)
    assert "procedureId" in assert_error(foreign, 400, "VALIDATION_ERROR")["details"]["fields"]
    owner_client.patch(
        f"/clinical/procedures/{procedures['EXAM']['id']}", {"archived": True}, content_type="application/json"
    )
    archived = add_item(client, plan["id"], procedures["EXAM"]["id"])
    assert "procedureId" in assert_error(archived, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not PlanItem.objects.for_org(practice).exists()


# --- fees -------------------------------------------------------------------------------------------------------------


def test_fee_comes_from_the_patients_price_list_else_the_default(
    client, owner_client, plan, procedures, patient, price_list
):
    crown, exam = procedures["CROWN"], procedures["EXAM"]
    _set_fee(owner_client, price_list, crown["id"], 52500)
    # Without a default price list on the patient, the procedure's default fee.
    assert add_item(client, plan["id"], crown["id"], tooth=16).json()["fee"] == 65000
    patient.default_price_list = price_list
    patient.save()
    priced = add_item(client, plan["id"], crown["id"], tooth=26).json()
    assert (priced["fee"], priced["feeSource"]) == (52500, "price_list")
    # A procedure without a fee on the patient's list: its default fee.
    default = add_item(client, plan["id"], exam["id"]).json()
    assert (default["fee"], default["feeSource"]) == (5000, "default")
    manual = add_item(client, plan["id"], exam["id"], fee=0).json()
    assert (manual["fee"], manual["feeSource"]) == (0, "manual")


def test_a_later_fee_change_does_not_rewrite_existing_items(
    client, owner_client, plan, procedures, patient, price_list
):
    crown, exam = procedures["CROWN"], procedures["EXAM"]
    patient.default_price_list = price_list
    patient.save()
    _set_fee(owner_client, price_list, crown["id"], 52500)
    on_list = add_item(client, plan["id"], crown["id"], tooth=16).json()
    by_default = add_item(client, plan["id"], exam["id"]).json()

    _set_fee(owner_client, price_list, crown["id"], 60000)
    owner_client.patch(f"/clinical/procedures/{exam['id']}", {"defaultFee": 9900}, content_type="application/json")

    items = {row["id"]: row for row in client.get(f"/clinical/treatment-plans/{plan['id']}/items").json()}
    assert items[on_list["id"]]["fee"] == 52500 and items[by_default["id"]]["fee"] == 5000
    # New items take the new fees.
    assert add_item(client, plan["id"], crown["id"], tooth=26).json()["fee"] == 60000
    assert add_item(client, plan["id"], exam["id"]).json()["fee"] == 9900


def test_a_fee_in_another_currency_than_the_plans_is_409(client, plan, procedures, practice):
    practice.country = "IE"  # the practice moves to the euro: the catalogue's GBP fees no longer fit
    practice.save()
    other_plan = client.post(
        f"/clinical/patients/{plan['patientId']}/treatment-plans",
        {"title": "Euro plan"},
        content_type="application/json",
    ).json()
    assert other_plan["currency"] == "EUR"
    response = add_item(client, other_plan["id"], procedures["EXAM"]["id"])
    body = assert_error(response, 409, "TREATMENT_PLAN_CURRENCY_MISMATCH")
    assert body["details"] == {"planCurrency": "EUR", "feeCurrency": "GBP"}


# --- totals -----------------------------------------------------------------------------------------------------------


def test_totals_per_phase_and_plan_are_summed_from_the_items(client, plan, procedures):
    add_item(client, plan["id"], procedures["EXAM"]["id"], phase=1)  # 5000
    add_item(client, plan["id"], procedures["XR-BW"]["id"], phase=1, quantity=2)  # 6000
    crown = add_item(client, plan["id"], procedures["CROWN"]["id"], tooth=16, phase=3).json()  # 65000
    cancelled = add_item(client, plan["id"], procedures["CROWN"]["id"], tooth=26, phase=3).json()
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/items/{cancelled['id']}/status",
        {"status": "cancelled"},
        content_type="application/json",
    )
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/status", {"status": "accepted"}, content_type="application/json"
    )
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/items/{crown['id']}/status",
        {"status": "completed"},
        content_type="application/json",
    )
    body = client.get(f"/clinical/treatment-plans/{plan['id']}").json()
    assert body["totals"] == {"total": 76000, "completed": 65000, "remaining": 11000, "itemCount": 3}
    assert body["phases"] == [
        {"phase": 1, "total": 11000, "completed": 0, "remaining": 11000, "itemCount": 2},
        {"phase": 3, "total": 65000, "completed": 65000, "remaining": 0, "itemCount": 1},
    ]
    assert [item["phase"] for item in body["items"]] == [1, 1, 3, 3]
    assert body["items"][1]["lineTotal"] == 6000


# --- change and removal -----------------------------------------------------------------------------------------------


def test_update_a_planned_item(client, plan, procedures, practice):
    item = add_item(client, plan["id"], procedures["FILL-CO"]["id"], tooth=36, surfaces=["O"]).json()
    response = client.patch(
        f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}",
        {"tooth": 46, "surfaces": ["M", "O"], "quantity": 2, "phase": 2, "fee": 11000},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["tooth"], body["surfaces"], body["quantity"], body["phase"]) == (46, ["M", "O"], 2, 2)
    assert (body["fee"], body["feeSource"], body["lineTotal"]) == (11000, "manual", 22000)
    event = plan_events(practice)[-1]
    assert event.data["action"] == "item_updated"
    assert event.data["changedFields"] == [
        "items",
        "items.fee",
        "items.phase",
        "items.quantity",
        "items.surfaces",
        "items.tooth",
    ]


def test_update_checks_tooth_and_surfaces_together(client, plan, procedures, practice):
    item = add_item(client, plan["id"], procedures["FILL-CO"]["id"], tooth=36, surfaces=["O"]).json()
    response = client.patch(
        f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}", {"tooth": 11}, content_type="application/json"
    )
    assert "surfaces" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    for body in ({"tooth": 19}, {"tooth": None}, {"procedureId": procedures["EXAM"]["id"]}, {}):
        response = client.patch(
            f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}", body, content_type="application/json"
        )
        assert_error(response, 400, "VALIDATION_ERROR")
    assert PlanItem.objects.for_org(practice).get(id=item["id"]).tooth == 36


def test_remove_a_planned_item_but_not_a_completed_one(client, plan, procedures, practice):
    first = add_item(client, plan["id"], procedures["EXAM"]["id"]).json()
    second = add_item(client, plan["id"], procedures["SCALE"]["id"]).json()
    response = client.delete(f"/clinical/treatment-plans/{plan['id']}/items/{first['id']}")
    assert response.status_code == 204
    assert plan_events(practice)[-1].data["action"] == "item_removed"
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/status", {"status": "accepted"}, content_type="application/json"
    )
    third = add_item(client, plan["id"], procedures["FL"]["id"]).json()
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/items/{second['id']}/status",
        {"status": "completed"},
        content_type="application/json",
    )
    refused = client.delete(f"/clinical/treatment-plans/{plan['id']}/items/{second['id']}")
    assert assert_error(refused, 409, "TREATMENT_PLAN_ITEM_CLOSED")["details"] == {"status": "completed"}
    changed = client.patch(
        f"/clinical/treatment-plans/{plan['id']}/items/{second['id']}", {"quantity": 2}, content_type="application/json"
    )
    assert_error(changed, 409, "TREATMENT_PLAN_ITEM_CLOSED")
    assert {str(row.id) for row in PlanItem.objects.for_org(practice)} == {second["id"], third["id"]}


def test_items_of_a_closed_plan_cannot_change(client, plan, procedures, practice):
    item = add_item(client, plan["id"], procedures["EXAM"]["id"]).json()
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/status", {"status": "cancelled"}, content_type="application/json"
    )
    for response in (
        add_item(client, plan["id"], procedures["EXAM"]["id"]),
        client.patch(
            f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}",
            {"quantity": 2},
            content_type="application/json",
        ),
        client.delete(f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}"),
    ):
        assert assert_error(response, 409, "TREATMENT_PLAN_CLOSED")["details"] == {"status": "cancelled"}
    assert PlanItem.objects.for_org(practice).count() == 1


def test_item_routes_refuse_front_desk_and_other_practices(client, front_desk, other, plan, procedures, practice):
    item = add_item(client, plan["id"], procedures["EXAM"]["id"]).json()
    desk = front_desk.session_client()
    theirs = other.session_client()
    routes = [
        ("post", f"/clinical/treatment-plans/{plan['id']}/items", {"procedureId": procedures["EXAM"]["id"]}),
        ("patch", f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}", {"quantity": 3}),
        ("delete", f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}", None),
        ("post", f"/clinical/treatment-plans/{plan['id']}/items/{item['id']}/status", {"status": "cancelled"}),
    ]
    for method, path, body in routes:
        assert_error(getattr(desk, method)(path, body, content_type="application/json"), 403, "PERMISSION_DENIED")
        assert_error(getattr(theirs, method)(path, body, content_type="application/json"), 404, "NOT_FOUND")
    row = PlanItem.objects.for_org(practice).get(id=item["id"])
    assert (row.quantity, row.status) == (1, "planned")
    assert PlanItem.objects.for_org(practice).count() == 1


def test_an_item_of_another_plan_is_404(client, plan, patient, procedures):
    item = add_item(client, plan["id"], procedures["EXAM"]["id"]).json()
    second = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "B"}, content_type="application/json"
    ).json()
    response = client.patch(
        f"/clinical/treatment-plans/{second['id']}/items/{item['id']}", {"quantity": 2}, content_type="application/json"
    )
    assert_error(response, 404, "NOT_FOUND")
