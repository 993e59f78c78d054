"""Treatment templates: CRUD, and applying one to a plan at the patient's fees."""

import pytest

from apps.plans.models import PlanItem, TreatmentTemplate
from tests.helpers import assert_error
from tests.plans.conftest import plan_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def implant_template(client, procedures):
    response = client.post(
        "/clinical/treatment-templates",
        {
            "name": "Implant crown UR6",
            "items": [
                {"procedureId": procedures["XR-PA"]["id"]},
                {"procedureId": procedures["IMP"]["id"], "phase": 1},
                {"procedureId": procedures["IMP-AB"]["id"], "phase": 2},
                {"procedureId": procedures["IMP-CR"]["id"], "phase": 2},
                {"procedureId": procedures["EXAM"]["id"], "phase": 3, "quantity": 2},
            ],
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_create_read_and_list_templates(client, implant_template):
    assert implant_template["name"] == "Implant crown UR6"
    items = implant_template["items"]
    assert [row["procedureCode"] for row in items] == ["XR-PA", "IMP", "IMP-AB", "IMP-CR", "EXAM"]
    assert [(row["phase"], row["quantity"]) for row in items] == [(1, 1), (1, 1), (2, 1), (2, 1), (3, 2)]
    assert items[0]["toothRequired"] is True and items[4]["toothRequired"] is False
    assert client.get(f"/clinical/treatment-templates/{implant_template['id']}").json() == implant_template
    listed = client.get("/clinical/treatment-templates").json()
    assert listed["total"] == 1 and listed["items"] == [implant_template]


def test_names_are_unique_case_insensitively(client, implant_template, procedures):
    response = client.post(
        "/clinical/treatment-templates",
        {"name": "implant crown ur6", "items": [{"procedureId": procedures["EXAM"]["id"]}]},
        content_type="application/json",
    )
    assert_error(response, 409, "TREATMENT_TEMPLATE_NAME_TAKEN")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "T", "items": []}, "items"),
        ({"name": "", "items": [{"procedureId": "EXAM"}]}, "name"),
        ({"name": "T"}, "items"),
        ({"name": "T", "items": [{"procedureId": "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"}]}, "items"),
        ({"name": "T", "items": [{"procedureId": "FILL-CO"}]}, "items"),  # needs surfaces
        ({"name": "T", "items": [{"procedureId": "EXAM", "surfaces": ["M"]}]}, "items"),  # not on a tooth
        ({"name": "T", "items": [{"procedureId": "FILL-CO", "surfaces": ["O", "I"]}]}, "items"),
        ({"name": "T", "items": [{"procedureId": "EXAM", "phase": 0}]}, "items"),
        ({"name": "T", "items": [{"procedureId": "EXAM", "tooth": 16}]}, "items"),
        ({"name": "T", "items": [{"procedureId": "EXAM"}], "notes": "x"}, "notes"),
    ],
)
def test_create_refuses_bad_input(client, procedures, practice, body, field):
    for item in body.get("items", []):
        if item["procedureId"] in procedures:
            item["procedureId"] = procedures[item["procedureId"]]["id"]
    response = client.post("/clinical/treatment-templates", body, content_type="application/json")
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not TreatmentTemplate.objects.for_org(practice).exists()


