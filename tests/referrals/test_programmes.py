"""Referral programmes (/referral-programmes) and advocate tokens (POST /patients/{id}/referral-token): fields,
validation, tenancy, roles, rotation."""

import uuid

import pytest

from apps.journeys.public import Stage
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.referrals.conftest import make_programme, post_json

ROLES = ("owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse")


def test_create_read_list_update(api, owner):
    api.get("/pipelines")  # seeds the default pipeline
    stage = Stage.objects.for_org(owner.organization).filter(name="Consultation booked").first()
    created = make_programme(api, successStageId=str(stage.id), pageIntro="Bring a friend")
    assert created["rewardCurrency"] == "GBP"
    assert created["rewardAmount"] == "50.00"
    assert created["successStageId"] == str(stage.id)
    assert created["active"] is True
    assert api.get(f"/referral-programmes/{created['id']}").json() == created
    page = api.get("/referral-programmes").json()
    assert page["total"] == 1 and page["items"][0]["id"] == created["id"]
    response = api.patch(f"/referral-programmes/{created['id']}", {"active": False}, content_type="application/json")
    assert response.status_code == 200 and response.json()["active"] is False


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": ""}, "name"),
        ({"name": "x", "rewardCurrency": "12"}, "rewardCurrency"),
        ({"name": "x", "successStageId": str(uuid.uuid4())}, "successStageId"),
        ({"name": "x", "rewardAmount": "-1"}, "rewardAmount"),
        ({"name": "x", "surprise": 1}, None),
        ({"name": 5}, "name"),
    ],
)
def test_create_refuses_bad_input(api, body, field):
    body = assert_error(post_json(api, "/referral-programmes", body), 400, "VALIDATION_ERROR")
    if field:
        assert field in body["details"]["fields"]


def test_another_practices_stage_is_refused(api, outsider):
    outsider.api_client().get("/pipelines")
    stage = Stage.objects.for_org(outsider.organization).first()
    assert_error(post_json(api, "/referral-programmes", {"name": "x", "successStageId": str(stage.id)}), 400,
                 "VALIDATION_ERROR")  # fmt: skip


def test_tenancy(api, owner, outsider, programme):
    other = outsider.api_client()
    assert_error(other.get(f"/referral-programmes/{programme['id']}"), 404, "NOT_FOUND")
    assert_error(other.patch(f"/referral-programmes/{programme['id']}", {"name": "x"},
                             content_type="application/json"), 404, "NOT_FOUND")  # fmt: skip
    assert other.get("/referral-programmes").json()["total"] == 0
    patient = PatientFactory(organization=outsider.organization)
    # Another practice's programme for one's own patient: 400; another practice's patient: 404.
    assert_error(post_json(other, f"/patients/{patient.id}/referral-token", {"programmeId": programme["id"]}), 400,
                 "VALIDATION_ERROR")  # fmt: skip
    own_patient = PatientFactory(organization=owner.organization)
    assert_error(post_json(other, f"/patients/{own_patient.id}/referral-token", {"programmeId": programme["id"]}),
                 404, "NOT_FOUND")  # fmt: skip


@pytest.mark.parametrize("role", ROLES)
def test_roles(role, owner, member_factory, programme):
    client = member_factory(role=role, organization=owner.organization).api_client()
    readers = {"owner", "manager", "front_desk", "telesales", "analyst"}
    managers = {"owner", "manager"}
    read = client.get("/referral-programmes")
    assert read.status_code == (200 if role in readers else 403)
    create = post_json(client, "/referral-programmes", {"name": f"P {role}"})
    assert create.status_code == (201 if role in managers else 403)
    patient = PatientFactory(organization=owner.organization)
    issue = post_json(client, f"/patients/{patient.id}/referral-token", {"programmeId": programme["id"]})
    assert issue.status_code == (201 if role in {"owner", "manager", "front_desk", "telesales"} else 403)


def test_tokens_repeat_and_rotate(api, owner, programme, advocate):
    patient_id = advocate["patientId"]
    again = post_json(api, f"/patients/{patient_id}/referral-token", {"programmeId": programme["id"]})
    assert again.status_code == 200
    assert again.json()["shareToken"] == advocate["shareToken"]
    assert advocate["shareUrl"].endswith(f"/referral/{advocate['shareToken']}")
    rotated = post_json(api, f"/patients/{patient_id}/referral-token", {"programmeId": programme["id"], "rotate": True})
    assert rotated.status_code == 200
    new = rotated.json()
    assert new["shareToken"] != advocate["shareToken"] and new["statusToken"] != advocate["statusToken"]
    assert new["rotatedAt"]
    assert_error(api.get(f"/referral/{advocate['shareToken']}"), 404, "NOT_FOUND")
    assert_error(api.get(f"/referral/{advocate['statusToken']}/status"), 404, "NOT_FOUND")
    assert api.get(f"/referral/{new['shareToken']}").status_code == 200


def test_inactive_programme_refuses_new_advocates(api, owner, programme):
    api.patch(f"/referral-programmes/{programme['id']}", {"active": False}, content_type="application/json")
    patient = PatientFactory(organization=owner.organization)
    assert_error(post_json(api, f"/patients/{patient.id}/referral-token", {"programmeId": programme["id"]}), 409,
                 "REFERRAL_PROGRAMME_INACTIVE")  # fmt: skip


def test_referrals_list(api, client, owner, outsider, member_factory, programme, advocate):
    PatientFactory(organization=owner.organization, email="known@example.com")
    for email in ("bob@example.com", "known@example.com"):
        body = {"firstName": "Bob", "lastName": "Friend", "email": email, "marketingConsent": True}
        assert post_json(client, f"/referral/{advocate['shareToken']}/submit", body).status_code == 201
    page = api.get(f"/referral-programmes/{programme['id']}/referrals").json()
    assert page["total"] == 2
    assert {item["status"] for item in page["items"]} == {"submitted", "duplicate"}
    new = next(item for item in page["items"] if item["status"] == "submitted")
    assert new["advocatePatientId"] == advocate["patientId"] and new["referredPatientId"]
    assert new["initials"] == "BF" and new["consentGiven"] is True and new["reward"] is None
    only = api.get(f"/referral-programmes/{programme['id']}/referrals?status=duplicate").json()
    assert only["total"] == 1 and only["items"][0]["referredPatientId"] is None
    assert_error(api.get(f"/referral-programmes/{programme['id']}/referrals?status=nope"), 400, "VALIDATION_ERROR")
    assert_error(outsider.api_client().get(f"/referral-programmes/{programme['id']}/referrals"), 404, "NOT_FOUND")
    nurse = member_factory(role="nurse", organization=owner.organization).api_client()
    assert_error(nurse.get(f"/referral-programmes/{programme['id']}/referrals"), 403, "PERMISSION_DENIED")


def test_mcp_catalogue_offers_the_practice_routes_not_the_public_pages():
    from apps.mcp.operations import catalogue

    operations = catalogue()
    assert "GET /referral-programmes" in operations
    assert "POST /patients/:id/referral-token" in operations
    assert not [op_id for op_id in operations if " /referral/" in op_id]
