"""The OpenAPI document is the single description of the API (and MCP's catalogue later)."""

import pytest

# The spec's tag groups, copied exactly as /work/shared/spec/practice-crm-api.md writes them (section "What the service
# does", item 5, line 15: "Tag groups of the API: …"). Copied, not parsed: CI must not depend on ../shared. The line
# ends with "a tag for a national treatment-submission scheme" without naming it, so no name is listed for it.
SPEC_TAG_GROUPS = frozenset(
    {
        "patients", "marketing-consent", "saved-views", "journeys", "pipelines", "tasks", "today", "reports",
        "calendar", "inbox", "report-subscriptions", "notifications", "Team chat", "campaigns", "bootstrap",
        "billing", "organization", "appointments", "settings", "capture", "site", "ingest-review", "intake-review",
        "leads", "connected-apps", "outbound-webhooks", "templates", "AI Voice", "chat-widget", "widget", "booking",
        "scheduling", "Channel connections", "pms", "automations", "payments", "deposits", "referrals", "dialer",
        "voice", "dialer-connections", "audit-log", "data-transfer", "lead-ads", "agreements", "reputation-public",
        "reputation", "seo", "seo-google", "seo-public", "ads", "Clinical storage", "Treatment plans",
        "Clinical notes", "Medical history", "Patient forms", "Recalls", "Ledger", "Invoices", "Card terminal",
        "Perio", "Insurance", "NHS", "Prescriptions", "Lab cases", "Clinical referrals", "Letters", "Waitlist",
        "Treatment templates", "Statements", "Memberships", "Payment plans", "Till", "Accounting", "Compliance",
        "Practice archive",
    }
)  # fmt: skip

