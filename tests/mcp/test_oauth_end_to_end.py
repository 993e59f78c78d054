"""The whole agent journey over real HTTP: the official MCP SDK (mcp 2.3.0 over httpx2) meets the 401 challenge,
discovers the protected-resource and authorization-server metadata, registers itself with a loopback redirect URI,
sends the person through authorize with PKCE and resource, exchanges the code, and then initializes, lists tools,
searches, reads and writes patients, and sees an API error as a tool error. The person's browser is an httpx2
client signed in through POST /auth/sign-in/email that reads the consent page and presses Approve with a practice.

The deployment's URLs point at the live server for the test (the `deployment` fixture); the person and the token
storage are in tests/mcp/oauth_flow.py.
"""

import asyncio
import hashlib

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from apps.oauth.models import AccessToken, Connection
from apps.patients.models import Patient
from tests.conftest import make_member
from tests.mcp.oauth_flow import CALLBACK, MemoryStorage, PersonAtTheBrowser

pytestmark = pytest.mark.django_db(transaction=True)


async def _agent_session(base: str, person: PersonAtTheBrowser, storage: MemoryStorage, steps):
    provider = OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Test Assistant",
            redirect_uris=[CALLBACK],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=60.0))
    async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="auto") as client:
        return await steps(client)


def test_an_assistant_connects_through_the_real_oauth_flow_and_works_with_patients(deployment):
    base = deployment
    owner = make_member(role="owner")
    make_member(role="owner")  # another practice, never seen by this connection
    person = PersonAtTheBrowser(base, owner, str(owner.organization.id))
    storage = MemoryStorage()

    async def steps(client):
        tools = await client.list_tools()
        found = await client.call_tool("search_operations", {"query": "patients"})
        before = await client.call_tool("read", {"operation": "GET /patients", "query": {"limit": 25}})
        created = await client.call_tool(
            "write",
            {"operation": "POST /patients", "body": {"firstName": "Grace", "lastName": "Hopper", "email": "g@ex.com"}},
        )
        after = await client.call_tool("read", {"operation": "GET /patients", "query": {"limit": 25, "q": "hopper"}})
        invalid = await client.call_tool("write", {"operation": "POST /patients", "body": {"email": "not-an-email"}})
        missing = await client.call_tool(
            "read", {"operation": "GET /patients/:id", "params": {"id": "00000000-0000-0000-0000-000000000000"}}
        )
        return client.protocol_version, client.server_info, tools, found, before, created, after, invalid, missing

    version, server_info, tools, found, before, created, after, invalid, missing = asyncio.run(
        _agent_session(base, person, storage, steps)
    )

    # The OAuth part: discovery from the challenge, registration, authorize with PKCE and resource, consent.
    authorize = person.seen["authorize"]
    assert authorize["code_challenge_method"] == ["S256"] and authorize["redirect_uri"] == [CALLBACK]
    assert authorize["resource"] == [f"{base}/mcp"]
    assert set(authorize["scope"][0].split()) == {"read", "write", "offline_access"}
    assert "Test Assistant" in person.seen["page"]
    assert person.seen["practices"] == [str(owner.organization.id)]
    assert person.seen["callback"]["iss"] == f"{base}/auth"
    assert storage.client_info is not None and storage.client_info.token_endpoint_auth_method == "none"
    tokens = storage.tokens
    assert tokens is not None and tokens.access_token.startswith("svc_oat_")
    assert tokens.refresh_token and tokens.refresh_token.startswith("svc_ort_")
    stored = AccessToken.objects.get(token_checksum=hashlib.sha256(tokens.access_token.encode()).hexdigest())
    assert stored.resource == [f"{base}/mcp"] and stored.organization_id == owner.organization.id
    assert stored.user_id == owner.user.id and set(stored.scope.split()) == {"read", "write", "offline_access"}
    connection = Connection.objects.unscoped().get(pk=stored.connection_id)
    assert connection.revoked_at is None and connection.application.client_id == storage.client_info.client_id
    assert connection.last_used_at is not None  # the practice's connected apps show when the assistant was used

    # The MCP part.
    assert version == "2025-11-25" and server_info.name == "practice-crm"
    assert [tool.name for tool in tools.tools] == ["search_operations", "read", "write"]
    items = found.structured_content["items"]
    assert found.is_error is False and any(item["operation"] == "GET /patients" for item in items)
    assert all(set(item) >= {"operation", "summary", "tool", "inputSchema"} for item in items)
    assert before.is_error is False and before.structured_content["status"] == 200
    assert created.is_error is False
    assert created.structured_content["applied"] is True and created.structured_content["status"] == 201
    assert created.structured_content["body"]["firstName"] == "Grace"
    assert [p["lastName"] for p in after.structured_content["body"]["items"]] == ["Hopper"]
    assert invalid.is_error is True
    assert invalid.structured_content["status"] == 400
    assert invalid.structured_content["error"]["code"] == "VALIDATION_ERROR"
    assert missing.is_error is True and missing.structured_content["status"] == 404
    assert Patient.objects.unscoped().filter(organization=owner.organization, last_name="Hopper").count() == 1

    # The token is for the MCP server only: the REST API refuses it as a credential of its own.
    with httpx2.Client(base_url=base, timeout=10.0) as rest:
        refused = rest.get("/patients", headers={"Authorization": f"Bearer {tokens.access_token}"})
    assert refused.status_code == 401
