"""Discovery documents checked against the RFC 8414 and RFC 9728 field lists and against what the server really
accepts; routes that are not offered."""

import base64
import re

import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import Application

from tests.oauth.conftest import (
    AUTHORIZE,
    CALLBACK,
    INTROSPECT,
    REGISTER,
    REVOKE,
    TOKEN,
    browser,
    code_for,
    new_authorization,
)

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
    assert {"read", "write"} <= set(doc["scopes_supported"])
    assert doc["bearer_methods_supported"] == ["header"]


def test_the_mcp_scopes_are_listed_alike_in_every_document(db):
    """The /mcp challenge asks for offline_access: the protected-resource metadata an agent reads next, and the
    authorization server's, must list it too, or a client building its request from them never gets a refresh."""
    challenge = Client().post("/mcp", {}, content_type="application/json")["WWW-Authenticate"]
    asked = set(re.search(r'scope="([^"]*)"', challenge).group(1).split())
    assert asked == {"read", "write", "offline_access"}
    resource = Client().get("/.well-known/oauth-protected-resource/mcp").json()
    server = Client().get("/.well-known/oauth-authorization-server/auth").json()
    assert asked <= set(resource["scopes_supported"])
    assert asked <= set(server["scopes_supported"])


def _basic(client_id: str, secret: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def test_every_advertised_client_authentication_method_is_accepted(owner):
    """The metadata's token_endpoint_auth_methods_supported is true for every client there is: registration accepts
    each (and registers a public client, RFC 7591 §3.2.1), and the secret-based ones authenticate a confidential
    app made in the back office at the token, introspect and revoke endpoints."""
    doc = Client().get("/.well-known/oauth-authorization-server/auth").json()
    methods = doc["token_endpoint_auth_methods_supported"]
    assert set(methods) == {"none", "client_secret_basic", "client_secret_post"}
    assert doc["revocation_endpoint_auth_methods_supported"] == methods
    assert doc["introspection_endpoint_auth_methods_supported"] == methods
    for method in methods:
        response = Client().post(
            REGISTER,
            {"client_name": method, "redirect_uris": [CALLBACK], "token_endpoint_auth_method": method},
            content_type="application/json",
        )
        assert response.status_code == 201, (method, response.content)
        assert response.json()["token_endpoint_auth_method"] == "none" and "client_secret" not in response.json()
        registered = Application.objects.get(client_id=response.json()["client_id"])
        assert registered.client_type == Application.CLIENT_PUBLIC

    confidential = Application.objects.create(
        name="Back-office integration",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        client_secret="s3cret-value",
        redirect_uris=CALLBACK,
    )
    signed_in = browser(owner)
    ways = {
        "client_secret_basic": ({}, _basic(confidential.client_id, "s3cret-value")),
        "client_secret_post": ({"client_id": confidential.client_id, "client_secret": "s3cret-value"}, {}),
    }
    for method in set(methods) - {"none"}:
        fields, headers = ways[method]
        authorization = new_authorization(confidential.client_id)
        code = code_for(signed_in, authorization)
        body = {"code": code, "code_verifier": authorization.verifier, "redirect_uri": CALLBACK}
        issued = Client(headers=headers).post(TOKEN, body | fields | {"grant_type": "authorization_code"})
        assert issued.status_code == 200, (method, issued.content)
        access_token = issued.json()["access_token"]
        introspected = Client(headers=headers).post(INTROSPECT, {"token": access_token} | fields)
        assert introspected.json()["active"] is True, method
        assert Client(headers=headers).post(REVOKE, {"token": access_token} | fields).status_code == 200
        assert Client(headers=headers).post(INTROSPECT, {"token": access_token} | fields).json() == {"active": False}
    # Without its secret the confidential app is refused: "none" is for public clients only.
    authorization = new_authorization(confidential.client_id)
    code = code_for(signed_in, authorization)
    body = {"grant_type": "authorization_code", "code": code, "code_verifier": authorization.verifier}
    refused = Client().post(TOKEN, body | {"redirect_uri": CALLBACK, "client_id": confidential.client_id})
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"


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
