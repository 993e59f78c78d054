"""Dynamic client registration (RFC 7591) and the 24-hour removal of registrations nobody approved."""

import pytest
import time_machine
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import Application

from apps.oauth.models import ClientProfile
from apps.oauth.tasks import purge_unapproved_clients
from tests.oauth.conftest import CALLBACK, REGISTER, code_for, exchange, new_authorization, register_client


def _register(body):
    return Client().post(REGISTER, body, content_type="application/json")


def test_registration_shapes_every_client(db):
    response = _register(
        {
            "client_name": "  A " + "n" * 100,
            "redirect_uris": ["https://claude.ai/api/mcp/auth_callback", "http://localhost:3000/cb"],
            "logo_uri": "https://evil.example/logo.png",
            "client_uri": "https://evil.example",
            "contacts": ["x@evil.example"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["token_endpoint_auth_method"] == "none"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["scope"] == "read write offline_access"
    assert len(body["client_name"]) == 80 and body["client_name"].startswith("A n")
    assert not {"logo_uri", "client_uri", "contacts", "client_secret", "registration_access_token"} & set(body)
    app = Application.objects.get(client_id=body["client_id"])
    assert app.client_type == "public" and app.registration_source == "dcr" and not app.skip_authorization
    assert ClientProfile.objects.get(application=app).approved_at is None


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1/cb",
        "http://127.0.0.1:8123/any/path",
        "http://[::1]:9000/cb",
        "http://localhost:5173/oauth/callback",
        "https://chatgpt.com/connector_platform_oauth_redirect",
    ],
)
def test_allowed_redirects(db, uri):
    assert _register({"redirect_uris": [uri]}).status_code == 201


@pytest.mark.parametrize(
    "uris",
    [
        ["https://evil.example/cb"],
        ["https://claude.ai/api/mcp/auth_callback/extra"],
        ["http://127.0.0.2/cb"],
        ["http://localhost.evil.example/cb"],
        ["http://user@localhost/cb"],
        ["javascript:alert(1)"],
        [],
        [CALLBACK, "http://127.0.0.1:1/a", "http://127.0.0.1:2/b", "http://127.0.0.1:3/c"],
        "http://127.0.0.1/cb",
    ],
)
def test_refused_redirects_are_invalid_redirect_uri(db, uris):
    response = _register({"redirect_uris": uris})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    "extra",
    [
        {"token_endpoint_auth_method": "private_key_jwt"},
        {"grant_types": ["client_credentials"]},
        {"grant_types": ["authorization_code", "implicit"]},
        {"response_types": ["token"]},
        {"scope": "read patients.write"},
        {"client_name": 5},
    ],
)
def test_metadata_we_do_not_offer_is_refused(db, extra):
    response = _register({"redirect_uris": [CALLBACK]} | extra)
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
    assert not Application.objects.exists()


def test_a_body_that_is_not_a_json_object(db):
    for raw in ("[]", "not json", ""):
        response = Client().post(REGISTER, raw, content_type="application/json")
        assert response.status_code == 400 and response.json()["error"] in (
            "invalid_client_metadata",
            "invalid_redirect_uri",
        )


def test_unapproved_client_is_unusable_after_24_hours_and_then_removed(owner, signed_in):
    client_id = register_client()
    later = timezone.now() + timezone.timedelta(hours=24, minutes=1)
    with time_machine.travel(later):
        page = signed_in.get(new_authorization(client_id).url())
        assert page.status_code == 400 and "Location" not in page
        assert purge_unapproved_clients() == 1
        response = exchange(new_authorization(client_id), "eu_whatever")
        assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    assert not Application.objects.filter(client_id=client_id).exists()


def test_an_approved_client_stays(owner, signed_in):
    client_id = register_client()
    young = register_client()
    authorization = new_authorization(client_id)
    assert exchange(authorization, code_for(signed_in, authorization)).status_code == 200
    with time_machine.travel(timezone.now() + timezone.timedelta(days=2)):
        assert purge_unapproved_clients() == 1  # only `young`, never approved
        assert signed_in.get(new_authorization(client_id).url()).status_code == 200
    assert Application.objects.filter(client_id=client_id).exists()
    assert not Application.objects.filter(client_id=young).exists()


def test_manual_clients_are_never_purged(db):
    Application.objects.create(
        name="ours", client_type="public", authorization_grant_type="authorization-code", redirect_uris=CALLBACK
    )
    with time_machine.travel(timezone.now() + timezone.timedelta(days=30)):
        assert purge_unapproved_clients() == 0
    assert Application.objects.count() == 1


def test_registration_has_no_management_endpoint(db):
    client_id = register_client()
    assert Client().get(f"{REGISTER}/{client_id}").status_code == 404
    assert Client().get(REGISTER).status_code == 405
