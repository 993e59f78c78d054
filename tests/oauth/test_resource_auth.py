"""OAuth access tokens as REST credentials: practice binding, re-read membership, scopes narrowing roles on every
route, audience, rate limits per connection, hashed storage."""

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from apps.core.permissions import ACCOUNT_AREA, BROWSER_SESSION_SURFACES, DIALER_AREA, under_prefix
from apps.core.views import BaseApiView
from apps.oauth.models import AccessToken
from tests.helpers import assert_error
from tests.oauth.conftest import code_for, exchange, new_authorization, refresh
from tests.oauth.tokens import application, bearer, mint


def test_a_token_acts_as_its_person_in_its_practice(owner, member_factory):
    other = member_factory(role="owner")
    raw, _ = mint(owner)
    response = bearer(raw, **{"X-Organization-ID": str(other.organization.id)}).get("/auth/me")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user"]["id"] == str(owner.user.id)
    assert body["organization"]["id"] == str(owner.organization.id)  # X-Organization-ID is ignored
    assert body["organization"]["accessGeneration"] == 0
    assert "X-Service-Access-Generation" not in response


def test_only_the_hash_is_stored(owner):
    raw, token = mint(owner)
    stored = AccessToken.objects.get(pk=token.pk)
    assert stored.token == ""
    assert raw not in stored.token_checksum


@pytest.mark.parametrize("problem", ["unknown", "expired", "disconnected", "inactive"])
def test_stale_tokens_are_401(owner, problem):
    from apps.oauth import connections

    raw, token = mint(owner, expires_in=-1 if problem == "expired" else 3600)
    if problem == "unknown":
        raw = raw[:-4] + "abcd"
    if problem == "disconnected":
        connections.disconnect(token.connection)
    if problem == "inactive":
        owner.user.is_active = False
        owner.user.save()
    assert_error(bearer(raw).get("/auth/me"), 401, "UNAUTHENTICATED")


def test_membership_and_role_are_re_read_on_every_request(member_factory):
    manager = member_factory(role="manager")
    raw, _ = mint(manager, "read write")
    client = bearer(raw)
    assert client.post("/tags", {"name": "VIP"}, content_type="application/json").status_code == 201
    manager.membership.role = "analyst"
    manager.membership.save()
    assert_error(client.post("/tags", {"name": "VIP 2"}, content_type="application/json"), 403, "PERMISSION_DENIED")
    manager.membership.delete()
    assert client.get("/patients").status_code == 403


def test_scopes_never_widen_the_role(member_factory):
    analyst = member_factory(role="analyst")
    raw, _ = mint(analyst, "read write patients.write")
    body = {"firstName": "Ada", "email": "ada@example.com"}
    response = bearer(raw).post("/patients", body, content_type="application/json")
    assert_error(response, 403, "PERMISSION_DENIED")


def test_a_token_bound_to_the_mcp_server_is_not_a_rest_credential(owner, settings):
    raw, _ = mint(owner, resource=[settings.SVC_MCP_URL])
    assert_error(bearer(raw).get("/patients"), 401, "UNAUTHENTICATED")
    raw, _ = mint(owner, resource=[settings.SVC_BASE_URL])
    assert bearer(raw).get("/patients").status_code == 200


STALE = "The access token is invalid, expired or revoked; refresh it and retry."


@pytest.mark.parametrize("credential", ["none", "unknown", "expired", "api_key"])
def test_a_refused_bearer_gets_an_rfc6750_invalid_token_challenge(owner, credential):
    if credential == "none":
        response = Client().get("/patients")
        assert_error(response, 401, "UNAUTHENTICATED")
        # No credential at all: RFC 6750 §3.1 wants no error code.
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'
        return
    raw, _ = mint(owner, expires_in=-1 if credential == "expired" else 3600)
    raw = {"unknown": "svc_oat_eu_nope", "expired": raw, "api_key": owner.api_key + "x"}[credential]
    body = assert_error(bearer(raw).get("/patients"), 401, "UNAUTHENTICATED")
    assert body["details"] == {"reason": "stale"}
    message = STALE if credential != "api_key" else "The API key is invalid, revoked or expired."
    assert body["message"] == message
    assert bearer(raw).get("/patients")["WWW-Authenticate"] == (
        f'Bearer realm="api", error="invalid_token", error_description="{message}"'
    )


def test_an_mcp_token_on_rest_is_told_apart_from_a_stale_one_and_refreshing_does_not_cure_it(
    settings, signed_in, app_client_id
):
    """What the MCP SDK gets (it always sends resource={base}/mcp): the REST 401 says the audience is wrong, not
    "refresh and retry" — and indeed a refreshed token keeps the audience."""
    authorization = new_authorization(app_client_id)
    issued = exchange(authorization, code_for(signed_in, authorization), resource=settings.SVC_MCP_URL).json()
    raw, refresh_token = issued["access_token"], issued["refresh_token"]
    for _ in range(2):
        response = bearer(raw).get("/patients")
        body = assert_error(response, 401, "UNAUTHENTICATED")
        assert body["details"] == {"reason": "wrong_audience", "tokenResource": [settings.SVC_MCP_URL]}
        assert body["message"] != STALE and settings.SVC_MCP_URL in body["message"]
        challenge = response["WWW-Authenticate"]
        assert challenge.startswith('Bearer realm="api", error="invalid_token", error_description="This access token')
        assert f"issued for another resource ({settings.SVC_MCP_URL})" in challenge
        refreshed = refresh(app_client_id, refresh_token)  # the client does what a 401 usually asks
        assert refreshed.status_code == 200, refreshed.content
        raw, refresh_token = refreshed.json()["access_token"], refreshed.json()["refresh_token"]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    at_mcp = bearer(raw).post("/mcp", ping, content_type="application/json")
    assert at_mcp.status_code == 200, at_mcp.content  # where it belongs


