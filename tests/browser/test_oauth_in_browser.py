"""The OAuth consent flow in headless Chromium against the real server: a registered app sends the person to
authorize, they sign in on the continue page, press Approve on the consent page, and land on the app's redirect_uri
with a code the app (authlib) exchanges. A real browser's form posts carry the Origin its referrer policy allows:
under no-referrer that was "null" and Django's CSRF check refused sign-in and Approve (raw JSON on screen)."""

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from authlib.common.security import generate_token

from apps.oauth.models import Connection
from tests.browser.conftest import screenshot
from tests.factories import DEFAULT_PASSWORD
from tests.oauth.conftest import authlib_app

pytestmark = pytest.mark.django_db(transaction=True)


def _start(member_factory, web_server, httpserver):
    owner = member_factory(role="owner")
    base = f"http://{web_server}"
    callback = httpserver.url_for("/callback")
    httpserver.expect_request("/callback").respond_with_data("<h1>Connected</h1>", content_type="text/html")
    registration = httpx.post(
        f"{base}/auth/oauth2/register",
        json={"client_name": "Claude", "redirect_uris": [callback], "token_endpoint_auth_method": "none"},
        timeout=20,
    )
    assert registration.status_code == 201, registration.text
    app = authlib_app(registration.json()["client_id"], callback)
    verifier = generate_token(48)
    url, state = app.create_authorization_url(f"{base}/auth/oauth2/authorize", code_verifier=verifier)
    return owner, base, callback, app, verifier, url, state


def _sign_in(page, owner, url):
    page.goto(url)
    assert urlsplit(page.url).path == "/auth/oauth2/continue"
    page.fill("#email", owner.user.email)
    page.fill("#password", DEFAULT_PASSWORD)
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("button[name=allow]")
    assert urlsplit(page.url).path == "/auth/oauth2/authorize"


def test_sign_in_consent_approve_lands_on_the_app_with_a_working_code(member_factory, web_server, page, httpserver):
    owner, base, callback, app, verifier, url, state = _start(member_factory, web_server, httpserver)

    _sign_in(page, owner, url)
    assert page.inner_text("h1") == "Connect Claude"
    assert owner.organization.name in page.inner_text("fieldset")
    shot = screenshot(page, "oauth-consent")
    assert shot.stat().st_size > 0
    with page.expect_navigation(url=lambda address: address.startswith(callback)):
        page.click("button[name=allow]")

    assert page.inner_text("h1") == "Connected"  # the app's own page, reached by the browser
    params = {key: values[-1] for key, values in parse_qs(urlsplit(page.url).query).items()}
    assert params["state"] == state and params["code"]
    token = app.fetch_token(f"{base}/auth/oauth2/token", authorization_response=page.url, code_verifier=verifier)
    assert token["access_token"].startswith("svc_oat_")
    assert token["organization_id"] == str(owner.organization.id)
    me = httpx.get(f"{base}/auth/me", headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=20)
    assert me.status_code == 200, me.text
    assert Connection.objects.unscoped().filter(user=owner.user, organization=owner.organization).exists()


def test_a_csrf_failure_in_the_browser_is_a_readable_page(member_factory, web_server, page, httpserver):
    owner, _, callback, *_, url, _ = _start(member_factory, web_server, httpserver)
    _sign_in(page, owner, url)

    page.context.clear_cookies()  # the cookies expired while the page stayed open
    page.click("button[name=allow]")
    page.wait_for_load_state()

    assert page.inner_text("h1") == "This page could not be sent"
    body = page.inner_text("body")
    assert "reload the page and try again" in body
    assert '"code"' not in body and "CSRF" not in body
    screenshot(page, "oauth-csrf-failure")
    assert not page.url.startswith(callback)
