"""The operations agents may run, built once per process from the service's own OpenAPI schema.

An operation id is the method and the path with :params ("GET /patients/:id"). Surfaces the contract keeps from
agents are never listed: account-wide routes (/user, /organization), sign-in and other /auth routes (except
GET /auth/me), /transfer/core-*, the clinical workspace and referrals, calls and recordings, and the MCP and OAuth
machinery itself.
"""

import re
from dataclasses import dataclass
from functools import lru_cache

READ_METHODS = frozenset({"GET"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_HIDDEN_PREFIXES = (
    "/user",
    "/organization",
    "/auth/",
    "/transfer/core-",
    "/day-list",
    "/book",
    "/patient-record",
    "/pms-inbox",
    "/clinical",
    "/referrals/clinical",
    "/dialer",
    "/calls",
    "/recordings",
    "/mcp",
    "/oauth",
    "/.well-known",
    "/health",
    "/openapi",
    "/docs",
    "/admin",
)
_ALLOWED_EXCEPTIONS = {("GET", "/auth/me")}
_PARAM = re.compile(r"\{([^}]+)\}")


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path_template: str  # /patients/{id}
    summary: str
    description: str
    tags: tuple[str, ...]
    input_schema: dict
    path_params: tuple[str, ...]

    @property
    def is_read(self) -> bool:
        return self.method in READ_METHODS

    def path_for(self, params: dict) -> str:
        return _PARAM.sub(lambda m: str(params[m.group(1)]), self.path_template)

    def search_text(self) -> str:
        return f"{self.id} {self.summary} {self.description} {' '.join(self.tags)}".lower()


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
            "properties": {name: {"type": "string"} for name in path_params},
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


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Operation]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    operations: dict[str, Operation] = {}
    for path, item in schema.get("paths", {}).items():
        for method_lower, operation in item.items():
            method = method_lower.upper()
            if method not in READ_METHODS | WRITE_METHODS or hidden(method, path):
                continue
            path_params = _PARAM.findall(path)
            op_id = f"{method} {_PARAM.sub(lambda m: ':' + m.group(1), path)}"
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
    return operations


def search(query: str, *, include_writes: bool) -> list[Operation]:
    """Operations matching every word of the query (all when empty), reads first, then by id."""
    words = [w for w in re.split(r"\s+", (query or "").lower().strip()) if w]
    found = [
        op
        for op in catalogue().values()
        if (include_writes or op.is_read) and all(word in op.search_text() for word in words)
    ]
    return sorted(found, key=lambda op: (not op.is_read, op.path_template, op.method))
