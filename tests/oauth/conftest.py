"""OAuth server helpers: registration, PKCE, the consent page read like a browser does, the code exchange."""

import base64
import hashlib
import secrets
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from authlib.integrations.requests_client import OAuth2Session
from django.test import Client
from django.utils import timezone

from tests.conftest import Member, make_member
from tests.factories import DEFAULT_PASSWORD

AUTHORIZE = "/auth/oauth2/authorize"
CONSENT = "/auth/oauth2/consent"
CONTINUE = "/auth/oauth2/continue"
TOKEN = "/auth/oauth2/token"
REVOKE = "/auth/oauth2/revoke"
INTROSPECT = "/auth/oauth2/introspect"
REGISTER = "/auth/oauth2/register"
CALLBACK = "http://127.0.0.1:53682/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class FormReader(HTMLParser):
    """The page's forms as a browser sees them: inputs (hidden, radio, checked), buttons, action."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action"), "fields": {}, "radios": {}, "buttons": []})
        elif self.forms and tag == "input":
            form = self.forms[-1]
            kind = attrs.get("type", "text")
            if kind == "radio":
                form["radios"].setdefault(attrs["name"], []).append(attrs.get("value"))
                if "checked" in attrs:
                    form["fields"][attrs["name"]] = attrs.get("value")
            elif kind != "checkbox":
                form["fields"][attrs["name"]] = attrs.get("value") or ""
        elif self.forms and tag == "button":
            self.forms[-1]["buttons"].append((attrs.get("name"), attrs.get("value")))

    def handle_data(self, data):
        self.text.append(data)


def read_page(response) -> FormReader:
    reader = FormReader()
    reader.feed(response.content.decode())
    return reader


def query_of(location: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(location).query).items()}


def register_client(client: Client | None = None, **metadata) -> str:
    body = {"client_name": "Assistant", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"} | metadata
    response = (client or Client()).post(REGISTER, body, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["client_id"]


def authlib_app(client_id: str, redirect_uri: str = CALLBACK):
    """The app, as a real OAuth client (authlib): public, PKCE S256, read write offline_access."""
    return OAuth2Session(
        client_id,
        scope="read write offline_access",
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    )


@dataclass
class Authorization:
    client_id: str
    verifier: str
    challenge: str
    state: str
    scope: str = "read write offline_access"
    redirect_uri: str = CALLBACK

    def params(self, **overrides) -> dict:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": self.scope,
            "state": self.state,
            "code_challenge": self.challenge,
            "code_challenge_method": "S256",
        } | overrides
        return {key: value for key, value in params.items() if value is not None}

    def url(self, **overrides) -> str:
        return f"{AUTHORIZE}?{urlencode(self.params(**overrides))}"


def new_authorization(client_id: str, scope: str = "read write offline_access") -> Authorization:
    verifier, challenge = pkce()
    return Authorization(client_id, verifier, challenge, secrets.token_urlsafe(8), scope=scope)


def browser(member: Member) -> Client:
    """A browser signed in through the service's own sign-in page, CSRF checks on."""
    client = Client(enforce_csrf_checks=True)
    page = client.get(f"{CONTINUE}?{urlencode({'next': AUTHORIZE + '?x=1'})}")
    assert page.status_code == 200
    form = read_page(page).forms[0]
    response = client.post(
        CONTINUE,
        form["fields"] | {"email": member.user.email, "password": DEFAULT_PASSWORD},
    )
    assert response.status_code == 302, response.content
    return client


def consent_form(client: Client, authorization: Authorization, **overrides) -> dict:
    page = client.get(authorization.url(**overrides))
    assert page.status_code == 200, page.content
    forms = read_page(page).forms
    assert len(forms) == 1
    return forms[0]


def approve(client: Client, authorization: Authorization, *, organization_id=None, **overrides):
    form = consent_form(client, authorization, **overrides)
    data = dict(form["fields"])
    if organization_id is not None:
        data["organization_id"] = str(organization_id)
    return client.post(form["action"], data | {"allow": "true"})


def code_for(client: Client, authorization: Authorization, **kwargs) -> str:
    response = approve(client, authorization, **kwargs)
    assert response.status_code == 302, response.content
    params = query_of(response["Location"])
    assert params["state"] == authorization.state
    return params["code"]


def exchange(authorization: Authorization, code: str, **overrides):
    body = {
        "grant_type": "authorization_code",
        "client_id": authorization.client_id,
        "code": code,
        "code_verifier": authorization.verifier,
        "redirect_uri": authorization.redirect_uri,
    } | overrides
    return Client().post(TOKEN, {k: v for k, v in body.items() if v is not None})


def refresh(client_id: str, refresh_token: str, **extra):
    return Client().post(
        TOKEN, {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": refresh_token} | extra
    )


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    return time_machine


@pytest.fixture
def connection_endpoint(monkeypatch):
    """make(connection): a webhook endpoint the connection created (as a managed subscription leaves it, enabled)
    with one queued delivery. DNS is a table here (no network)."""
    from apps.webhooks import sender, services
    from apps.webhooks.models import WebhookEndpoint

    monkeypatch.setattr(sender, "resolve", lambda host, port: ["93.184.216.34"])

    def make(connection):
        organization = connection.organization
        created = services.endpoint_create(
            organization=organization,
            user=connection.user,
            name="Assistant sync",
            url="https://hooks.example.com/assistant",
            events=["patient.created"],
            subscription_key="assistant-sync",
            connection_id=connection.pk,
        )
        WebhookEndpoint.objects.for_org(organization).filter(pk=created.endpoint.pk).update(
            verified_at=timezone.now(), enabled=True
        )
        delivery = services.endpoint_test(organization=organization, endpoint=created.endpoint)
        return created.endpoint, delivery

    return make


def assert_archived_with_failed_deliveries(endpoint, delivery):
    from apps.webhooks.models import WebhookDelivery

    endpoint.refresh_from_db()
    delivery.refresh_from_db()
    assert endpoint.archived_at is not None and not endpoint.enabled
    assert delivery.status == WebhookDelivery.Status.FAILED and delivery.completed_at is not None


@pytest.fixture
def app_client_id(db) -> str:
    return register_client()


@pytest.fixture
def signed_in(owner) -> Client:
    return browser(owner)


@pytest.fixture
def tokens(owner, signed_in, app_client_id) -> dict:
    """A finished authorization (read write offline_access) of `owner`'s practice."""
    authorization = new_authorization(app_client_id)
    response = exchange(authorization, code_for(signed_in, authorization))
    assert response.status_code == 200, response.content
    return response.json() | {"client_id": app_client_id}


__all__ = ["make_member"]
