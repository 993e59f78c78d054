"""Agency connections through MCP (spec rule 8): without practice the calls act on the agency; with it, inside a
linked practice with the person's current role; any other id is 404 PRACTICE_NOT_FOUND; some operations are not
available through an agency connection."""

import json

import pytest
from django.conf import settings
from django.test import Client

from apps.accounts.models import Organization
from apps.patients.models import Patient
from tests.conftest import make_member
from tests.oauth.tokens import mint


@pytest.fixture
def agency(db):
    return make_member(role="manager", kind=Organization.Kind.PARTNER, name="Molar Marketing")


@pytest.fixture
def agent(agency):
    raw, _ = mint(agency, "read write offline_access", resource=[settings.SVC_MCP_URL])
    return Client(headers={"Authorization": f"Bearer {raw}"})


def call(client, name, arguments):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = client.post("/mcp", json.dumps(message), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["result"]


def create_practice(agent, name="Studio Bianchi", email="owner@bianchi.example"):
    created = call(
        agent, "write", {"operation": "POST /partner/practices", "body": {"name": name, "ownerEmail": email}}
    )
    assert created["isError"] is False, created
    return created["structuredContent"]["body"]


def test_an_agency_creates_lists_and_acts_inside_its_practice(agent, agency, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        practice = create_practice(agent)
    listed = call(agent, "read", {"operation": "GET /partner/practices"})["structuredContent"]["body"]["items"]
    assert [item["organizationId"] for item in listed] == [practice["organizationId"]]

    inside = {"practice": practice["organizationId"]}
    made = call(
        agent,
        "write",
        {"operation": "POST /patients", "body": {"firstName": "Lia", "email": "lia@example.com"}} | inside,
    )
    assert made["isError"] is False, made
    patient = Patient.objects.unscoped().get(pk=made["structuredContent"]["body"]["id"])
    assert str(patient.organization_id) == practice["organizationId"]
    listed = call(agent, "read", {"operation": "GET /patients"} | inside)["structuredContent"]["body"]
    assert [item["id"] for item in listed["items"]] == [str(patient.id)]
    # Without practice the call acts on the agency itself, which holds no patients.
    assert call(agent, "read", {"operation": "GET /patients"})["structuredContent"]["body"]["items"] == []


def test_any_other_practice_id_is_404(agent, outsider):
    other_agency = make_member(role="owner", kind=Organization.Kind.PARTNER, name="Other agency")
    raw, _ = mint(other_agency, "read write", resource=[settings.SVC_MCP_URL])
    theirs = create_practice(Client(headers={"Authorization": f"Bearer {raw}"}), email="o@other.example")
    for practice in (theirs["organizationId"], str(outsider.organization.id), "not-a-uuid"):
        for tool, operation in (("read", "GET /patients"), ("write", "POST /tags")):
            result = call(
                agent,
                tool,
                {"operation": operation, "practice": practice, "body": {"name": "x"}}
                if tool == "write"
                else {"operation": operation, "practice": practice},
            )
            assert result["isError"] is True
            assert result["structuredContent"]["error"]["code"] in ("PRACTICE_NOT_FOUND", "VALIDATION_ERROR"), result
    # search_operations does not check it.
    assert (
        call(agent, "search_operations", {"query": "patients", "practice": str(outsider.organization.id)})["isError"]
        is False
    )


def test_subscriptions_are_unavailable_through_an_agency(agent):
    found = call(agent, "search_operations", {"query": "subscriptions"})["structuredContent"]["items"]
    assert "POST /settings/webhook-endpoints/subscriptions" not in [item["operation"] for item in found]
    refused = call(
        agent,
        "write",
        {
            "operation": "POST /settings/webhook-endpoints/subscriptions",
            "body": {"name": "x", "url": "https://a.example"},
        },
    )
    assert refused["isError"] is True and refused["structuredContent"]["error"]["code"] == "AGENCY_UNAVAILABLE"


def test_a_practice_connection_has_no_linked_practices(owner, outsider):
    raw, _ = mint(owner, "read", resource=[settings.SVC_MCP_URL])
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    result = call(client, "read", {"operation": "GET /patients", "practice": str(outsider.organization.id)})
    assert result["structuredContent"]["error"]["code"] == "PRACTICE_NOT_FOUND"
