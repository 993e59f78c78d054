"""POST /mcp over raw HTTP: methods, batches, Origin, the 401 challenge, notifications, versions, tools."""

import json
import re

import pytest
from django.conf import settings
from django.test import Client

from apps.mcp import operations
from apps.patients.models import Patient
from tests.oauth.tokens import mint

CHALLENGE = (
    'Bearer error="invalid_token", resource_metadata="http://localhost:8787/.well-known/oauth-protected-resource/mcp", '
    'scope="read write offline_access"'
)


def rpc(client: Client, method: str, params=None, *, id=1, **headers):
    message = {"jsonrpc": "2.0", "method": method} | ({"id": id} if id is not None else {})
    if params is not None:
        message["params"] = params
    return client.post("/mcp", json.dumps(message), content_type="application/json", headers=headers)


@pytest.fixture
def agent(owner):
    raw, _ = mint(owner, "read write", resource=[settings.SVC_MCP_URL])
    return Client(headers={"Authorization": f"Bearer {raw}"})


def call(client, name, arguments):
    response = rpc(client, "tools/call", {"name": name, "arguments": arguments})
    assert response.status_code == 200, response.content
    return response.json()["result"]


@pytest.mark.parametrize("method", ["get", "delete"])
def test_only_post_is_allowed(agent, method):
    assert getattr(agent, method)("/mcp").status_code == 405


