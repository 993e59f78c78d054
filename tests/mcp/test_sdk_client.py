"""The official MCP Python SDK as the agent, over streamable HTTP against the live server."""

import asyncio

import httpx2
import pytest
from django.conf import settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import make_member
from tests.oauth.tokens import mint


async def _session(url: str, token: str, steps):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30.0)
    async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as client:
        return await steps(client)


@pytest.fixture
def practice(transactional_db):
    return make_member(role="owner")


def run(live_server, token, steps):
    return asyncio.run(_session(f"{live_server.url}/mcp", token, steps))


def test_the_sdk_negotiates_lists_tools_reads_and_writes(live_server, practice):
    raw, _ = mint(practice, "read write offline_access", resource=[settings.SVC_MCP_URL])

    async def steps(client):
        tools = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_operations", {"query": "patients"})
        created = await client.call_tool(
            "write", {"operation": "POST /patients", "body": {"firstName": "Grace", "email": "grace@example.com"}}
        )
        listed = await client.call_tool("read", {"operation": "GET /patients", "query": {"limit": 25}})
        refused = await client.call_tool("write", {"operation": "POST /patients", "body": {}})
        return client.protocol_version, tools, found, created, listed, refused

    version, tools, found, created, listed, refused = run(live_server, raw, steps)
    assert version == "2025-11-25"
    assert tools == ["search_operations", "read", "write"]
    assert any(item["operation"] == "GET /patients" for item in found.structured_content["items"])
    assert created.is_error is False and created.structured_content["status"] == 201
    assert [p["firstName"] for p in listed.structured_content["body"]["items"]] == ["Grace"]
    assert refused.is_error is True and refused.structured_content["error"]["code"] == "VALIDATION_ERROR"


def test_a_read_only_connection_through_the_sdk(live_server, practice):
    raw, _ = mint(practice, "read", resource=[settings.SVC_MCP_URL])

    async def steps(client):
        return [tool.name for tool in (await client.list_tools()).tools]

    assert run(live_server, raw, steps) == ["search_operations", "read"]
