"""POST /mcp: a stateless Streamable HTTP MCP server (JSON responses, no session), as an ordinary Django view.

Rules (spec "MCP server"): POST only (GET/DELETE 405); one JSON-RPC message per request (a batch is -32600);
notifications and client responses answer 202; a request with an Origin header is 403; OAuth access tokens issued
for this server only — anything else is 401 with a Bearer challenge naming the protected-resource metadata and the
scopes. Tools run operations through the ordinary routes (apps/mcp/dispatch.py).
"""

import json
import logging

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema

from apps.accounts.authentication import OAUTH_ACCESS_PREFIX, bearer_token
from apps.core.errors import ApiError, AuthUnavailable, NotAuthenticated, bearer_challenge
from apps.core.views import BaseApiView
from apps.mcp import tools
from apps.oauth import public as oauth

logger = logging.getLogger("apps.mcp")

SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "practice-crm", "title": "Practice CRM", "version": "0.1.0"}
INSTRUCTIONS = (
    "Practice CRM for dental practices. Use search_operations to find an operation (e.g. 'patients'), then read "
    "(GET) or write (POST, PUT, PATCH, DELETE) with its id, e.g. read {operation: 'GET /patients', query: {q: "
    "'rossi'}}. Every call runs with your role and your connection's scopes in the practice you connected."
)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603


def _rpc_error(code: int, message: str, *, id=None, status: int = 200, data=None) -> JsonResponse:
    error = {"code": code, "message": message} | ({"data": data} if data is not None else {})
    return JsonResponse({"jsonrpc": "2.0", "id": id, "error": error}, status=status)


def _rpc_result(id, result: dict) -> JsonResponse:
    return JsonResponse({"jsonrpc": "2.0", "id": id, "result": result})


def challenge(error: str | None = None) -> str:
    return bearer_challenge(
        error=error,
        resource_metadata=f"{settings.SVC_BASE_URL}/.well-known/oauth-protected-resource/mcp",
        scope="read write offline_access",
    )


def _unauthorized(message: str, *, error: str | None = "invalid_token", details: dict | None = None) -> JsonResponse:
    response = JsonResponse(
        {"code": "UNAUTHENTICATED", "message": message, "details": details or {}},
        status=401,
    )
    response["WWW-Authenticate"] = challenge(error)
    return response


class McpView(BaseApiView):
    public = True  # authenticates itself: OAuth access tokens for this server only, with its own challenge
    error_statuses = ("401",)
    http_method_names = ["post", "get", "delete", "options"]

    @extend_schema(
        tags=["mcp"],
        request={"application/json": {"type": "object", "description": "One JSON-RPC 2.0 message."}},
        responses={
            (200, "application/json"): {"type": "object", "description": "The JSON-RPC response."},
            202: None,
        },
        summary="MCP server (stateless Streamable HTTP, JSON responses) for AI agents; OAuth access tokens only",
        description="Tools: search_operations, read, write. 401 carries WWW-Authenticate: Bearer resource_metadata="
        '"{base_url}/.well-known/oauth-protected-resource/mcp", scope="read write offline_access".',
    )
    def post(self, request):
        django_request = request._request
        if "Origin" in request.headers:
            return _rpc_error(INVALID_REQUEST, "Requests with an Origin header are refused.", status=403)
        raw = None
        try:
            raw = bearer_token(request)
        except NotAuthenticated as exc:
            return _unauthorized(exc.message)
        if not raw:
            return _unauthorized("An OAuth access token is required.", error=None)
        if not raw.startswith(OAUTH_ACCESS_PREFIX):
            return _unauthorized("Only OAuth access tokens are accepted here.")
        try:
            token = oauth.verify(raw, audiences={settings.SVC_MCP_URL}, request=request)
        except AuthUnavailable as exc:
            response = JsonResponse(exc.body(), status=exc.status_code)
            response["Retry-After"] = str(exc.retry_after)
            return response
        except NotAuthenticated as exc:
            return _unauthorized(exc.message, details=exc.details)
        oauth.connection_touch(
            token.connection_id, last_used_at=token.connection.last_used_at
        )  # GET /connected-apps shows when the app was last used, as for REST
        try:
            message = json.loads(django_request.body)
        except (ValueError, UnicodeDecodeError):
            return _rpc_error(PARSE_ERROR, "The body is not JSON.", status=400)
        if isinstance(message, list):
            return _rpc_error(
                INVALID_REQUEST, "Batches are not supported: send one JSON-RPC message per request.", status=400
            )
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _rpc_error(INVALID_REQUEST, "Expected one JSON-RPC 2.0 message.", status=400)
        method, rpc_id = message.get("method"), message.get("id")
        if method is None or rpc_id is None:
            return HttpResponse(status=202)  # a notification, or a response to us: nothing to answer
        if not isinstance(method, str):
            return _rpc_error(INVALID_REQUEST, "method must be a string.", id=rpc_id, status=400)
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return _rpc_error(INVALID_PARAMS, "params must be an object.", id=rpc_id)
        return self.handle(method, params, rpc_id, token, request)

    def handle(self, method: str, params: dict, rpc_id, token, request):
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
            return _rpc_result(
                rpc_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": SERVER_INFO,
                    "instructions": INSTRUCTIONS,
                },
            )
        if method not in ("ping", "tools/list", "tools/call"):
            return _rpc_error(METHOD_NOT_FOUND, f"Method not found: {method}", id=rpc_id)
        header_version = request.headers.get("MCP-Protocol-Version")
        if header_version is not None and header_version not in SUPPORTED_VERSIONS:
            return _rpc_error(
                INVALID_REQUEST,
                f"Unsupported MCP-Protocol-Version {header_version!r}.",
                id=rpc_id,
                status=400,
                data={"supported": list(SUPPORTED_VERSIONS)},
            )
        if method == "ping":
            return _rpc_result(rpc_id, {})
        session = tools.Session.for_token(token, remote_addr=request.META.get("REMOTE_ADDR", ""))
        if method == "tools/list":
            return _rpc_result(rpc_id, {"tools": session.tool_definitions()})
        name = params.get("name")
        try:
            result = session.call(name, params.get("arguments") or {})
        except tools.UnknownTool:
            return _rpc_error(
                INVALID_PARAMS, f"tools/call needs a tool of this connection and arguments: {name!r}", id=rpc_id
            )
        except ApiError as exc:
            result = tools.api_error_result(exc)
        return _rpc_result(rpc_id, result)
