"""authorize, consent and continue: every refusal before, at and after the consent page; tenancy of the choice."""

from urllib.parse import urlencode

import pytest
from django.test import Client, override_settings
from django_otp.oath import TOTP

from apps.accounts.models import TotpDevice
from apps.core import crypto
from apps.oauth.models import Connection, Grant
from tests.conftest import make_member
from tests.factories import DEFAULT_PASSWORD, MembershipFactory
from tests.oauth.conftest import (
    AUTHORIZE,
    CALLBACK,
    CONTINUE,
    approve,
    browser,
    consent_form,
    new_authorization,
    query_of,
    read_page,
    register_client,
)


def _assert_error_page(response, status=400):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("text/html")
    assert "Location" not in response


# --- before consent -----------------------------------------------------------------------------------------------


def test_signed_out_person_is_sent_to_sign_in_and_back(app_client_id):
    url = new_authorization(app_client_id).url()
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(f"{CONTINUE}?next=")
    assert query_of(response["Location"])["next"] == url


def test_unknown_client_gets_an_error_page_signed_in_or_not(signed_in, app_client_id):
    url = new_authorization("no-such-client").url()
    _assert_error_page(Client().get(url))
    _assert_error_page(signed_in.get(url))


def test_unregistered_redirect_uri_gets_an_error_page_never_a_redirect(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    _assert_error_page(signed_in.get(authorization.url(redirect_uri="https://evil.example/cb")))
    _assert_error_page(signed_in.get(authorization.url(redirect_uri="http://127.0.0.1:53682/other")))


@pytest.mark.parametrize("method", ["plain", None])
def test_plain_or_missing_pkce_method_is_refused_before_consent(signed_in, app_client_id, method):
    authorization = new_authorization(app_client_id)
    for client in (signed_in, Client()):
        response = client.get(authorization.url(code_challenge_method=method))
        assert response.status_code == 302
        params = query_of(response["Location"])
        assert response["Location"].startswith(CALLBACK)
        assert params["error"] == "invalid_request" and params["state"] == authorization.state
    assert not Grant.objects.exists()


def test_missing_code_challenge_is_refused(signed_in, app_client_id):
    response = signed_in.get(new_authorization(app_client_id).url(code_challenge=None))
    assert response.status_code == 302 and query_of(response["Location"])["error"] == "invalid_request"


def test_unknown_scope_and_scopes_beyond_a_registered_client_are_refused(signed_in, app_client_id):
    for scope in ("read openid", "patients.read"):
        response = signed_in.get(new_authorization(app_client_id, scope=scope).url())
        assert response.status_code == 302 and query_of(response["Location"])["error"] == "invalid_scope"


def test_a_foreign_resource_is_refused_as_invalid_target(signed_in, app_client_id):
    response = signed_in.get(new_authorization(app_client_id).url(resource="https://elsewhere.example/mcp"))
    assert response.status_code == 302 and query_of(response["Location"])["error"] == "invalid_target"


def test_implicit_response_type_is_refused(signed_in, app_client_id):
    response = signed_in.get(new_authorization(app_client_id).url(response_type="token"))
    assert response.status_code == 302
    params = query_of(response["Location"])
    assert params["error"] == "unauthorized_client" and "access_token" not in response["Location"]


@override_settings(SVC_REGION="eu", SVC_REGION_BASE_URLS={"eu": "https://eu.example", "us": "https://us.example"})
def test_another_region_redirects_there_with_the_same_query(app_client_id):
    url = new_authorization(app_client_id).url(region="us")
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"] == "https://us.example" + url


@override_settings(SVC_REGION="eu", SVC_REGION_BASE_URLS={"eu": "https://eu.example", "us": "https://us.example"})
def test_this_region_is_served_here_and_an_invalid_region_is_an_error(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    assert signed_in.get(authorization.url(region="eu")).status_code == 200
    _assert_error_page(signed_in.get(authorization.url(region="mars")))


# --- the consent page ---------------------------------------------------------------------------------------------


def test_consent_page_lists_only_practices_where_the_person_may_authorize(owner, app_client_id):
    managed = make_member(role="owner")
    MembershipFactory(organization=managed.organization, user=owner.user, role="manager")
    front_desk_org = make_member(role="owner").organization
    MembershipFactory(organization=front_desk_org, user=owner.user, role="front_desk")
    outsider = make_member(role="owner")

    page = browser(owner).get(new_authorization(app_client_id).url())
    reader = read_page(page)
    offered = set(reader.forms[0]["radios"]["organization_id"])
    assert offered == {str(owner.organization.id), str(managed.organization.id)}
    text = "".join(reader.text)
    assert front_desk_org.name in text and "you are front desk" in text
    assert outsider.organization.name not in text
    assert "Read everything your role can read" in text and "Stay connected" in text
    assert "Unverified app." in text
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()


def test_someone_who_is_not_owner_or_manager_anywhere_can_only_deny(member_factory, app_client_id):
    desk = member_factory(role="front_desk")
    authorization = new_authorization(app_client_id)
    client = browser(desk)
    form = consent_form(client, authorization)
    assert "organization_id" not in form["radios"]
    assert form["buttons"] == [("deny", "true")]
    refused = client.post(form["action"], form["fields"] | {"allow": "true", "organization_id": desk.organization.id})
    _assert_error_page(refused, 403)
    assert not Connection.objects.unscoped().exists() and not Grant.objects.exists()


def test_a_forged_practice_id_in_the_consent_post_is_refused(owner, outsider, signed_in, app_client_id):
    response = approve(signed_in, new_authorization(app_client_id), organization_id=outsider.organization.id)
    _assert_error_page(response, 403)
    response = approve(signed_in, new_authorization(app_client_id), organization_id="not-a-uuid")
    _assert_error_page(response, 403)
    assert not Connection.objects.unscoped().exists() and not Grant.objects.exists()


def test_a_demoted_person_cannot_approve_with_a_page_opened_before(owner, signed_in, app_client_id):
    form = consent_form(signed_in, new_authorization(app_client_id))
    owner.membership.role = "analyst"
    owner.membership.save()
    _assert_error_page(signed_in.post(form["action"], form["fields"] | {"allow": "true"}), 403)
    assert not Grant.objects.exists()


def test_deny_redirects_with_access_denied_and_state(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    form = consent_form(signed_in, authorization)
    response = signed_in.post(form["action"], form["fields"] | {"deny": "true"})
    assert response.status_code == 302 and response["Location"].startswith(CALLBACK)
    params = query_of(response["Location"])
    assert params["error"] == "access_denied" and params["state"] == authorization.state and "code" not in params
    assert not Connection.objects.unscoped().exists()


def test_deny_with_a_tampered_redirect_uri_is_an_error_page(signed_in, app_client_id):
    form = consent_form(signed_in, new_authorization(app_client_id))
    response = signed_in.post(form["action"], form["fields"] | {"redirect_uri": "https://evil.example/cb"})
    _assert_error_page(response)


def test_consent_needs_the_csrf_token(signed_in, app_client_id):
    form = consent_form(signed_in, new_authorization(app_client_id))
    fields = {k: v for k, v in form["fields"].items() if k != "csrfmiddlewaretoken"}
    assert signed_in.post(form["action"], fields | {"allow": "true"}).status_code == 403
    assert not Grant.objects.exists()


def test_approve_binds_the_code_to_the_chosen_practice_and_a_connection(owner, signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    response = approve(signed_in, authorization)
    params = query_of(response["Location"])
    assert params["iss"] == "http://localhost:8787/auth" and params["code"].startswith("eu_")
    grant = Grant.objects.get()
    connection = Connection.objects.unscoped().get()
    assert grant.organization_id == owner.organization.id and grant.connection_id == connection.pk
    assert connection.scopes == "offline_access read write"


def test_approval_prompt_auto_does_not_skip_consent(signed_in, tokens, app_client_id):
    page = signed_in.get(new_authorization(app_client_id).url(approval_prompt="auto"))
    assert page.status_code == 200 and read_page(page).forms


# --- continue: sign-in page ----------------------------------------------------------------------------------------


def test_continue_accepts_only_this_servers_authorize_url(owner):
    for bad in ("https://evil.example/auth/oauth2/authorize", "//evil.example/x", "/auth/me", ""):
        _assert_error_page(Client().get(f"{CONTINUE}?{urlencode({'next': bad})}"))


def test_wrong_password_stays_on_the_page(owner, app_client_id):
    client = Client()
    next_url = new_authorization(app_client_id).url()
    response = client.post(CONTINUE, {"next": next_url, "email": owner.user.email, "password": "wrong"})
    assert response.status_code == 400 and b"Wrong e-mail or password." in response.content
    assert client.get(next_url).status_code == 302  # still signed out


def test_sign_in_with_the_second_factor_then_back_to_authorize(owner, app_client_id):
    key = bytes(range(20))
    TotpDevice.objects.create(user=owner.user, name="phone", confirmed=True, key_encrypted=crypto.encrypt(key.hex()))
    next_url = new_authorization(app_client_id).url()
    client = Client()
    first = client.post(CONTINUE, {"next": next_url, "email": owner.user.email, "password": DEFAULT_PASSWORD})
    assert first.status_code == 200
    form = read_page(first).forms[0]
    assert form["fields"]["step"] == "code"
    assert client.get(next_url).status_code == 302  # half-way is not signed in
    wrong = client.post(CONTINUE, form["fields"] | {"code": "000000"})
    assert wrong.status_code == 400
    totp = TOTP(key, 30, 0, 6)
    done = client.post(CONTINUE, form["fields"] | {"code": f"{totp.token():06d}"})
    assert done.status_code == 302 and done["Location"] == next_url
    assert client.get(next_url).status_code == 200


def test_registered_client_is_marked_unverified_but_a_manual_one_is_not(signed_in, owner):
    from oauth2_provider.models import Application

    manual = Application.objects.create(
        name="Our mobile app",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris=CALLBACK,
    )
    page = signed_in.get(new_authorization(manual.client_id).url())
    assert b"Unverified app." not in page.content and b"Our mobile app" in page.content
    dcr = register_client(client_name="X" * 200)
    page = signed_in.get(new_authorization(dcr).url())
    assert b"Unverified app." in page.content and ("X" * 80).encode() in page.content


def test_authorize_path_is_stable():
    assert AUTHORIZE == "/auth/oauth2/authorize"
