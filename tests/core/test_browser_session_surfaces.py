"""Spec Authentication rule 9: /user, /organization, /agreements, /support and the platform admin area answer 403
BROWSER_SESSION_REQUIRED to any machine credential (API key or OAuth token), whether or not a route exists there
yet; a browser session gets the route's own answer (404 where there is none); no credential is 401."""

import pytest
from django.test import Client

from apps.core.credentials import OAUTH, Credential
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

UNKNOWN_ID = "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"
NOT_BUILT = [f"/agreements/{UNKNOWN_ID}/nope", "/support", f"/support/tickets/{UNKNOWN_ID}"]
BUILT = [
    "/user/me",
    "/user/api-keys",
    "/organization/mine",
    "/organization/members",
    "/agreements",
    "/agreements/acceptances",
]
METHODS = ["GET", "POST", "PATCH", "DELETE"]


def call(client, method, path):
    return client.generic(method, path, b"{}", content_type="application/json")


@pytest.fixture
def oauth_client(owner):
    raw, _ = mint(owner, "read write")
    return bearer(raw)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", NOT_BUILT + BUILT)
def test_an_api_key_is_refused(owner, path, method):
    assert_error(call(owner.api_client(), method, path), 403, "BROWSER_SESSION_REQUIRED")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", NOT_BUILT + BUILT)
def test_an_oauth_token_is_refused(oauth_client, path, method):
    assert_error(call(oauth_client, method, path), 403, "BROWSER_SESSION_REQUIRED")


@pytest.mark.parametrize("path", NOT_BUILT)
def test_a_browser_session_gets_the_normal_answer(owner, path):
    session = owner.session_client()
    for method in METHODS:
        assert_error(call(session, method, path), 404, "NOT_FOUND")


def test_a_browser_session_reaches_the_built_routes(owner):
    session = owner.session_client()
    for path in BUILT:
        assert session.get(path).status_code == 200, path


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", NOT_BUILT + BUILT)
def test_no_credential_is_401(db, path, method):
    response = call(Client(), method, path)
    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("raw", ["svc_key_not-a-key", "svc_oat_not-a-token"])
def test_a_bad_bearer_is_401_not_403(db, raw):
    assert_error(bearer(raw).get("/agreements"), 401, "UNAUTHENTICATED")


@pytest.mark.parametrize("path", ["/agreementsx", "/supports", "/users/me", "/organizations"])
def test_only_whole_path_segments_count(owner, path):
    assert_error(owner.api_client().get(path), 404, "NOT_FOUND")


def test_the_answer_does_not_depend_on_debug(owner, settings):
    settings.DEBUG = True
    assert_error(owner.api_client().get("/support/tickets"), 403, "BROWSER_SESSION_REQUIRED")
    assert_error(owner.session_client().get("/support/tickets"), 404, "NOT_FOUND")


def test_a_refusal_spends_nothing_from_the_credentials_bucket(owner, settings):
    settings.SVC_API_KEY_BUCKET = (1, 0.001)
    client = owner.api_client()
    for _ in range(3):
        assert_error(client.get("/agreements"), 403, "BROWSER_SESSION_REQUIRED")
    assert client.get("/patients").status_code == 200


def test_the_mcp_servers_in_process_identity_is_refused(owner):
    from apps.mcp import dispatch

    credential = Credential(
        kind=OAUTH, scopes=frozenset({"read", "write"}), bound_organization_id=owner.organization.id
    )
    for path in ("/agreements", "/user/me"):
        reply = dispatch.run(method="GET", path=path, query=None, body=None, user=owner.user, credential=credential)
        assert (reply.status, reply.json()["code"]) == (403, "BROWSER_SESSION_REQUIRED")


def test_the_admin_area_refuses_machine_credentials_and_keeps_its_sign_in(owner, oauth_client):
    assert_error(owner.api_client().get("/admin/"), 403, "BROWSER_SESSION_REQUIRED")
    assert_error(oauth_client.get("/admin/accounts/user/"), 403, "BROWSER_SESSION_REQUIRED")
    signed_out = Client().get("/admin/")
    assert signed_out.status_code == 302 and "/admin/login/" in signed_out["Location"]
    assert Client().get("/admin/login/").status_code == 200
