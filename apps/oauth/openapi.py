"""OpenAPI for the OAuth protocol routes (django-oauth-toolkit's Django views, which drf-spectacular cannot see):
a postprocessing hook adds token, revoke, introspect, register and the two discovery documents, tagged "oauth",
with OAuth's own error shape {error, error_description} (RFC 6749 §5.2). The HTML pages (authorize, consent,
continue) and the developer front door (redirects only) are not part of the JSON API description."""

OAUTH_TAG = "oauth"

_ERROR = {"$ref": "#/components/schemas/OAuthError"}


def _form(properties: dict, required: list[str]) -> dict:
    return {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {"type": "object", "properties": properties, "required": required}
            }
        },
    }


def _json(ref: str, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ref}}}}


def _errors(*codes: str) -> dict:
    descriptions = {
        "400": "OAuth error (invalid_request, invalid_grant, invalid_scope, invalid_target, "
        "invalid_redirect_uri, invalid_client_metadata, unsupported_grant_type…).",
        "401": "invalid_client: unknown client, failed client authentication, or a registration removed after "
        "24 hours unapproved.",
        "429": "rate_limited: more than 300 requests a minute from this address block (IPv4 /24, IPv6 /64); "
        "Retry-After: 60.",
    }
    return {
        code: {"description": descriptions[code], "content": {"application/json": {"schema": _ERROR}}} for code in codes
    }


def _operation(operation_id: str, summary: str, description: str, responses: dict, **extra) -> dict:
    return {
        "operationId": operation_id,
        "tags": [OAUTH_TAG],
        "summary": summary,
        "description": description,
        "security": [],
        "responses": responses,
        **extra,
    }


_STRING = {"type": "string"}

SCHEMAS = {
    "OAuthError": {
        "type": "object",
        "properties": {"error": _STRING, "error_description": _STRING},
        "required": ["error"],
    },
    "OAuthTokenResponse": {
        "type": "object",
        "properties": {
            "access_token": {"type": "string", "description": "svc_oat_<region>_…; valid 3600 seconds."},
            "refresh_token": {
                "type": "string",
                "description": "svc_ort_<region>_…; only with offline_access; rotated on every use (store the "
                "new one; replaying an old one revokes the whole chain).",
            },
            "token_type": {"type": "string", "enum": ["Bearer"]},
            "expires_in": {"type": "integer", "example": 3600},
            "scope": _STRING,
            "api_base_url": {"type": "string", "description": "Authorization-code responses only."},
            "organization_id": {"type": "string", "format": "uuid", "description": "Authorization-code only."},
            "organization_name": {"type": "string", "description": "Authorization-code responses only."},
            "organization_country": _STRING,
        },
        "required": ["access_token", "token_type", "expires_in", "scope"],
    },
    "OAuthIntrospection": {
        "type": "object",
        "description": "RFC 7662 for access tokens; anything else (a refresh token included) is only {active: false}.",
        "properties": {
            "active": {"type": "boolean", "description": "true only for a live access token of the calling client."},
            "scope": _STRING,
            "client_id": _STRING,
            "username": _STRING,
            "token_type": _STRING,
            "exp": {"type": "integer"},
            "iat": {"type": "integer"},
            "sub": _STRING,
            "iss": _STRING,
            "aud": {"type": "array", "items": _STRING},
            "organization_id": {"type": "string", "format": "uuid"},
        },
        "required": ["active"],
    },
    "OAuthClientMetadata": {
        "type": "object",
        "properties": {
            "redirect_uris": {"type": "array", "items": _STRING, "minItems": 1, "maxItems": 3},
            "client_name": {"type": "string", "description": "Trimmed to 80 characters."},
            "token_endpoint_auth_method": {
                "type": "string",
                "enum": ["none", "client_secret_basic", "client_secret_post"],
                "description": "Registered as none whatever is asked (RFC 7591 §3.2.1): every registered client is "
                "public. The secret methods the metadata lists serve confidential apps made in the back office.",
            },
            "grant_types": {
                "type": "array",
                "items": {"type": "string", "enum": ["authorization_code", "refresh_token"]},
            },
            "response_types": {"type": "array", "items": {"type": "string", "enum": ["code"]}},
            "scope": _STRING,
        },
        "required": ["redirect_uris"],
    },
    "OAuthClientRegistration": {
        "type": "object",
        "properties": {
            "client_id": _STRING,
            "client_id_issued_at": {"type": "integer"},
            "client_name": _STRING,
            "redirect_uris": {"type": "array", "items": _STRING},
            "grant_types": {"type": "array", "items": _STRING},
            "response_types": {"type": "array", "items": _STRING},
            "token_endpoint_auth_method": _STRING,
            "scope": _STRING,
        },
        "required": ["client_id", "redirect_uris", "grant_types", "token_endpoint_auth_method", "scope"],
    },
    "OAuthServerMetadata": {"type": "object", "description": "RFC 8414 authorization server metadata."},
    "OAuthProtectedResourceMetadata": {"type": "object", "description": "RFC 9728 protected resource metadata."},
}

