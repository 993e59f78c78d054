"""The operations agents may run, built once per process from the service's own OpenAPI schema.

An operation id is the method and the path with :params named as the spec names them, in camelCase
("GET /patients/:id", "POST /partner/practices/:organizationId/owner-invitation"); `param_name` is the one place a
path parameter's name is converted, for the id, the input schema and the path built from `params`. Surfaces the
contract keeps from agents are never listed: account-wide routes (/user, /organization, /support), team chat
(/team-chat, person to person), sign-in and other /auth routes (except GET /auth/me), /transfer/core-*, the clinical
workspace and referrals, calls and recordings, and the MCP and OAuth machinery itself. Of those, the account-wide
operations and team chat answer the spec's 403 BROWSER_SESSION_REQUIRED when called (`unavailable`); the rest are
unknown operations.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote

from apps.core.errors import ApiError, BrowserSessionRequired
from apps.core.naming import to_camel
from apps.core.permissions import BROWSER_SESSION_SURFACES, under_prefix

READ_METHODS = frozenset({"GET"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_HIDDEN_PREFIXES = (
    "/user",
    "/organization",
    "/support",
    # Person-to-person chat between colleagues: browser session only (apps.teamchat), never an agent's.
    "/team-chat",
    "/auth/",
    "/transfer/core-",
    "/day-list",
    "/book",
    "/patient-record",
    "/pms-inbox",
    "/clinical",
    # A patient's single-use form link (apps.records): the token is the patient's, never an agent's to open.
    "/patient-form/",
    "/settings/pms",  # the connected PMS's connection and sync review belong to the clinical side, not to agents
    "/referrals/clinical",
    "/dialer",
    "/calls",
    "/recordings",
    "/mcp",
    "/oauth",
    "/.well-known",
    "/health",
    # Public surfaces of websites and senders (their key or token is the boundary), not a practice's operations.
    "/capture/",
    "/site/",
    "/form-page/",
    "/marketing/unsubscribe/",  # a patient's signed opt-out link (apps.campaigns)
    "/referral/",  # referral pages: an advocate's share or status token, a friend's patient token (apps.referrals)
    "/openapi",
    "/docs",
    "/admin",
)
_ALLOWED_EXCEPTIONS = {("GET", "/auth/me")}
# Areas outside the spec's account-wide list whose routes need a browser session too (their views declare
# browser_session_only): hidden, and answered BROWSER_SESSION_REQUIRED as the REST API answers.
_SESSION_ONLY_AREAS = ("/team-chat",)
_PARAM = re.compile(r"\{([^}]+)\}")


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path_template: str  # /partner/practices/{organization_id}/owner-invitation, as in the OpenAPI schema
    summary: str
    description: str
    tags: tuple[str, ...]
    input_schema: dict
    path_params: tuple[str, ...]  # as agents name them: ("organizationId",)

    @property
    def is_read(self) -> bool:
        return self.method in READ_METHODS

    def path_for(self, params: dict) -> str:
        """The path with each parameter's value (a string without "/", checked by the caller) percent-encoded."""
        return _PARAM.sub(lambda m: quote(params[param_name(m.group(1))], safe=""), self.path_template)

    def search_text(self) -> str:
        return f"{self.id} {self.summary} {self.description} {' '.join(self.tags)}".lower()


def param_name(schema_name: str) -> str:
    """THE conversion of a path parameter's OpenAPI name (organization_id) to the name agents use (organizationId)."""
    return to_camel(schema_name)


def operation_id(method: str, path: str) -> str:
    """ "POST /partner/practices/{organization_id}/owner-invitation" → "POST /partner/practices/:organizationId/…"."""
    return f"{method} {_PARAM.sub(lambda m: ':' + param_name(m.group(1)), path)}"


def hidden(method: str, path: str) -> bool:
    if (method, path) in _ALLOWED_EXCEPTIONS:
        return False
    return path.startswith(_HIDDEN_PREFIXES)


def _resolve(node, components: dict, depth: int = 0):
    """Inline $ref'd component schemas so each input schema stands alone (agents get no components section)."""
    if depth > 12:
        return {}
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            return _resolve(components.get(ref.rsplit("/", 1)[-1], {}), components, depth + 1)
        return {key: _resolve(value, components, depth + 1) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(item, components, depth + 1) for item in node]
    return node


def _input_schema(method: str, operation: dict, path_params: list[str], components: dict) -> dict:
    properties: dict = {}
    required: list[str] = []
    if path_params:
        properties["params"] = {
            "type": "object",
            "properties": {name: {"type": "string", "minLength": 1, "pattern": "^[^/]+$"} for name in path_params},
            "required": path_params,
            "additionalProperties": False,
        }
        required.append("params")
    query = {
        p["name"]: _resolve(p.get("schema", {}), components) | {"description": p.get("description", "")}
        for p in operation.get("parameters", [])
        if p.get("in") == "query"
    }
    if query:
        properties["query"] = {"type": "object", "properties": query, "additionalProperties": False}
    body = operation.get("requestBody", {}).get("content", {})
    json_body = body.get("application/json", {}).get("schema")
    if json_body and method in WRITE_METHODS:
        properties["body"] = _resolve(json_body, components)
        if operation["requestBody"].get("required"):
            required.append("body")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _unavailable_error(path: str) -> type[ApiError] | None:
    """The answer to a hidden operation that exists (spec MCP rule 7): account-wide surfaces need a browser
    session, as the REST API answers any machine credential there (Authentication rule 9)."""
    return BrowserSessionRequired if under_prefix(path, *BROWSER_SESSION_SURFACES, *_SESSION_ONLY_AREAS) else None


@dataclass(frozen=True)
class Catalogue:
    operations: dict[str, Operation]  # listed and runnable
    unavailable: dict[str, type[ApiError]]  # exist, never listed, answered with this error


@lru_cache(maxsize=1)
def _build() -> Catalogue:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    operations: dict[str, Operation] = {}
    unavailable: dict[str, type[ApiError]] = {}
    for path, item in schema.get("paths", {}).items():
        for method_lower, operation in item.items():
            method = method_lower.upper()
            if method not in READ_METHODS | WRITE_METHODS:
                continue
            op_id = operation_id(method, path)
            if hidden(method, path):
                error = _unavailable_error(path)
                if error is not None:
                    unavailable[op_id] = error
                continue
            path_params = [param_name(name) for name in _PARAM.findall(path)]
            operations[op_id] = Operation(
                id=op_id,
                method=method,
                path_template=path,
                summary=operation.get("summary", ""),
                description=operation.get("description", ""),
                tags=tuple(operation.get("tags", ())),
                input_schema=_input_schema(method, operation, path_params, components),
                path_params=tuple(path_params),
            )
    return Catalogue(operations=operations, unavailable=unavailable)


def catalogue() -> dict[str, Operation]:
    return _build().operations


def unavailable(op_id: str) -> type[ApiError] | None:
    """The error a hidden but existing operation answers with; None for anything else."""
    return _build().unavailable.get(op_id)


def search(query: str, *, include_writes: bool) -> list[Operation]:
    """Operations matching every word of the query (all when empty), reads first, then by id."""
    words = [w for w in re.split(r"\s+", (query or "").lower().strip()) if w]
    found = [
        op
        for op in catalogue().values()
        if (include_writes or op.is_read) and all(word in op.search_text() for word in words)
    ]
    return sorted(found, key=lambda op: (not op.is_read, op.path_template, op.method))
