"""The three MCP tools: search_operations, read and write.

read and write run one operation through its ordinary route as the connection's person, in the connection's
practice, narrowed by its scopes; an API error comes back as the tool's error result carrying the ApiError. Every
tools/call draws exactly one request from the connection's bucket, first, whatever then happens (Session.call);
the internal request it may make draws nothing more. Replies come whole up to SVC_MCP_REPLY_LIMIT (16 MiB); a
larger one comes in parts tied to an ETag.
"""

import base64
import dataclasses
import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace

from django.conf import settings

from apps.core.credentials import Credential
from apps.core.errors import ApiError, ValidationFailed
from apps.core.limits import API_CREDENTIAL_LIMIT
from apps.mcp import dispatch, operations
from apps.oauth import public as oauth

SEARCH_PAGE = 10
WRITE_SCOPES_SUFFIX = ".write"
TEXT_TYPES = ("text/", "application/json")  # replies passed as text; anything else is base64


class UnknownTool(Exception):
    """Not a tool of this connection, or no tool name and arguments object at all: JSON-RPC -32602."""


class ReplyChanged(ApiError):
    status_code = 409
    code = "REPLY_CHANGED"
    message = "The reply changed since its first part: read again from offset 0."


class AgencyUnavailable(ApiError):
    status_code = 403
    code = "AGENCY_UNAVAILABLE"
    message = "This operation is not available through an agency connection."


# Spec rule 8: unavailable through an agency connection.
AGENCY_UNAVAILABLE = frozenset({"POST /leads", "POST /settings/webhook-endpoints/subscriptions"})


class UnknownOperation(ApiError):
    status_code = 400
    code = "UNKNOWN_OPERATION"
    message = "No such operation for this tool; find one with search_operations."


def tool_result(payload: dict, *, is_error: bool = False) -> dict:
    return {
        "content": [{"type": "text", "text": json.dumps(payload, separators=(",", ":"), default=str)}],
        "structuredContent": payload,
        "isError": is_error,
    }


def error_result(status: int, api_error: dict, *, retry_after: str | None = None) -> dict:
    """The tool's error result: the HTTP status and the ApiError, plus `retryAfter` (seconds) where the REST answer
    carries a Retry-After header (429 and 503), so an agent waits as any client would."""
    extra = {"retryAfter": int(retry_after)} if retry_after and retry_after.isdigit() else {}
    return tool_result({"status": status, "error": api_error} | extra, is_error=True)


def api_error_result(exc: ApiError) -> dict:
    return error_result(exc.status_code, exc.body(), retry_after=exc.headers().get("Retry-After"))


def _reply_error_result(reply: dispatch.Reply) -> dict:
    body = reply.json() or {"code": "ERROR", "message": "", "details": {}}
    return error_result(reply.status, body, retry_after=reply.retry_after)


_OBJECT = {"type": "object", "additionalProperties": True}
_PARAMS = {"type": "object", "description": 'Path parameters, e.g. {"id": "…"}.', "additionalProperties": True}
_QUERY = {"type": "object", "description": "Query parameters of the operation.", "additionalProperties": True}
_PRACTICE = {
    "type": "string",
    "description": "Agency connections: an organizationId from GET /partner/practices to act inside that practice.",
}


def _definitions(include_write: bool) -> list[dict]:
    tools = [
        {
            "name": "search_operations",
            "description": "Find operations by keywords (e.g. 'patients archive'). Ten per page; pass nextOffset as "
            "offset for more. Each result has the operation id (method and path, e.g. 'GET /patients/:id') and "
            "the JSON Schema of its input.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords; empty lists everything."},
                    "offset": {"type": "integer", "minimum": 0},
                    "practice": _PRACTICE,
                },
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "read",
            "description": "Run a GET operation, e.g. {operation: 'GET /patients', query: {q: 'rossi'}}. Replies "
            "over 16 MiB come in parts: pass range {offset, length} and the etag of the first part.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "operation": {"type": "string", "description": "An operation id starting with GET."},
                    "params": _PARAMS,
                    "query": _QUERY,
                    "range": {
                        "type": "object",
                        "properties": {
                            "offset": {"type": "integer", "minimum": 0},
                            "length": {"type": "integer", "minimum": 1},
                        },
                        "required": ["offset"],
                        "additionalProperties": False,
                    },
                    "etag": {"type": "string"},
                    "practice": _PRACTICE,
                },
                "required": ["operation"],
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": True},
        },
    ]
    if include_write:
        tools.append(
            {
                "name": "write",
                "description": "Run a POST, PUT, PATCH or DELETE operation, e.g. {operation: 'POST /patients', "
                "body: {firstName: 'Ada', email: 'ada@example.com'}}.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "operation": {"type": "string"},
                        "params": _PARAMS,
                        "query": _QUERY,
                        "body": _OBJECT | {"description": "The JSON body of the operation."},
                        "practice": _PRACTICE,
                    },
                    "required": ["operation"],
                    "additionalProperties": False,
                },
                "annotations": {"readOnlyHint": False, "destructiveHint": True},
            }
        )
    return tools


