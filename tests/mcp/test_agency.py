"""Agency connections through MCP (spec rule 8): without practice the calls act on the agency; with it, inside a
linked practice with the person's current role; any other id is 404 PRACTICE_NOT_FOUND; some operations are not
available through an agency connection."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.test import Client

from apps.accounts.models import Invitation, Organization
from apps.patients.models import Patient, Tag
from tests.conftest import make_member
from tests.oauth.tokens import mint

SUBSCRIBE = "POST /settings/webhook-endpoints/subscriptions"


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


def read_and_write_with(agent, practice) -> list[dict]:
    """The read GET /patients and the write POST /tags with this practice argument."""
    return [
        call(agent, "read", {"operation": "GET /patients", "practice": practice}),
        call(agent, "write", {"operation": "POST /tags", "practice": practice, "body": {"name": "x"}}),
    ]


def assert_practice_not_found(result: dict) -> None:
    assert result["isError"] is True
    assert result["structuredContent"]["status"] == 404
    assert result["structuredContent"]["error"]["code"] == "PRACTICE_NOT_FOUND", result


def test_any_other_practice_id_is_404(agent, outsider):
    other_agency = make_member(role="owner", kind=Organization.Kind.PARTNER, name="Other agency")
    raw, _ = mint(other_agency, "read write", resource=[settings.SVC_MCP_URL])
    theirs = create_practice(Client(headers={"Authorization": f"Bearer {raw}"}), email="o@other.example")
    well_formed = (theirs["organizationId"], str(outsider.organization.id), str(uuid.uuid4()))
    for practice in well_formed:
        for result in read_and_write_with(agent, practice):
            assert_practice_not_found(result)
    assert not Tag.objects.unscoped().exists()
    # search_operations does not check it.
    assert (
        call(agent, "search_operations", {"query": "patients", "practice": str(outsider.organization.id)})["isError"]
        is False
    )


def test_a_malformed_practice_id_is_404_too_and_a_non_string_is_a_validation_error(agent):
    for practice in ("not-a-uuid", "", "../patients"):
        for result in read_and_write_with(agent, practice):
            assert_practice_not_found(result)
    for result in read_and_write_with(agent, 42):
        assert result["structuredContent"]["status"] == 400
        assert result["structuredContent"]["error"]["code"] == "VALIDATION_ERROR"
        assert list(result["structuredContent"]["error"]["details"]["fields"]) == ["practice"]
    assert not Tag.objects.unscoped().exists()


def test_the_owner_invitation_runs_under_its_camel_case_id(agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        practice = create_practice(agent)
    operation = "/partner/practices/:organizationId/owner-invitation"
    params = {"organizationId": practice["organizationId"]}
    resent = call(
        agent, "write", {"operation": f"POST {operation}", "params": params, "body": {"ownerEmail": "n@x.io"}}
    )
    assert resent["isError"] is False, resent
    assert resent["structuredContent"]["body"]["sent"] is True
    withdrawn = call(agent, "write", {"operation": f"DELETE {operation}", "params": params})
    assert withdrawn["structuredContent"]["body"] == {"canceled": 1}
    pending = Invitation.objects.for_org(practice["organizationId"]).filter(status=Invitation.Status.PENDING)
    assert not pending.exists()


def test_an_agency_unavailable_call_counts_against_the_bucket(agent, settings):
    settings.SVC_API_KEY_BUCKET = (1, 0.001)
    subscribe = {"operation": SUBSCRIBE, "body": {"name": "x", "url": "https://a.example"}}
    assert call(agent, "write", subscribe)["structuredContent"]["error"]["code"] == "AGENCY_UNAVAILABLE"
    limited = call(agent, "read", {"operation": "GET /partner/practices"})["structuredContent"]
    assert limited["status"] == 429 and limited["error"]["code"] == "RATE_LIMITED"
    assert 1 <= limited["retryAfter"] == limited["error"]["details"]["retryAfter"] <= 1000


def test_subscriptions_are_unavailable_through_an_agency(agent):
    found = call(agent, "search_operations", {"query": "subscriptions"})["structuredContent"]["items"]
    assert SUBSCRIBE not in [item["operation"] for item in found]
    refused = call(agent, "write", {"operation": SUBSCRIBE, "body": {"name": "x", "url": "https://a.example"}})
    assert refused["isError"] is True and refused["structuredContent"]["error"]["code"] == "AGENCY_UNAVAILABLE"


def test_a_practice_connection_has_no_linked_practices(owner, outsider):
    raw, _ = mint(owner, "read", resource=[settings.SVC_MCP_URL])
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    result = call(client, "read", {"operation": "GET /patients", "practice": str(outsider.organization.id)})
    assert result["structuredContent"]["error"]["code"] == "PRACTICE_NOT_FOUND"


def test_a_route_refusal_with_retry_after_carries_it_in_the_tool_result(
    agency, time_machine, django_capture_on_commit_callbacks
):
    time_machine.move_to(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), tick=False)
    raw, _ = mint(agency, "read write", resource=[settings.SVC_MCP_URL], expires_in=24 * 3600)
    agent = Client(headers={"Authorization": f"Bearer {raw}"})
    with django_capture_on_commit_callbacks(execute=True):
        practice = create_practice(agent, email="owner@bianchi.example")
    resend = {
        "operation": "POST /partner/practices/:organizationId/owner-invitation",
        "params": {"organizationId": practice["organizationId"]},
        "body": {"ownerEmail": "owner@bianchi.example"},
    }
    for _ in range(2):  # the creation e-mail plus two resends, each after the quiet hour
        time_machine.shift(timedelta(hours=1, seconds=1))
        with django_capture_on_commit_callbacks(execute=True):
            assert call(agent, "write", resend)["structuredContent"]["body"]["sent"] is True
    time_machine.shift(timedelta(hours=1, seconds=1))

    refused = call(agent, "write", resend)

    assert refused["isError"] is True
    payload = refused["structuredContent"]
    assert (payload["status"], payload["error"]["code"]) == (429, "OWNER_INVITATION_LIMIT")
    assert payload["retryAfter"] == payload["error"]["details"]["retryAfter"] == 24 * 3600 - 3 * 3601