# Our own tags, for operations the spec files under no tag group. Listed one by one so that a misspelt spec group
# (say "outbound-webhook") fails instead of passing as an extra.
ALLOWED_EXTRA_TAGS = {
    "auth": "sign-up, sign-in, two-factor steps, API keys, /auth/me, invitations answered before joining",
    "user": "the signed-in person's own account (/user/*)",
    "health": "liveness and readiness probes",
    "oauth": "the OAuth authorization server's protocol routes and discovery documents",
    "mcp": "the MCP server endpoint",
    "partners": "partner agency routes (/partner/*)",
    "treatments": "the practice's treatment catalogue",
    "support": "the signed-in person's chat with the platform's support staff (/support/*)",
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


def test_every_operation_has_a_summary_and_a_description(schema):
    missing = [
        f"{method.upper()} {path}: {field}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        for field in ("summary", "description")
        if not (operation.get(field) or "").strip()
    ]
    assert not missing, missing


def test_every_tag_is_a_spec_group_or_an_allowed_extra(schema):
    assert not SPEC_TAG_GROUPS & set(ALLOWED_EXTRA_TAGS), "an extra tag shadows a spec group"
    wrong = [
        f"{method.upper()} {path}: {tag!r}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        for tag in operation.get("tags") or [None]
        if tag not in SPEC_TAG_GROUPS and tag not in ALLOWED_EXTRA_TAGS
    ]
    assert not wrong, wrong


def test_connected_apps_and_partner_routes_carry_their_tags(schema):
    paths = schema["paths"]
    assert paths["/connected-apps"]["get"]["tags"] == ["connected-apps"]
    assert paths["/connected-apps/{id}"]["delete"]["tags"] == ["connected-apps"]
    assert paths["/partner/practices"]["post"]["tags"] == ["partners"]


def test_error_envelope_schema(schema):
    api_error = schema["components"]["schemas"]["ApiError"]
    assert set(api_error["required"]) == {"code", "message", "details"}


def test_public_routes_need_no_credential_and_others_do(schema):
    public = {
        "/health",
        "/health/runtime",
        "/auth/sign-in/email",
        "/auth/sign-up/email",
        "/auth/request-password-reset",
        "/auth/reset-password",
        "/auth/send-verification-email",
        "/auth/verify-email",
        "/auth/two-factor/verify-totp",
        "/auth/two-factor/verify-backup-code",
        "/auth/invitation-preview",
        "/auth/organization/accept-invitation",
        "/auth/organization/reject-invitation",
        "/mcp",  # authenticates itself (OAuth access tokens for the MCP server, with its own challenge)
        "/marketing/unsubscribe/{token}",  # the signed opt-out token in the path is the boundary
        "/auth/payments-billing/webhook",  # the payment platform's billing callback, verified by its signature
    }
    # Public capture surfaces: the routing token, site key or hosted-form token in the path is the boundary.
    # Provider callbacks (/webhooks/*) are verified with the provider's own signature over the body.
    public_prefixes = (
        "/capture/",
        "/site/",
        "/form-page/",
        "/webhooks/",
        "/referral/",
        "/l/",
        "/booking/",
        "/widget/",
        "/r/",
        "/patient-form/",  # the patient form page (apps.records): its single-use token is the boundary
    )
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


# --- precision: the schema is what clients are generated from and what MCP agents are given ---------------------


def _query_parameters(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    yield f"{method.upper()} {path}", parameter


def test_query_parameters_carry_the_camel_case_names_the_server_reads(schema):
    # BaseApiView.parse_query reads camelCase; a snake_case name in the schema sends clients to the wrong key.
    snake = [f"{where} ?{p['name']}" for where, p in _query_parameters(schema) if "_" in p["name"]]
    assert snake == []
    patients = {p["name"] for p in schema["paths"]["/patients"]["get"]["parameters"] if p["in"] == "query"}
    assert {"includeArchived", "leadSourceId", "tagId"} <= patients


def test_every_limit_and_offset_states_its_bounds(schema):
    unbounded = [
        f"{where} ?{p['name']}"
        for where, p in _query_parameters(schema)
        if p["name"] in ("limit", "offset") and not {"minimum", "maximum"} <= set(p["schema"])
    ]
    assert unbounded == []
    for path in ("/connected-apps", "/today"):
        (limit,) = [p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "limit"]
        assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 100), path


def test_uuid_valued_query_parameters_are_typed_as_uuids(schema):
    from apps.core.uuids import UUID_LIST_PATTERN

    untyped = []
    for where, p in _query_parameters(schema):
        name, parameter_schema = p["name"], p["schema"]
        if (name == "id" or name.endswith("Id")) and parameter_schema.get("format") != "uuid":
            untyped.append(f"{where} ?{name}")
        if (name == "ids" or name.endswith("Ids")) and parameter_schema.get("pattern") != UUID_LIST_PATTERN:
            untyped.append(f"{where} ?{name}")
    assert untyped == []
    (preview_id,) = schema["paths"]["/auth/invitation-preview"]["get"]["parameters"]
    assert preview_id["schema"]["format"] == "uuid" and preview_id["required"]


def test_uuid_list_pattern_matches_what_the_server_accepts():
    import re

    from apps.core.uuids import UUID_LIST_PATTERN

    one, two = "0b7d7c9e-2f4a-4c1e-9d3b-5a6f7e8d9c0b", "ffffffff-ffff-ffff-ffff-ffffffffffff"
    assert re.fullmatch(UUID_LIST_PATTERN, one) and re.fullmatch(UUID_LIST_PATTERN, f"{one},{two}")
    for bad in ("", one + ",", f"{one};{two}", "not-a-uuid", f"{one},x"):
        assert not re.fullmatch(UUID_LIST_PATTERN, bad), bad


def test_request_bodies_say_exactly_whether_unknown_keys_are_refused(django_db_blocker):
    """A StrictSerializer answers 400 to a key it does not know, so its request schema must say
    additionalProperties: false; a serializer that lets unknown keys through must not claim it."""
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework import serializers

    from apps.core.serializers import StrictSerializer

    generator = SchemaGenerator()
    with django_db_blocker.unblock():
        document = generator.get_schema(request=None, public=True)
    components = document["components"]["schemas"]
    wrong, strict_seen = [], 0
    for component in generator.registry._components.values():
        serializer = component.object
        if component.type != "schemas" or not component.name.endswith("Request"):
            continue
        if not isinstance(serializer, serializers.Serializer) or component.name not in components:
            continue
        strict = isinstance(serializer, StrictSerializer)
        strict_seen += strict
        if (components[component.name].get("additionalProperties") is False) != strict:
            wrong.append(f"{component.name} ({type(serializer).__name__}, strict={strict})")
    assert wrong == []
    assert strict_seen > 50  # the walk really saw the request bodies


def test_mcp_documents_its_401(schema):
    responses = schema["paths"]["/mcp"]["post"]["responses"]
    assert responses["401"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApiError"}