def may_write(scopes: frozenset[str]) -> bool:
    return "write" in scopes or any(scope.endswith(WRITE_SCOPES_SUFFIX) for scope in scopes)


def _decode(body: bytes, content_type: str):
    """(value, encoding): JSON as data, text as text, anything else base64."""
    if content_type.startswith("application/json"):
        try:
            return json.loads(body), "json"
        except ValueError:
            pass
    if content_type.startswith(TEXT_TYPES):
        return body.decode("utf-8", errors="replace"), "text"
    return base64.b64encode(body).decode(), "base64"


def _utf8_cut(body: bytes, start: int, end: int) -> int:
    """Move a text part's end to a character boundary so it never splits a character: back, unless that would
    leave the part empty (a length shorter than the character at start), then forward past that character."""
    cut = end
    while start < cut < len(body) and (body[cut] & 0xC0) == 0x80:
        cut -= 1
    if cut > start:
        return cut
    while end < len(body) and (body[end] & 0xC0) == 0x80:
        end += 1
    return end


@dataclass
class Session:
    user: object
    credential: Credential
    # The agent's network address (the /mcp request's REMOTE_ADDR): the in-process calls carry it, so rate limits
    # by address and the audit log's address block see the agent, not this process.
    remote_addr: str = ""

    @classmethod
    def for_token(cls, token, *, remote_addr: str = "") -> "Session":
        return cls(user=token.user, credential=oauth.credential_for(token), remote_addr=remote_addr)

    @property
    def writes_allowed(self) -> bool:
        return may_write(self.credential.scopes or frozenset())

    def tool_definitions(self) -> list[dict]:
        return _definitions(self.writes_allowed)

    def call(self, name, arguments) -> dict:
        """One tools/call. It draws its one request from the connection's bucket before anything else, so a call
        that fails (unknown tool or operation, bad arguments, a practice not found, a refused route) counts too;
        an empty bucket raises RateLimited (429, Retry-After)."""
        API_CREDENTIAL_LIMIT.check(SimpleNamespace(auth=self.credential), None)
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise UnknownTool(name)
        if name == "search_operations":
            return self.search(arguments)
        if name == "read":
            return self.run(arguments, read=True)
        if name == "write" and self.writes_allowed:
            return self.run(arguments, read=False)
        raise UnknownTool(name)

    # --- tools ------------------------------------------------------------------------------------------------

    def search(self, arguments: dict) -> dict:
        query, offset = arguments.get("query", ""), arguments.get("offset", 0)
        if not isinstance(query, str):
            raise ValidationFailed.for_field("query", "must be a string")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValidationFailed.for_field("offset", "must be an integer >= 0")
        found = [
            op
            for op in operations.search(query, include_writes=self.writes_allowed)
            if not (op.id in AGENCY_UNAVAILABLE and self.is_agency)
        ]
        page = found[offset : offset + SEARCH_PAGE]
        next_offset = offset + SEARCH_PAGE if offset + SEARCH_PAGE < len(found) else None
        items = [
            {
                "operation": op.id,
                "summary": op.summary,
                "tool": "read" if op.is_read else "write",
                "inputSchema": op.input_schema,
            }
            for op in page
        ]
        return tool_result({"items": items, "total": len(found), "nextOffset": next_offset})

    def run(self, arguments: dict, *, read: bool) -> dict:
        operation = self._operation(arguments.get("operation"), read=read)
        params = arguments.get("params") or {}
        query = arguments.get("query") or {}
        if not isinstance(params, dict) or not isinstance(query, dict):
            raise ValidationFailed("params and query must be objects.")
        for name in operation.path_params:
            value = params.get(name)
            if not isinstance(value, str) or not value or "/" in value:
                raise ValidationFailed.for_field(f"params.{name}", "is required (a string without '/')")
        body = arguments.get("body") if not read else None
        if self.is_agency and operation.id in AGENCY_UNAVAILABLE:
            raise AgencyUnavailable(details={"operation": operation.id})
        credential = self._acting_credential(arguments.get("practice"))
        reply = dispatch.run(
            method=operation.method,
            path=operation.path_for(params),
            query=query,
            body=body,
            user=self.user,
            # This call's request was drawn in call(); the route must not draw it again from the same bucket.
            credential=dataclasses.replace(credential, bucket_id=None),
            remote_addr=self.remote_addr,
        )
        if read:
            return self._read_reply(reply, arguments)
        return self._write_reply(reply)

    # --- helpers -----------------------------------------------------------------------------------------------

    @cached_property
    def is_agency(self) -> bool:
        from apps.accounts.models import Organization

        return Organization.objects.filter(
            pk=self.credential.bound_organization_id, kind=Organization.Kind.PARTNER
        ).exists()

    def _acting_credential(self, practice) -> Credential:
        """Without `practice`, the connection's own organization; with it, a practice the agency created and still
        links, with the person's current role (anything else: 404 PRACTICE_NOT_FOUND)."""
        if practice is None:
            return self.credential
        if not isinstance(practice, str):
            raise ValidationFailed.for_field("practice", "must be an organizationId from GET /partner/practices")
        from apps.partners.public import practice_credential

        return practice_credential(user=self.user, credential=self.credential, practice_id=practice)

    def _operation(self, operation_id, *, read: bool) -> operations.Operation:
        if not isinstance(operation_id, str):
            raise ValidationFailed.for_field("operation", "is required (an id from search_operations)")
        operation_id = operation_id.strip()
        operation = operations.catalogue().get(operation_id)
        unavailable = operations.unavailable(operation_id) if operation is None else None
        if unavailable is not None and operation_id.startswith("GET ") == read:  # it exists, for this tool
            raise unavailable(details={"operation": operation_id})
        if operation is None or operation.is_read != read:
            raise UnknownOperation(details={"operation": operation_id, "tool": "read" if read else "write"})
        return operation

    def _read_reply(self, reply: dispatch.Reply, arguments: dict) -> dict:
        limit = settings.SVC_MCP_REPLY_LIMIT
        wanted = arguments.get("range")
        if reply.status >= 400:
            return _reply_error_result(reply)
        if wanted is None and len(reply.body) <= limit:
            value, encoding = _decode(reply.body, reply.content_type)
            return tool_result(
                {"status": reply.status, "contentType": reply.content_type, "body": value}
                | ({"encoding": encoding} if encoding != "json" else {})
            )
        etag = '"' + hashlib.sha256(reply.body).hexdigest() + '"'
        offset, length = 0, limit
        if wanted is not None:
            if not isinstance(wanted, dict) or not isinstance(wanted.get("offset"), int) or wanted["offset"] < 0:
                raise ValidationFailed.for_field("range.offset", "must be an integer >= 0")
            offset = wanted["offset"]
            length = wanted.get("length", limit)
            if not isinstance(length, int) or not 1 <= length <= limit:
                raise ValidationFailed.for_field("range.length", f"must be an integer from 1 to {limit}")
            if offset and arguments.get("etag") != etag:
                raise ReplyChanged(details={"etag": etag, "totalBytes": len(reply.body)})
        text = reply.content_type.startswith(TEXT_TYPES)  # the rule of whole replies (_decode): others base64
        end = min(len(reply.body), offset + length)
        if text:
            end = _utf8_cut(reply.body, offset, end)
        chunk = reply.body[offset:end]
        payload = {
            "status": reply.status,
            "contentType": reply.content_type,
            "totalBytes": len(reply.body),
            "etag": etag,
            "offset": offset,
            "nextOffset": end if end < len(reply.body) else None,
            "part": chunk.decode("utf-8", errors="replace") if text else base64.b64encode(chunk).decode(),
            "encoding": "text" if text else "base64",
        }
        return tool_result(payload)

    def _write_reply(self, reply: dispatch.Reply) -> dict:
        if reply.status >= 400:
            return _reply_error_result(reply)
        if len(reply.body) > settings.SVC_MCP_REPLY_LIMIT:
            return tool_result(
                {"applied": True, "status": reply.status, "truncated": True, "totalBytes": len(reply.body)}
            )
        value, encoding = _decode(reply.body, reply.content_type) if reply.body else (None, "json")
        return tool_result(
            {"applied": True, "status": reply.status, "body": value}
            | ({"encoding": encoding} if encoding != "json" else {})
        )
