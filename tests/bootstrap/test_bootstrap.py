"""GET /bootstrap: the body per role and credential kind, features read from the areas, limits, the strong ETag and
304, the ETag moving when the role, a feature or an agreement changes, and tenancy."""

import re

import pytest
from django.conf import settings
from django.test import Client

from apps.accounts.roles import ROLE_PERMISSIONS
from apps.agreements.models import Agreement
from apps.voice.models import VoiceSettings
from tests.factories import MembershipFactory, UserFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

BOOTSTRAP = "/bootstrap"


def read(client, **headers):
    return client.get(BOOTSTRAP, headers=headers)


def test_the_owners_bootstrap(owner, django_assert_max_num_queries):
    owner.organization.country = "GB"
    owner.organization.timezone = "Europe/London"
    owner.organization.save()

    with django_assert_max_num_queries(6):
        response = read(owner.api_client())

    assert response.status_code == 200, response.content
    assert re.fullmatch(r'"[0-9a-f]{64}"', response["ETag"])
    assert "private" in response["Cache-Control"]
    burst, refill = settings.SVC_API_KEY_BUCKET
    assert response.json() == {
        "practice": {
            "id": str(owner.organization.id),
            "name": owner.organization.name,
            "country": "GB",
            "region": "eu",
            "timezone": "Europe/London",
            "currency": "GBP",
        },
        "user": {"id": str(owner.user.id), "name": owner.user.name, "email": owner.user.email},
        "role": "owner",
        "permissions": sorted(ROLE_PERMISSIONS["owner"]),
        "workspaces": ["crm"],
        "defaultWorkspace": "crm",
        "clinicalWorkspaceAvailable": False,
        "features": {
            "leadAds": False,
            "website": False,
            "widget": False,
            "dialer": False,
            "aiVoice": False,
            "reputation": False,
            "emailDomains": False,
            "clinicalWorkspace": False,
        },
        "limits": {
            "apiCredentialRequests": {"burst": burst, "refillPerSecond": refill},
            "requestBodyBytes": 6 * 1024 * 1024,
            "jsonBodyBytes": 1024 * 1024,
            "imageUploadBytes": 5 * 1024 * 1024,
            "webhookEndpoints": 20,
            "mcpReplyBytes": 16 * 1024 * 1024,
            "feedPageSize": 100,
        },
        "pendingAgreements": 2,
    }


@pytest.mark.parametrize(
    ("role", "workspaces"),
    [("manager", ["crm", "pms"]), ("front_desk", ["crm", "pms"]), ("analyst", ["crm"]), ("dentist", ["pms"])],
)
def test_each_role_reads_its_own(member_factory, role, workspaces):
    member = member_factory(role=role, clinical_workspace_available=True, country="IT")

    session_body = read(member.session_client()).json()
    key_body = read(member.api_client()).json()

    assert session_body == key_body  # the same body whatever the credential
    assert (key_body["role"], key_body["permissions"]) == (role, sorted(ROLE_PERMISSIONS[role]))
    assert (key_body["workspaces"], key_body["clinicalWorkspaceAvailable"]) == (workspaces, True)
    assert key_body["features"]["clinicalWorkspace"] is True
    assert key_body["practice"]["currency"] == "EUR"


def test_oauth_tokens_need_a_read_or_settings_scope(owner):
    for scopes in ("read", "settings.read", "settings.write"):
        assert read(bearer(mint(owner, scopes)[0])).status_code == 200, scopes

    body = assert_error(read(bearer(mint(owner, "patients.read")[0])), 403, "INSUFFICIENT_SCOPE")
    assert body["details"] == {"requiredAnyOf": ["read", "settings.read", "settings.write"]}


def test_if_none_match_answers_304_with_no_body(owner):
    client = owner.api_client()
    etag = read(client)["ETag"]

    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        response = read(client, if_none_match=header)
        assert response.status_code == 304, header
        assert response.content == b""
        assert response["ETag"] == etag
    assert read(client, if_none_match='"stale"').status_code == 200
    assert read(client, if_none_match="garbage").status_code == 200


def test_the_etag_moves_with_the_role_a_feature_and_the_agreements(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    client = manager.api_client()
    first = read(client)["ETag"]
    assert read(client)["ETag"] == first  # stable while nothing changes

    manager.membership.role = "front_desk"
    manager.membership.save()
    demoted = read(client)
    assert (demoted["ETag"] != first, demoted.json()["role"]) == (True, "front_desk")
    assert read(client, if_none_match=first).status_code == 200

    VoiceSettings.objects.create(organization=owner.organization, enabled=True)
    voiced = read(client)
    assert voiced.json()["features"]["aiVoice"] is True and voiced["ETag"] != demoted["ETag"]

    owner.session_client().generic(
        "POST", f"/agreements/{Agreement.objects.get(kind='terms', version='2025-06').id}/accept"
    )
    accepted = read(client)
    assert accepted.json()["pendingAgreements"] == 1 and accepted["ETag"] != voiced["ETag"]


def test_another_practices_features_never_show(owner, outsider):
    VoiceSettings.objects.create(organization=outsider.organization, enabled=True)
    MembershipFactory(organization=outsider.organization, user=owner.user, role="analyst")

    mine = read(owner.api_client(), x_organization_id=str(owner.organization.id)).json()
    theirs = read(owner.api_client(), x_organization_id=str(outsider.organization.id)).json()

    assert (mine["features"]["aiVoice"], mine["role"]) == (False, "owner")
    assert (theirs["features"]["aiVoice"], theirs["role"], theirs["practice"]["id"]) == (
        True,
        "analyst",
        str(outsider.organization.id),
    )
    assert_error(read(owner.api_client()), 403, "ORGANIZATION_AMBIGUOUS")  # two practices, none chosen
    assert_error(
        read(outsider.api_client(), x_organization_id=str(owner.organization.id)), 403, "ORGANIZATION_FORBIDDEN"
    )


def test_without_a_practice_or_a_credential(db):
    loner = UserFactory()
    client = Client()
    client.force_login(loner)
    assert_error(read(client), 403, "NO_ORGANIZATION")
    assert_error(read(Client()), 401, "UNAUTHENTICATED")
    assert_error(Client().post(BOOTSTRAP), 405, "METHOD_NOT_ALLOWED")