def test_a_batch_is_refused_with_32600(agent):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    response = agent.post("/mcp", json.dumps(batch), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


def test_an_origin_header_is_refused(agent):
    assert rpc(agent, "ping", Origin="https://evil.example").status_code == 403


def test_without_a_token_the_challenge_names_the_metadata_and_scopes(db):
    response = rpc(Client(), "initialize", {"protocolVersion": "2025-11-25"})
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == (
        'Bearer resource_metadata="http://localhost:8787/.well-known/oauth-protected-resource/mcp", '
        'scope="read write offline_access"'
    )


@pytest.mark.parametrize("credential", ["api_key", "bogus", "other_audience"])
def test_other_credentials_are_401_with_the_challenge(owner, credential):
    if credential == "api_key":
        value = owner.api_key
    elif credential == "bogus":
        value = "svc_oat_nope"
    else:
        value, _ = mint(owner, resource=["https://elsewhere.example/api"])
    response = rpc(Client(headers={"Authorization": f"Bearer {value}"}), "ping")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == CHALLENGE


def test_a_session_cookie_is_not_a_credential_here(owner):
    assert rpc(owner.session_client(), "ping").status_code == 401


def test_initialize_negotiates_and_notifications_are_202(agent):
    response = rpc(agent, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}})
    result = response.json()["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert "Mcp-Session-Id" not in response
    assert (
        rpc(agent, "initialize", {"protocolVersion": "1999-01-01"}).json()["result"]["protocolVersion"] == "2025-11-25"
    )
    assert rpc(agent, "notifications/initialized", id=None).status_code == 202


def test_unknown_methods_and_versions(agent):
    assert rpc(agent, "server/discover").json()["error"]["code"] == -32601
    response = rpc(agent, "tools/list", **{"MCP-Protocol-Version": "2031-01-01"})
    assert response.status_code == 400


def test_tools_list_and_a_read_only_connection(owner):
    raw, _ = mint(owner, "read", resource=[settings.SVC_MCP_URL])
    reader = Client(headers={"Authorization": f"Bearer {raw}"})
    names = [tool["name"] for tool in rpc(reader, "tools/list").json()["result"]["tools"]]
    assert names == ["search_operations", "read"]
    found = call(reader, "search_operations", {"query": "patients"})["structuredContent"]["items"]
    assert found and all(item["operation"].startswith("GET ") for item in found)
    refused = rpc(reader, "tools/call", {"name": "write", "arguments": {"operation": "POST /patients"}})
    assert refused.json()["error"]["code"] == -32602


def test_search_pages_by_ten_and_hides_account_surfaces(agent):
    first = call(agent, "search_operations", {})["structuredContent"]
    assert len(first["items"]) == 10 and first["nextOffset"] == 10
    everything, offset = [], 0
    while offset is not None:
        page = call(agent, "search_operations", {"offset": offset})["structuredContent"]
        everything += [item["operation"] for item in page["items"]]
        offset = page["nextOffset"]
    assert "GET /patients/:id" in everything and "POST /patients" in everything
    assert not [op for op in everything if op.split(" ")[1].startswith(("/user", "/organization", "/auth/sign"))]


def test_read_and_write_run_through_the_routes(agent, owner):
    created = call(
        agent, "write", {"operation": "POST /patients", "body": {"firstName": "Ada", "email": "ada@example.com"}}
    )
    assert created["isError"] is False, created
    patient = created["structuredContent"]["body"]
    assert created["structuredContent"]["status"] == 201
    listed = call(agent, "read", {"operation": "GET /patients", "query": {"q": "ada"}})["structuredContent"]
    assert [item["id"] for item in listed["body"]["items"]] == [patient["id"]]
    one = call(agent, "read", {"operation": "GET /patients/:id", "params": {"id": patient["id"]}})
    assert one["structuredContent"]["body"]["firstName"] == "Ada"


def test_an_api_error_is_the_tools_error_result(agent, outsider):
    bad = call(agent, "write", {"operation": "POST /patients", "body": {"firstName": ""}})
    assert bad["isError"] is True
    assert bad["structuredContent"]["status"] == 400
    assert set(bad["structuredContent"]["error"]) == {"code", "message", "details"}
    # Tenancy: another practice's patient is a 404 through the tool too.
    from tests.factories import PatientFactory

    foreign = PatientFactory(organization=outsider.organization)
    missing = call(agent, "read", {"operation": "GET /patients/:id", "params": {"id": str(foreign.id)}})
    assert missing["isError"] is True and missing["structuredContent"]["status"] == 404


def test_large_replies_come_in_parts(agent, owner, settings):
    from tests.factories import PatientFactory

    PatientFactory.create_batch(30, organization=owner.organization)
    settings.SVC_MCP_REPLY_LIMIT = 4000
    first = call(agent, "read", {"operation": "GET /patients", "query": {"limit": 30}})["structuredContent"]
    assert first["offset"] == 0 and first["totalBytes"] > 4000 and first["nextOffset"]
    parts, offset = [first["part"]], first["nextOffset"]
    while offset is not None:
        part = call(
            agent,
            "read",
            {"operation": "GET /patients", "query": {"limit": 30}, "range": {"offset": offset}, "etag": first["etag"]},
        )["structuredContent"]
        parts.append(part["part"])
        offset = part["nextOffset"]
    assert len(json.loads("".join(parts))["items"]) == 30
    # A changed reply (a new patient) answers to start again.
    PatientFactory(organization=owner.organization)
    changed = call(
        agent,
        "read",
        {"operation": "GET /patients", "query": {"limit": 30}, "range": {"offset": 4000}, "etag": first["etag"]},
    )
    assert changed["isError"] is True and changed["structuredContent"]["error"]["code"] == "REPLY_CHANGED"


def test_a_write_whose_reply_is_too_large_still_reports_it_was_applied(agent, owner, settings):
    settings.SVC_MCP_REPLY_LIMIT = 100
    result = call(
        agent, "write", {"operation": "POST /patients", "body": {"firstName": "Ada", "email": "ada@example.com"}}
    )
    assert result["isError"] is False, result
    reply = result["structuredContent"]
    assert reply["totalBytes"] > 100
    assert reply == {"applied": True, "status": 201, "truncated": True, "totalBytes": reply["totalBytes"]}
    assert json.loads(result["content"][0]["text"]) == reply
    created = Patient.objects.for_org(owner.organization).get()
    assert (created.first_name, created.email) == ("Ada", "ada@example.com")
    # The same write's reply under the limit is whole, and as large as reported.
    settings.SVC_MCP_REPLY_LIMIT = 16 * 1024 * 1024
    whole = call(agent, "write", {"operation": "POST /patients", "body": {"firstName": "Ada", "email": "b@ex.com"}})
    assert "truncated" not in whole["structuredContent"] and whole["structuredContent"]["body"]["firstName"] == "Ada"


# --- the connection's bucket: one tool call, one request ----------------------------------------------------------


def assert_rate_limited(result: dict, *, at_most: int) -> None:
    """The tool's error result for an empty bucket: 429 RATE_LIMITED carrying the seconds to wait, as the REST
    answer's Retry-After header and details.retryAfter do."""
    assert result["isError"] is True
    payload = result["structuredContent"]
    assert payload["status"] == 429 and payload["error"]["code"] == "RATE_LIMITED"
    assert isinstance(payload["retryAfter"], int) and 1 <= payload["retryAfter"] <= at_most
    assert payload["error"]["details"] == {"retryAfter": payload["retryAfter"]}


def test_a_tool_call_draws_exactly_one_request(agent, owner, settings):
    settings.SVC_API_KEY_BUCKET = (2, 0.001)  # two requests, then one more every 1000 s
    assert call(agent, "read", {"operation": "GET /patients"})["isError"] is False
    written = call(agent, "write", {"operation": "POST /patients", "body": {"firstName": "Ada", "email": "a@ex.com"}})
    assert written["isError"] is False, written  # the route did not draw a second request for the read
    refused = call(agent, "write", {"operation": "POST /patients", "body": {"firstName": "Bo", "email": "b@ex.com"}})
    assert_rate_limited(refused, at_most=1000)
    assert list(Patient.objects.for_org(owner.organization).values_list("first_name", flat=True)) == ["Ada"]
    assert rpc(agent, "tools/list").status_code == 200  # listing is not a tool call
    assert rpc(agent, "ping").json()["result"] == {}


def test_failed_tool_calls_count_against_the_bucket(agent, outsider, settings):
    failing = [
        ("read", {"operation": "GET /nowhere"}, "UNKNOWN_OPERATION"),
        ("read", {"operation": "GET /patients/:id", "params": {}}, "VALIDATION_ERROR"),
        ("read", {"operation": "GET /patients", "query": "q=ada"}, "VALIDATION_ERROR"),
        ("read", {"operation": "GET /patients", "practice": str(outsider.organization.id)}, "PRACTICE_NOT_FOUND"),
        ("read", {"operation": "GET /user/me"}, "BROWSER_SESSION_REQUIRED"),
        ("search_operations", {"offset": -1}, "VALIDATION_ERROR"),
    ]
    settings.SVC_API_KEY_BUCKET = (len(failing) + 1, 0.001)
    for tool, arguments, code in failing:
        result = call(agent, tool, arguments)
        assert result["isError"] is True and result["structuredContent"]["error"]["code"] == code, result
    unknown_tool = rpc(agent, "tools/call", {"name": "erase_everything", "arguments": {}})
    assert unknown_tool.json()["error"]["code"] == -32602
    # Seven calls, seven requests: the bucket is empty now.
    assert_rate_limited(call(agent, "read", {"operation": "GET /patients"}), at_most=1000)
    assert_rate_limited(call(agent, "read", {"operation": "GET /nowhere"}), at_most=1000)


def test_another_connection_of_the_same_person_has_its_own_bucket(agent, owner, settings):
    settings.SVC_API_KEY_BUCKET = (1, 0.001)
    assert call(agent, "read", {"operation": "GET /patients"})["isError"] is False
    assert_rate_limited(call(agent, "read", {"operation": "GET /patients"}), at_most=1000)
    raw, _ = mint(owner, "read", resource=[settings.SVC_MCP_URL])
    other = Client(headers={"Authorization": f"Bearer {raw}"})
    assert call(other, "read", {"operation": "GET /patients"})["isError"] is False


# --- operation ids --------------------------------------------------------------------------------------------


def test_operation_ids_name_path_params_in_camel_case(agent):
    ids = list(operations.catalogue())
    params = {segment for op in ids for segment in op.split(" ", 1)[1].split("/") if segment.startswith(":")}
    assert {":id", ":organizationId", ":userId", ":deliveryId", ":stageId"} <= params
    assert all(re.fullmatch(r":[a-z][A-Za-z0-9]*", param) for param in params), params
    found = call(agent, "search_operations", {"query": "owner-invitation"})["structuredContent"]["items"]
    assert {item["operation"] for item in found} == {
        "POST /partner/practices/:organizationId/owner-invitation",
        "DELETE /partner/practices/:organizationId/owner-invitation",
    }
    schema = found[0]["inputSchema"]["properties"]["params"]
    assert list(schema["properties"]) == ["organizationId"] and schema["required"] == ["organizationId"]


def test_only_the_camel_case_form_is_accepted(agent, owner):
    def resend(operation_path: str) -> dict:
        return call(
            agent,
            "write",
            {
                "operation": f"POST {operation_path}",
                "params": {"organization_id": str(owner.organization.id)},
                "body": {"ownerEmail": "o@example.com"},
            },
        )["structuredContent"]["error"]

    assert resend("/partner/practices/:organization_id/owner-invitation")["code"] == "UNKNOWN_OPERATION"
    # The camelCase id needs its params by the same name.
    assert resend("/partner/practices/:organizationId/owner-invitation")["details"]["fields"] == {
        "params.organizationId": ["is required (a string without '/')"]
    }


def test_a_path_param_cannot_reach_another_route(agent, owner):
    from tests.factories import PatientFactory

    patient = PatientFactory(organization=owner.organization)
    for value in (f"{patient.id}/archive", ""):
        result = call(agent, "read", {"operation": "GET /patients/:id", "params": {"id": value}})
        assert result["structuredContent"]["error"]["code"] == "VALIDATION_ERROR", result
    encoded = call(agent, "read", {"operation": "GET /patients/:id", "params": {"id": f"{patient.id}?embed=x"}})
    assert encoded["structuredContent"]["status"] == 400  # one path segment, not a query: not a UUID
    assert encoded["structuredContent"]["error"]["details"]["fields"] == {"id": ["must be a UUID"]}


# --- surfaces unavailable to agents -------------------------------------------------------------------------------


def test_account_wide_operations_answer_browser_session_required(agent, owner):
    for tool, operation in (
        ("read", "GET /user/me"),
        ("read", "GET /organization/members"),
        ("write", "PATCH /user/me"),
    ):
        result = call(
            agent,
            tool,
            {"operation": operation, "body": {"name": "X"}} if tool == "write" else {"operation": operation},
        )
        assert result["isError"] is True
        assert result["structuredContent"]["status"] == 403
        assert result["structuredContent"]["error"] == {
            "code": "BROWSER_SESSION_REQUIRED",
            "message": "This surface is available to a signed-in browser session only.",
            "details": {"operation": operation},
        }
    owner.user.refresh_from_db()
    assert owner.user.name != "X"
    # Still never listed, and a hidden route that is no account surface stays an unknown operation, as does an
    # account operation called through the other tool.
    listed = call(agent, "search_operations", {"query": "user"})["structuredContent"]["items"]
    assert not [item for item in listed if item["operation"].split(" ")[1].startswith(("/user", "/organization"))]
    for tool, operation in (("write", "POST /auth/sign-out"), ("write", "GET /user/me"), ("read", "GET /users/me")):
        result = call(agent, tool, {"operation": operation})
        assert result["structuredContent"]["error"]["code"] == "UNKNOWN_OPERATION", (operation, result)


def test_query_arguments_agents_are_given_are_the_camel_case_names_the_routes_read(agent):
    snake = [
        f"{op.id} {name}"
        for op in operations.catalogue().values()
        for name in op.input_schema["properties"].get("query", {}).get("properties", {})
        if "_" in name
    ]
    assert snake == []
    found = call(agent, "search_operations", {"query": "patients"})["structuredContent"]["items"]
    (listing,) = [item for item in found if item["operation"] == "GET /patients"]
    query = listing["inputSchema"]["properties"]["query"]["properties"]
    assert {"includeArchived", "leadSourceId", "tagId"} <= set(query)
    assert query["tagId"]["format"] == "uuid"
    assert (query["limit"]["minimum"], query["limit"]["maximum"]) == (1, 100)
