"""Connecting the practice's payment account: POST /settings/payments/connect and the platform's single-use OAuth
return (GET /webhooks/payments-connect/oauth/callback), against the sandbox and a local server."""

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from apps.deposits.models import ConnectState, PaymentAccount
from tests.helpers import assert_error

CONNECT = "/settings/payments/connect"
CALLBACK = "/webhooks/payments-connect/oauth/callback"


def start(client) -> str:
    """A connection attempt's state (the sandbox's authorize URL is our callback with a sandbox code)."""
    response = client.post(CONNECT)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["expiresIn"] == 600
    parts = urlsplit(body["authorizeUrl"])
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    if parts.path == CALLBACK:
        assert query["code"].startswith("ac_sandbox_")
    return query["state"]


def test_the_sandbox_authorize_url_connects_by_itself(owner, api):
    url = api.post(CONNECT).json()["authorizeUrl"]
    parts = urlsplit(url)
    response = Client().get(f"{parts.path}?{parts.query}")
    assert response.status_code == 200 and response.json()["connected"] is True


def test_connect_stores_the_account_and_the_state_is_single_use(owner, api):
    state = start(api)
    assert ConnectState.objects.for_org(owner.organization).get().state_hash != state  # only its digest is kept
    response = Client().get(CALLBACK, {"code": "ac_test_code", "state": state})
    assert response.status_code == 200, response.content
    assert response.json()["connected"] is True and response.json()["accountStatus"] == "connected"
    account = PaymentAccount.objects.for_org(owner.organization).get()
    assert account.account_id.startswith("acct_sandbox_") and account.connected_by_id == owner.user.id
    replay = Client().get(CALLBACK, {"code": "ac_other_code", "state": state})
    assert_error(replay, 400, "CONNECT_STATE_INVALID")
    assert PaymentAccount.objects.for_org(owner.organization).get().account_id == account.account_id
    assert api.get("/settings/payments").json()["connected"] is True


def test_unknown_expired_and_missing_states_are_400_and_change_nothing(owner, api):
    from datetime import timedelta

    from django.utils import timezone

    assert_error(Client().get(CALLBACK, {"code": "x", "state": "unknown"}), 400, "CONNECT_STATE_INVALID")
    assert_error(Client().get(CALLBACK, {"code": "x"}), 400, "CONNECT_STATE_INVALID")
    state = start(api)
    ConnectState.objects.for_org(owner.organization).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_error(Client().get(CALLBACK, {"code": "x", "state": state}), 400, "CONNECT_STATE_INVALID")
    denied = start(api)
    assert_error(Client().get(CALLBACK, {"error": "access_denied", "state": denied}), 400, "CONNECT_STATE_INVALID")
    assert not PaymentAccount.objects.for_org(owner.organization).exists()


def test_a_state_returned_in_another_persons_browser_is_400_and_stays_usable(owner, outsider, api):
    state = start(api)
    other_browser = outsider.session_client()
    assert_error(other_browser.get(CALLBACK, {"code": "x", "state": state}), 400, "CONNECT_STATE_INVALID")
    assert not PaymentAccount.objects.for_org(owner.organization).exists()
    assert not PaymentAccount.objects.for_org(outsider.organization).exists()
    own_browser = owner.session_client()
    response = own_browser.get(CALLBACK, {"code": "x", "state": state}, HTTP_ACCEPT="text/html")
    assert response.status_code == 302 and response["Location"].endswith("/settings/payments?connected=1")


def test_an_account_connected_to_another_practice_is_refused(owner, outsider, api):
    Client().get(CALLBACK, {"code": "same", "state": start(outsider.api_client())})
    response = Client().get(CALLBACK, {"code": "same", "state": start(api)})
    assert_error(response, 400, "ACCOUNT_IN_USE")
    assert not PaymentAccount.objects.for_org(owner.organization).exists()


def test_roles_and_tenancy_of_the_settings_routes(owner, outsider, member_factory, api):
    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    assert_error(front_desk.post(CONNECT), 403, "PERMISSION_DENIED")
    assert front_desk.get("/settings/payments").status_code == 200
    dentist = member_factory(role="dentist", organization=owner.organization).api_client()
    assert_error(dentist.get("/settings/payments"), 403, "PERMISSION_DENIED")
    Client().get(CALLBACK, {"code": "mine", "state": start(api)})
    assert outsider.api_client().get("/settings/payments").json()["connected"] is False


@pytest.fixture
def stripe(httpserver, settings):
    settings.SVC_PAYMENTS_TRANSPORT = "provider"
    settings.SVC_PAYMENTS_API_URL = httpserver.url_for("/")
    return httpserver


def test_the_code_is_exchanged_at_the_platform(owner, api, stripe):
    from werkzeug import Response

    seen = []

    def token(request):
        seen.append(request)
        form = parse_qs(request.get_data(as_text=True))
        if form.get("code") == ["ac_refused"]:
            error = {"error": "invalid_grant", "error_description": "Authorization code does not exist"}
            return Response(json.dumps(error), status=400, content_type="application/json")
        answer = {"stripe_user_id": "acct_1Connected", "token_type": "bearer", "scope": "read_write"}
        return Response(json.dumps(answer), content_type="application/json")

    stripe.expect_request("/oauth/token", method="POST").respond_with_handler(token)
    authorize = api.post(CONNECT).json()["authorizeUrl"]
    parts = urlsplit(authorize)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://connect.stripe.com/oauth/authorize"
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    assert query["client_id"] == "ca_test_platform" and query["response_type"] == "code"
    assert query["scope"] == "read_write" and query["redirect_uri"].endswith(CALLBACK)
    assert len(query["state"]) >= 40
    refused = Client().get(CALLBACK, {"code": "ac_refused", "state": start(api)})
    assert assert_error(refused, 400, "CONNECT_STATE_INVALID")["details"] == {"providerCode": "invalid_grant"}
    response = Client().get(CALLBACK, {"code": "ac_good", "state": start(api)})
    assert response.status_code == 200, response.content
    assert PaymentAccount.objects.for_org(owner.organization).get().account_id == "acct_1Connected"
    assert seen[-1].headers["Authorization"] == "Bearer sk_test_platform"
    assert parse_qs(seen[-1].get_data(as_text=True)) == {"grant_type": ["authorization_code"], "code": ["ac_good"]}
