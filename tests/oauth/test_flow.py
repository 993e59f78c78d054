"""The whole flow over real HTTP with authlib acting as the app: register → authorize (signed in) → consent page
read and submitted → code → token → API call → refresh (rotation, reuse revokes the family) → revoke → refused."""

from urllib.parse import urlsplit

import pytest
import requests
from authlib.common.security import generate_token

from apps.oauth.models import AccessToken, Connection, RefreshToken
from tests.oauth.conftest import CALLBACK, authlib_app, browser, read_page

pytestmark = pytest.mark.django_db(transaction=True)


def test_register_authorize_consent_token_refresh_revoke(live_server, member_factory):
    owner = member_factory(role="owner")
    base = live_server.url
    registration = requests.post(
        f"{base}/auth/oauth2/register",
        json={"client_name": "Claude", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
        timeout=10,
    )
    assert registration.status_code == 201, registration.text
    client_id = registration.json()["client_id"]

    app = authlib_app(client_id)
    verifier = generate_token(48)
    authorize_url, state = app.create_authorization_url(f"{base}/auth/oauth2/authorize", code_verifier=verifier)
    assert "code_challenge_method=S256" in authorize_url

    # The person's browser: signed in, reads the consent page and presses Approve.
    person = browser(owner)
    parts = urlsplit(authorize_url)
    page = person.get(f"{parts.path}?{parts.query}")
    assert page.status_code == 200
    reader = read_page(page)
    assert "Claude" in "".join(reader.text) and "Unverified app." in "".join(reader.text)
    form = reader.forms[0]
    assert form["radios"]["organization_id"] == [str(owner.organization.id)]
    answer = person.post(form["action"], form["fields"] | {"allow": "true"})
    assert answer.status_code == 302
    callback = answer["Location"]
    assert callback.startswith(CALLBACK) and f"state={state}" in callback and "iss=" in callback

    token = app.fetch_token(f"{base}/auth/oauth2/token", authorization_response=callback, code_verifier=verifier)
    assert token["access_token"].startswith("svc_oat_") and token["refresh_token"].startswith("svc_ort_")
    assert token["token_type"] == "Bearer" and token["expires_in"] == 3600
    assert token["organization_id"] == str(owner.organization.id)
    assert {"api_base_url", "organization_name", "organization_country"} <= set(token)
    stored = AccessToken.objects.get(
        token_checksum=__import__("hashlib").sha256(token["access_token"].encode()).hexdigest()
    )
    assert stored.token == "" and stored.organization_id == owner.organization.id
    connection = Connection.objects.unscoped().get(pk=stored.connection_id)
    assert connection.user_id == owner.user.id and connection.organization_id == owner.organization.id

    me = requests.get(f"{base}/auth/me", headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=10)
    assert me.status_code == 200, me.text
    assert me.json()["organization"]["id"] == str(owner.organization.id)

    first_refresh = token["refresh_token"]
    renewed = app.refresh_token(f"{base}/auth/oauth2/token", refresh_token=first_refresh)
    assert renewed["refresh_token"] != first_refresh
    assert "organization_id" not in renewed and "api_base_url" not in renewed and "organization_name" not in renewed
    assert renewed["organization_country"] == owner.organization.country

    replay = requests.post(
        f"{base}/auth/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": first_refresh, "client_id": client_id},
        timeout=10,
    )
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    # Reuse of a rotated token revoked the whole family: the newest refresh token is dead too.
    newest = requests.post(
        f"{base}/auth/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": renewed["refresh_token"], "client_id": client_id},
        timeout=10,
    )
    assert newest.status_code == 400 and newest.json()["error"] == "invalid_grant"
    assert not RefreshToken.objects.filter(connection_id=connection.pk, revoked__isnull=True).exists()

    # A fresh authorization, then revocation: the connection ends and the token is refused.
    verifier = generate_token(48)
    authorize_url, state = app.create_authorization_url(f"{base}/auth/oauth2/authorize", code_verifier=verifier)
    parts = urlsplit(authorize_url)
    form = read_page(person.get(f"{parts.path}?{parts.query}")).forms[0]
    callback = person.post(form["action"], form["fields"] | {"allow": "true"})["Location"]
    token = app.fetch_token(f"{base}/auth/oauth2/token", authorization_response=callback, code_verifier=verifier)
    revoked = app.revoke_token(
        f"{base}/auth/oauth2/revoke", token=token["access_token"], token_type_hint="access_token"
    )
    assert revoked.status_code == 200
    me = requests.get(f"{base}/auth/me", headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=10)
    assert me.status_code == 401
    again = requests.post(
        f"{base}/auth/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": token["refresh_token"], "client_id": client_id},
        timeout=10,
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert Connection.objects.unscoped().get(pk=connection.pk).revoked_at is not None