@pytest.mark.parametrize("path", ["/user/me", "/user/api-keys", "/organization/mine", "/organization/members"])
def test_account_wide_surfaces_refuse_oauth_tokens(owner, path):
    raw, _ = mint(owner)
    assert_error(bearer(raw).get(path), 403, "BROWSER_SESSION_REQUIRED")


def test_the_bucket_is_the_connections_and_a_new_token_does_not_reset_it(owner, settings):
    settings.SVC_API_KEY_BUCKET = (3, 0.001)
    raw, token = mint(owner)
    client = bearer(raw)
    assert [client.get("/patients").status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get("/patients")
    assert_error(refused, 429, "RATE_LIMITED")
    assert int(refused["Retry-After"]) >= 1
    # A refreshed token of the same connection draws from the same bucket.
    again, _ = mint_for_connection(owner, token)
    assert bearer(again).get("/patients").status_code == 429
    # Another connection has its own.
    other, _ = mint(owner, app=application("Other app"))
    assert bearer(other).get("/patients").status_code == 200


def mint_for_connection(member, token):
    import secrets
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import set_token_value

    raw = "svc_oat_" + secrets.token_urlsafe(32)
    fresh = AccessToken(
        user=member.user,
        application=token.application,
        organization=member.organization,
        connection=token.connection,
        scope=token.scope,
        expires=timezone.now() + timedelta(hours=1),
    )
    set_token_value(fresh, raw)
    fresh.save()
    return raw, fresh


# --- the scope matrix: every route, every method ---------------------------------------------------------------


def _walk(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


UNKNOWN_ID = "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"  # fixed: xdist workers must collect the same ids


def _scoped_operations():
    for route, callback in _walk(get_resolver().url_patterns):
        view = getattr(callback, "cls", None)
        path = "/" + route
        if view is None or not issubclass(view, BaseApiView) or view.public or view.browser_session_only:
            continue
        if getattr(view, "clinical", False):  # session-only: tests/clinical/test_clinical_route_access.py
            continue
        if under_prefix(path, *BROWSER_SESSION_SURFACES):
            continue
        while "<" in path:
            start, end = path.index("<"), path.index(">")
            path = path[:start] + UNKNOWN_ID + path[end + 1 :]
        for method in view.http_method_names:
            if method in ("options", "head", "trace") or not hasattr(view, method):
                continue
            yield method.upper(), path, view.scope_area


OPERATIONS = list(_scoped_operations())


def _unrelated(area: str, access: str) -> str:
    other = "tasks" if area != "tasks" else "campaigns"
    return f"{other}.{access}" if area != ACCOUNT_AREA else f"patients.{access}"


def _call(client, method, path):
    return client.generic(method, path, b"{}", content_type="application/json")


def test_the_matrix_covers_the_api():
    assert len(OPERATIONS) > 40
    assert {area for _, _, area in OPERATIONS} >= {"patients", "settings", "webhooks", ACCOUNT_AREA}


@pytest.mark.parametrize(("method", "path", "area"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_scopes_gate_every_route(owner, method, path, area):
    safe = method == "GET"
    access = "read" if safe else "write"
    # Out of scope: another area's scopes, or read-only for a write.
    for scopes in (f"{_unrelated(area, 'read')} {_unrelated(area, 'write')}", "read" if not safe else None):
        if scopes is None:
            continue
        raw, _ = mint(owner, scopes)
        assert_error(_call(bearer(raw), method, path), 403, "INSUFFICIENT_SCOPE")
    if area == DIALER_AREA:  # calls, recordings, numbers: the "dialer" scope alone; the coarse scopes do not reach
        raw, _ = mint(owner, "read write")
        assert_error(_call(bearer(raw), method, path), 403, "INSUFFICIENT_SCOPE")
    # In scope: the coarse scope, and the area's own scope (reads also accept the area's .write).
    granted = [access] if area == ACCOUNT_AREA else [access, f"{area}.{access}"] + ([f"{area}.write"] if safe else [])
    if area == DIALER_AREA:
        granted = [DIALER_AREA]
    for scopes in granted:
        raw, _ = mint(owner, scopes)
        response = _call(bearer(raw), method, path)
        assert response.status_code != 401, (scopes, response.content)
        if response.status_code == 403:
            assert response.json()["code"] != "INSUFFICIENT_SCOPE", (scopes, response.content)
