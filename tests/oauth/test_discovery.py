"""Discovery documents checked against the RFC 8414 and RFC 9728 field lists; routes that are not offered."""

import pytest
from django.conf import settings
from django.test import Client

from tests.oauth.conftest import AUTHORIZE, INTROSPECT, REGISTER, REVOKE, TOKEN

# RFC 8414 §2 (plus RFC 9207 §3 and RFC 8707-free fields); REQUIRED: issuer, response_types_supported.
RFC8414_FIELDS = {
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "jwks_uri",
    "registration_endpoint",
    "scopes_supported",
    "response_types_supported",
    "response_modes_supported",
    "grant_types_supported",
    "token_endpoint_auth_methods_supported",
    "token_endpoint_auth_signing_alg_values_supported",
    "service_documentation",
    "ui_locales_supported",
    "op_policy_uri",
    "op_tos_uri",
    "revocation_endpoint",
    "revocation_endpoint_auth_methods_supported",
    "revocation_endpoint_auth_signing_alg_values_supported",
    "introspection_endpoint",
    "introspection_endpoint_auth_methods_supported",
    "introspection_endpoint_auth_signing_alg_values_supported",
    "code_challenge_methods_supported",
    "authorization_response_iss_parameter_supported",  # RFC 9207
    "client_id_metadata_document_supported",  # draft-ietf-oauth-client-id-metadata-document
}
# RFC 9728 §2; REQUIRED: resource.
RFC9728_FIELDS = {
    "resource",
    "authorization_servers",
    "jwks_uri",
    "scopes_supported",
    "bearer_methods_supported",
    "resource_signing_alg_values_supported",
    "resource_name",
    "resource_documentation",
    "resource_policy_uri",
    "resource_tos_uri",
    "tls_client_certificate_bound_access_tokens",
    "authorization_details_types_supported",
    "dpop_signing_alg_values_supported",
    "dpop_bound_access_tokens_required",
}


def test_authorization_server_metadata(db):
    response = Client().get("/.well-known/oauth-authorization-server/auth")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=3600"
    doc = response.json()
    assert set(doc) <= RFC8414_FIELDS, set(doc) - RFC8414_FIELDS
    base = settings.SVC_BASE_URL
    assert doc["issuer"] == f"{base}/auth"
    assert doc["authorization_endpoint"] == base + AUTHORIZE
    assert doc["token_endpoint"] == base + TOKEN
    assert doc["revocation_endpoint"] == base + REVOKE
    assert doc["introspection_endpoint"] == base + INTROSPECT
    assert doc["registration_endpoint"] == base + REGISTER
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["response_types_supported"] == ["code"]
    assert doc["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert "none" in doc["token_endpoint_auth_methods_supported"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert {"read", "write", "offline_access", "patients.read", "settings.write", "dialer"} <= set(
        doc["scopes_supported"]
    )
    assert not {"openid", "profile", "email"} & set(doc["scopes_supported"])


def test_protected_resource_metadata(db):
    response = Client().get("/.well-known/oauth-protected-resource/mcp")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=3600"
    doc = response.json()
    assert set(doc) <= RFC9728_FIELDS
    assert doc["resource"] == settings.SVC_MCP_URL
    assert doc["authorization_servers"] == [f"{settings.SVC_BASE_URL}/auth"]
    assert "offline_access" not in doc["scopes_supported"] and {"read", "write"} <= set(doc["scopes_supported"])
    assert doc["bearer_methods_supported"] == ["header"]


def test_discovery_ignores_credentials(db, owner):
    response = Client(headers={"Authorization": "Bearer garbage"}).get("/.well-known/oauth-authorization-server/auth")
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/auth/oauth2/delete-consent", "/auth/oauth2/update-consent"])
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_consent_management_routes_answer_404(db, path, method):
    response = getattr(Client(), method)(path)
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-authorization-server/auth", "/.well-known/oauth-protected-resource/mcp"]
)
def test_discovery_documents_answer_another_method_with_405(db, path):
    # CSRF checks on, as for any client that is not Django's test client: an unsafe method is 405, not a CSRF 403.
    response = Client(enforce_csrf_checks=True).generic("QUERY", path)

    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert "GET" in response["Allow"]


@pytest.mark.parametrize("path", [TOKEN, REVOKE, INTROSPECT, REGISTER])
def test_protocol_routes_answer_another_method_with_405_before_the_address_window(db, path):
    # Without a usable client address the window refuses with 400; a method the route lacks is 405 first.
    response = Client().generic("TRACE", path, REMOTE_ADDR="")

    assert response.status_code == 405
    assert "POST" in response["Allow"]
