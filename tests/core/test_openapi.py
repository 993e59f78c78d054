"""The OpenAPI document is the single description of the API (and MCP's catalogue later)."""

import pytest

SPEC_TAGS_USED = {
    "auth",
    "user",
    "organization",
    "health",
    "patients",
    "treatments",
    "pipelines",
    "journeys",
    "marketing-consent",
    "saved-views",
    "tasks",
    "today",
    "appointments",
    "calendar",
    "scheduling",
    "settings",
    "outbound-webhooks",
    "mcp",
    "oauth",
    "capture",
    "intake-review",
    "site",
}


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        response = Client().get("/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json") or response[
        "Content-Type"
    ].startswith("application/json")
    return response.json()


def test_version_and_title(schema):
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["version"] == "0.1.0"


def test_every_operation_is_tagged_summarised_and_documents_errors(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert set(operation["tags"]) <= SPEC_TAGS_USED, where
            assert operation.get("summary"), f"{where} has no summary"
            responses = operation["responses"]
            if "oauth" in operation["tags"]:
                # OAuth protocol routes answer in OAuth's own error shape (RFC 6749 §5.2), not the ApiError envelope.
                for code in set(responses) & {"400", "401", "429"}:
                    assert responses[code]["content"]["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/OAuthError"
                    }, where
                continue
            for code in ("400", "403", "404", "429"):
                assert responses[code]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ApiError"
                }, where


def test_error_envelope_schema(schema):
    api_error = schema["components"]["schemas"]["ApiError"]
    assert set(api_error["required"]) == {"code", "message", "details"}


def test_public_routes_need_no_credential_and_others_do(schema):
    public = {
        "/health",
        "/health/runtime",
        "/auth/sign-in/email",
        "/auth/sign-up/email",
        "/auth/two-factor/verify-totp",
        "/auth/two-factor/verify-backup-code",
        "/auth/invitation-preview",
        "/auth/organization/accept-invitation",
        "/auth/organization/reject-invitation",
        "/mcp",  # authenticates itself (OAuth access tokens for the MCP server, with its own challenge)
    }
    # Public capture surfaces: the routing token, site key or hosted-form token in the path is the boundary.
    public_prefixes = ("/capture/", "/site/", "/form-page/")
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            security = operation.get("security")
            if path in public or path.startswith(public_prefixes) or "oauth" in operation["tags"]:
                assert not security or security == [{}], f"{method} {path}"
            else:
                assert security, f"{method} {path} must name its credentials"
                assert "401" in operation["responses"]


def test_oauth_protocol_routes_are_described_and_html_pages_are_not(schema):
    paths = schema["paths"]
    for path in (
        "/auth/oauth2/token",
        "/auth/oauth2/revoke",
        "/auth/oauth2/introspect",
        "/auth/oauth2/register",
        "/.well-known/oauth-authorization-server/auth",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        assert path in paths, path
    for page in ("/auth/oauth2/authorize", "/auth/oauth2/consent", "/auth/oauth2/continue", "/oauth/authorize"):
        assert page not in paths
    token = schema["components"]["schemas"]["OAuthTokenResponse"]["properties"]
    assert {"access_token", "refresh_token", "api_base_url", "organization_id", "organization_country"} <= set(token)


def test_wire_names_are_camel_case(schema):
    me = schema["components"]["schemas"]["MeOrganization"]["properties"]
    assert {"memberRole", "defaultWorkspace", "hideOtherWorkspace", "pmsAccess", "accessGeneration"} <= set(me)


def test_swagger_ui_is_served_from_local_assets(client):
    response = client.get("/docs")
    assert response.status_code == 200
    assert b"/static/drf_spectacular_sidecar/" in response.content