def test_another_practices_procedure_in_a_template_is_400(client, other, practice):
    theirs = other.session_client().get("/clinical/procedures").json()["items"][0]["id"]
    response = client.post(
        "/clinical/treatment-templates",
        {"name": "T", "items": [{"procedureId": theirs}]},
        content_type="application/json",
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    assert not TreatmentTemplate.objects.for_org(practice).exists()


def test_update_and_delete_a_template(client, implant_template, procedures, practice):
    response = client.patch(
        f"/clinical/treatment-templates/{implant_template['id']}",
        {"name": "Implant (single)", "items": [{"procedureId": procedures["IMP"]["id"]}]},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Implant (single)"
    assert [row["procedureCode"] for row in response.json()["items"]] == ["IMP"]
    assert_error(
        client.patch(f"/clinical/treatment-templates/{implant_template['id']}", {}, content_type="application/json"),
        400,
        "VALIDATION_ERROR",
    )
    assert client.delete(f"/clinical/treatment-templates/{implant_template['id']}").status_code == 204
    assert_error(client.get(f"/clinical/treatment-templates/{implant_template['id']}"), 404, "NOT_FOUND")
    assert not TreatmentTemplate.objects.for_org(practice).exists()


def test_template_routes_refuse_front_desk_and_other_practices(front_desk, other, implant_template, practice):
    path = f"/clinical/treatment-templates/{implant_template['id']}"
    desk, theirs = front_desk.session_client(), other.session_client()
    assert_error(desk.get("/clinical/treatment-templates"), 403, "PERMISSION_DENIED")
    assert_error(desk.get(path), 403, "PERMISSION_DENIED")
    assert_error(
        desk.post("/clinical/treatment-templates", {"name": "x", "items": []}, content_type="application/json"),
        403,
        "PERMISSION_DENIED",
    )
    for response in (
        theirs.get(path),
        theirs.patch(path, {"name": "Mine"}, content_type="application/json"),
        theirs.delete(path),
    ):
        assert_error(response, 404, "NOT_FOUND")
    assert TreatmentTemplate.objects.for_org(practice).get().name == "Implant crown UR6"
    assert theirs.get("/clinical/treatment-templates").json()["total"] == 0


def test_an_owner_reads_templates_but_does_not_write_them(owner_client, implant_template):
    assert owner_client.get("/clinical/treatment-templates").json()["total"] == 1
    response = owner_client.delete(f"/clinical/treatment-templates/{implant_template['id']}")
    assert assert_error(response, 403, "PERMISSION_DENIED")["details"] == {"permission": "clinical:write"}


# --- apply ------------------------------------------------------------------------------------------------------------


def test_apply_a_template_with_the_patients_fees(
    client, owner_client, plan, implant_template, procedures, patient, price_list, practice
):
    owner_client.put(
        f"/clinical/price-lists/{price_list.id}/fees",
        {"fees": [{"procedureId": procedures["IMP"]["id"], "amount": 150000}]},
        content_type="application/json",
    )
    patient.default_price_list = price_list
    patient.save()
    response = client.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": implant_template["id"], "tooth": 16},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    rows = [
        (row["procedureCode"], row["tooth"], row["phase"], row["quantity"], row["fee"], row["feeSource"])
        for row in body["items"]
    ]
    assert rows == [
        ("XR-PA", 16, 1, 1, 2000, "default"),
        ("IMP", 16, 1, 1, 150000, "price_list"),
        ("IMP-AB", 16, 2, 1, 40000, "default"),
        ("IMP-CR", 16, 2, 1, 90000, "default"),
        ("EXAM", None, 3, 2, 5000, "default"),
    ]
    assert body["totals"] == {"total": 292000, "completed": 0, "remaining": 292000, "itemCount": 5}
    detail = client.get(f"/clinical/treatment-plans/{plan['id']}").json()
    assert [phase["total"] for phase in detail["phases"]] == [152000, 130000, 10000]
    event = plan_events(practice)[-1]
    assert event.data["action"] == "template_applied" and event.data["templateId"] == implant_template["id"]
    assert len(event.data["itemIds"]) == 5


def test_apply_with_surfaces_checks_them_against_the_tooth(client, plan, procedures, practice):
    template = client.post(
        "/clinical/treatment-templates",
        {"name": "MO composite", "items": [{"procedureId": procedures["FILL-CO"]["id"], "surfaces": ["M", "O"]}]},
        content_type="application/json",
    ).json()
    refused = client.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": template["id"], "tooth": 11},
        content_type="application/json",
    )
    assert "tooth" in assert_error(refused, 400, "VALIDATION_ERROR")["details"]["fields"]
    ok = client.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": template["id"], "tooth": 46},
        content_type="application/json",
    )
    assert [row["surfaces"] for row in ok.json()["items"]] == [["M", "O"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "templateId"),
        ({"tooth": 19}, "tooth"),
        ({"tooth": 90}, "tooth"),
        ({"tooth": None}, "tooth"),
        ({"x": 1}, "x"),
    ],
)
def test_apply_refuses_bad_input(client, plan, implant_template, practice, body, field):
    body = {"templateId": implant_template["id"], **body} if field != "templateId" else body
    response = client.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template", body, content_type="application/json"
    )
    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not PlanItem.objects.for_org(practice).exists()


def test_apply_another_practices_template_or_plan(client, other, plan, implant_template, procedures, practice):
    theirs = other.session_client()
    their_procedure = theirs.get("/clinical/procedures").json()["items"][0]["id"]
    their_template = theirs.post(
        "/clinical/treatment-templates",
        {"name": "Theirs", "items": [{"procedureId": their_procedure}]},
        content_type="application/json",
    ).json()
    response = client.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": their_template["id"]},
        content_type="application/json",
    )
    assert "templateId" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    response = theirs.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": their_template["id"]},
        content_type="application/json",
    )
    assert_error(response, 404, "NOT_FOUND")
    assert not PlanItem.objects.for_org(practice).exists()


def test_apply_to_a_closed_plan_is_409_and_front_desk_403(client, front_desk, plan, implant_template, practice):
    desk = front_desk.session_client()
    response = desk.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": implant_template["id"], "tooth": 16},
        content_type="application/json",
    )
    assert_error(response, 403, "PERMISSION_DENIED")
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/status", {"status": "declined"}, content_type="application/json"
    )
    response = client.post(
        f"/clinical/treatment-plans/{plan['id']}/apply-template",
        {"templateId": implant_template["id"], "tooth": 16},
        content_type="application/json",
    )
    assert_error(response, 409, "TREATMENT_PLAN_CLOSED")
    assert not PlanItem.objects.for_org(practice).exists()
