"""The official MCP Python SDK as the agent, over streamable HTTP against the live server, with access tokens
obtained through the real OAuth flow (registration, consent, PKCE code exchange: tests/mcp/oauth_flow.py)."""

import asyncio
import hashlib
import json

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from apps.oauth.models import AccessToken
from apps.patients.models import Patient
from tests.conftest import make_member
from tests.factories import PatientFactory
from tests.mcp.oauth_flow import grant


async def _session(url: str, token: str, steps):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30.0)
    async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as client:
        return await steps(client)


@pytest.fixture
def practice(transactional_db):
    return make_member(role="owner")


def connect(base: str, member, scope: str) -> str:
    """An access token for {base}/mcp of a connection `member` approved with `scope`, through the real flow."""
    token = asyncio.run(grant(base, member, scope))
    assert set(token["scope"].split()) == set(scope.split())
    return token["access_token"]


def run(base, token, steps):
    return asyncio.run(_session(f"{base}/mcp", token, steps))


def test_the_sdk_negotiates_lists_tools_reads_writes_and_edits(deployment, practice):
    token = connect(deployment, practice, "read write offline_access")

    async def steps(client):
        tools = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_operations", {"query": "patch patients"})
        created = await client.call_tool(
            "write", {"operation": "POST /patients", "body": {"firstName": "Grace", "email": "grace@example.com"}}
        )
        listed = await client.call_tool("read", {"operation": "GET /patients", "query": {"limit": 25}})
        refused = await client.call_tool("write", {"operation": "POST /patients", "body": {}})
        patient_id = created.structured_content["body"]["id"]
        edited = await client.call_tool(
            "write",
            {
                "operation": "PATCH /patients/:id",
                "params": {"id": patient_id},
                "body": {"lastName": "Hopper", "phoneMobile": "+39 333 1234567"},
            },
        )
        invalid_edit = await client.call_tool(
            "write",
            {"operation": "PATCH /patients/:id", "params": {"id": patient_id}, "body": {"email": "not-an-email"}},
        )
        return client.protocol_version, tools, found, created, listed, refused, edited, invalid_edit

    version, tools, found, created, listed, refused, edited, invalid_edit = run(deployment, token, steps)
    assert version == "2025-11-25"
    assert tools == ["search_operations", "read", "write"]
    assert any(item["operation"] == "PATCH /patients/:id" for item in found.structured_content["items"])
    assert created.is_error is False and created.structured_content["status"] == 201
    assert [p["firstName"] for p in listed.structured_content["body"]["items"]] == ["Grace"]
    assert refused.is_error is True and refused.structured_content["error"]["code"] == "VALIDATION_ERROR"

    # The edit ran through PATCH /patients/{id} and is in the database.
    assert edited.is_error is False
    assert edited.structured_content["applied"] is True and edited.structured_content["status"] == 200
    assert edited.structured_content["body"]["lastName"] == "Hopper"
    patient = Patient.objects.unscoped().get(pk=created.structured_content["body"]["id"])
    assert patient.organization_id == practice.organization.id
    assert (patient.first_name, patient.last_name) == ("Grace", "Hopper")
    assert patient.phone_mobile == edited.structured_content["body"]["phoneMobile"] and patient.phone_mobile

    # A validation error is the tool's error result carrying the route's ApiError; nothing changed.
    assert invalid_edit.is_error is True
    assert invalid_edit.structured_content["status"] == 400
    error = invalid_edit.structured_content["error"]
    assert set(error) == {"code", "message", "details"} and error["code"] == "VALIDATION_ERROR"
    assert list(error["details"]["fields"]) == ["email"]
    assert json.loads(invalid_edit.content[0].text) == invalid_edit.structured_content
    patient.refresh_from_db()
    assert patient.email == "grace@example.com"


def test_a_read_only_connection_through_the_sdk(deployment, practice):
    token = connect(deployment, practice, "read")
    stored = AccessToken.objects.get(token_checksum=hashlib.sha256(token.encode()).hexdigest())
    assert stored.scope == "read" and stored.resource == [f"{deployment}/mcp"]

    async def steps(client):
        tools = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_operations", {"query": "patients"})
        listed = await client.call_tool("read", {"operation": "GET /patients"})
        try:
            await client.call_tool("write", {"operation": "POST /patients", "body": {"firstName": "Eve"}})
        except MCPError as exc:
            write_error = exc.error.code
        else:
            write_error = None
        return tools, found, listed, write_error

    tools, found, listed, write_error = run(deployment, token, steps)
    assert tools == ["search_operations", "read"]
    operations = [item["operation"] for item in found.structured_content["items"]]
    assert operations and all(op.startswith("GET ") for op in operations)
    assert listed.is_error is False and listed.structured_content["status"] == 200
    assert write_error == -32602  # write is no tool of this connection
    assert not Patient.objects.for_org(practice.organization).exists()


def test_a_large_reply_comes_in_ranged_parts_through_the_sdk(deployment, practice, settings):
    PatientFactory.create_batch(30, organization=practice.organization)
    settings.SVC_MCP_REPLY_LIMIT = 4000
    token = connect(deployment, practice, "read")
    read = {"operation": "GET /patients", "query": {"limit": 30}}

    async def all_parts(client):
        first = await client.call_tool("read", read)
        parts = [first.structured_content]
        while parts[-1]["nextOffset"] is not None:
            ranged = {"range": {"offset": parts[-1]["nextOffset"], "length": 3000}, "etag": parts[0]["etag"]}
            result = await client.call_tool("read", read | ranged)
            assert result.is_error is False, result.structured_content
            parts.append(result.structured_content)
            assert len(parts) < 100, "the parts never end"
        return first, parts

    first, parts = run(deployment, token, all_parts)
    head = first.structured_content
    assert first.is_error is False
    assert head["totalBytes"] > 4000 and head["offset"] == 0 and 0 < head["nextOffset"] <= 4000
    assert head["etag"] and head["status"] == 200 and head["encoding"] == "text"
    assert len(head["part"].encode()) == head["nextOffset"]
    assert [p["offset"] for p in parts[1:]] == [p["nextOffset"] for p in parts[:-1]]
    assert all(len(p["part"].encode()) <= 3000 for p in parts[1:]) and {p["etag"] for p in parts} == {head["etag"]}
    joined = "".join(p["part"] for p in parts).encode()
    assert len(joined) == head["totalBytes"]
    assert len(json.loads(joined)["items"]) == 30

    PatientFactory(organization=practice.organization)  # the reply changes between two parts

    async def after_the_change(client):
        ranged = {"range": {"offset": head["nextOffset"], "length": 3000}, "etag": head["etag"]}
        changed = await client.call_tool("read", read | ranged)
        again = await client.call_tool("read", read | {"range": {"offset": 0, "length": 3000}})
        return changed, again

    changed, again = run(deployment, token, after_the_change)
    assert changed.is_error is True and changed.structured_content["status"] == 409
    error = changed.structured_content["error"]
    assert error["code"] == "REPLY_CHANGED"
    assert error["details"]["etag"] != head["etag"]
    # Starting again from 0 gives the new reply's first part and etag.
    assert again.is_error is False
    assert again.structured_content["offset"] == 0 and again.structured_content["etag"] == error["details"]["etag"]
    assert again.structured_content["totalBytes"] == error["details"]["totalBytes"]