PATHS = {
    "/auth/oauth2/token": {
        "post": _operation(
            "oauth2_token",
            "Exchange an authorization code (PKCE S256) or a refresh token",
            "Form-encoded. authorization_code: client_id, code, code_verifier, redirect_uri. refresh_token: "
            "client_id, refresh_token (rotated). resource (RFC 8707) may name the MCP server. The refresh response "
            "omits api_base_url, organization_id and organization_name.",
            {"200": _json("#/components/schemas/OAuthTokenResponse", "Tokens.")} | _errors("400", "401", "429"),
            requestBody=_form(
                {
                    "grant_type": {"type": "string", "enum": ["authorization_code", "refresh_token"]},
                    "client_id": _STRING,
                    "client_secret": _STRING,
                    "code": _STRING,
                    "code_verifier": _STRING,
                    "redirect_uri": _STRING,
                    "refresh_token": _STRING,
                    "resource": _STRING,
                },
                ["grant_type"],
            ),
        )
    },
    "/auth/oauth2/revoke": {
        "post": _operation(
            "oauth2_revoke",
            "Revoke a token and disconnect its connection (RFC 7009)",
            "Form-encoded: token, token_type_hint, client_id (client_secret for confidential clients). Always 200 "
            "for a token this client does not hold.",
            {"200": {"description": "Revoked (or unknown)."}} | _errors("400", "401", "429"),
            requestBody=_form(
                {"token": _STRING, "token_type_hint": _STRING, "client_id": _STRING, "client_secret": _STRING},
                ["token"],
            ),
        )
    },
    "/auth/oauth2/introspect": {
        "post": _operation(
            "oauth2_introspect",
            "Introspect an access token of this client (RFC 7662)",
            "Form-encoded: token and client_id (confidential clients authenticate). Reports access tokens only: "
            'a refresh token answers {"active": false} even while it can still be used, as do unknown, expired '
            "and revoked tokens, tokens of a disconnected connection and tokens of other clients.",
            {"200": _json("#/components/schemas/OAuthIntrospection", "Token state.")} | _errors("400", "401", "429"),
            requestBody=_form({"token": _STRING, "client_id": _STRING, "client_secret": _STRING}, ["token"]),
        )
    },
    "/auth/oauth2/register": {
        "post": _operation(
            "oauth2_register",
            "Register a client dynamically (RFC 7591)",
            "Every client is public (token_endpoint_auth_method none) with PKCE S256, the authorization_code and "
            "refresh_token grants and the scopes read, write, offline_access. One to three redirect URIs, each an "
            "allowed assistant callback or a loopback address, else invalid_redirect_uri. Unapproved registrations "
            "are removed after 24 hours.",
            {"201": _json("#/components/schemas/OAuthClientRegistration", "Registered.")} | _errors("400", "429"),
            requestBody={
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthClientMetadata"}}},
            },
        )
    },
    "/.well-known/oauth-authorization-server/auth": {
        "get": _operation(
            "oauth2_server_metadata",
            "Authorization server metadata (RFC 8414; issuer {base_url}/auth)",
            "Public and cacheable for an hour.",
            {"200": _json("#/components/schemas/OAuthServerMetadata", "Metadata.")},
        )
    },
    "/.well-known/oauth-protected-resource/mcp": {
        "get": _operation(
            "oauth2_protected_resource_metadata",
            "MCP protected resource metadata (RFC 9728)",
            "Public and cacheable for an hour.",
            {"200": _json("#/components/schemas/OAuthProtectedResourceMetadata", "Metadata.")},
        )
    },
}


def add_oauth_paths(result, generator, request, public):
    """drf-spectacular POSTPROCESSING_HOOKS entry."""
    result.setdefault("paths", {}).update(PATHS)
    result.setdefault("components", {}).setdefault("schemas", {}).update(SCHEMAS)
    return result
