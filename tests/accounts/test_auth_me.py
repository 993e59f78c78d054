"""GET /auth/me: the exact bootstrap shape, workspaces derived from role and preference, the access generation
(body and X-Service-Access-Generation header) and the mobile version floor (426)."""

import pytest
from django.test import Client

from apps.accounts import roles
from apps.accounts.models import Membership, Organization
from tests.factories import MembershipFactory, OrganizationFactory
from tests.helpers import assert_error

ME = "/auth/me"
MEMBERS = "/organization/members"
HEADER = "X-Service-Access-Generation"
ORGANIZATION_KEYS = {
    "id",
    "name",
    "memberRole",
    "workspaces",
    "defaultWorkspace",
    "hideOtherWorkspace",
    "pmsAccess",
    "accessGeneration",
}
PMS_ACCESS_KEYS = {"pmsWorkspaceAvailable", "nativeWritesEnabled", "systemOfRecord", "authorityGeneration"}


def me(client: Client, **headers) -> dict:
    response = client.get(ME, headers=headers)
    assert response.status_code == 200, response.content
    return response.json()


def set_membership(member, **fields) -> None:
    Membership.objects.unscoped().filter(id=member.membership.id).update(**fields)


# --- shape --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("credential", ["api_key", "session"])
def test_auth_me_has_exactly_the_documented_shape(owner, credential):
    client = owner.api_client() if credential == "api_key" else owner.session_client()

    body = me(client)

    assert set(body) == {"user", "session", "organization"}
    assert body["user"] == {"id": str(owner.user.id), "email": owner.user.email, "name": owner.user.name}
    assert body["session"] == {"activeOrganizationId": str(owner.organization.id)}
    organization = body["organization"]
    assert set(organization) == ORGANIZATION_KEYS
    assert set(organization["pmsAccess"]) == PMS_ACCESS_KEYS
    assert organization["id"] == str(owner.organization.id)
    assert organization["name"] == owner.organization.name
    assert organization["memberRole"] == "owner"
    assert organization["workspaces"] == ["crm"]
    assert organization["defaultWorkspace"] == "crm"
    assert organization["hideOtherWorkspace"] is False
    assert organization["pmsAccess"] == {
        "pmsWorkspaceAvailable": False,
        "nativeWritesEnabled": False,
        "systemOfRecord": "external",
        "authorityGeneration": 0,
    }
    assert organization["accessGeneration"] == 0


def test_pms_access_reflects_the_practice(owner):
    Organization.objects.filter(id=owner.organization.id).update(
        clinical_workspace_available=True,
        pms_native_writes_enabled=True,
        pms_system_of_record="native",
        pms_authority_generation=7,
    )

    organization = me(owner.api_client())["organization"]

    assert organization["pmsAccess"] == {
        "pmsWorkspaceAvailable": True,
        "nativeWritesEnabled": True,
        "systemOfRecord": "native",
        "authorityGeneration": 7,
    }
    assert organization["workspaces"] == ["crm", "pms"]


def test_auth_me_without_credentials_is_401(db):
    response = Client().get(ME)

    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")


# --- workspaces ---------------------------------------------------------------------------------------------

EXPECTED_WORKSPACES = {
    # role: (without the clinical workspace, with it)
    "owner": (["crm"], ["crm", "pms"]),
    "manager": (["crm"], ["crm", "pms"]),
    "front_desk": (["crm"], ["crm", "pms"]),
    "telesales": (["crm"], ["crm"]),
    "analyst": (["crm"], ["crm"]),
    "dentist": (["pms"], ["pms"]),
    "hygienist": (["pms"], ["pms"]),
    "nurse": (["pms"], ["pms"]),
}


def test_every_role_is_covered():
    assert set(EXPECTED_WORKSPACES) == set(roles.ROLES)


@pytest.mark.parametrize("clinical", [False, True], ids=["crm-only-practice", "clinical-practice"])
@pytest.mark.parametrize("role", roles.ROLES)
def test_workspaces_by_role(member_factory, role, clinical):
    member = member_factory(role=role, clinical_workspace_available=clinical)

    organization = me(member.api_client())["organization"]

    expected = EXPECTED_WORKSPACES[role][1 if clinical else 0]
    assert organization["memberRole"] == role
    assert organization["workspaces"] == expected
    assert organization["defaultWorkspace"] == expected[0]
    assert organization["hideOtherWorkspace"] is False
    assert organization["pmsAccess"]["pmsWorkspaceAvailable"] is clinical


@pytest.mark.parametrize(
    ("role", "clinical", "preference", "workspaces", "default"),
    [
        ("owner", True, "pms", ["crm", "pms"], "pms"),
        ("front_desk", True, "crm", ["crm", "pms"], "crm"),
        # A preference the role (or practice) does not open falls back to the role's first workspace.
        ("owner", False, "pms", ["crm"], "crm"),
        ("telesales", True, "pms", ["crm"], "crm"),
        ("dentist", True, "crm", ["pms"], "pms"),
    ],
)
def test_default_workspace_preference_is_respected_when_opened(
    member_factory, role, clinical, preference, workspaces, default
):
    member = member_factory(role=role, clinical_workspace_available=clinical)
    set_membership(member, default_workspace=preference)

    organization = me(member.api_client())["organization"]

    assert organization["workspaces"] == workspaces
    assert organization["defaultWorkspace"] == default


@pytest.mark.parametrize(
    ("role", "clinical", "preference", "expected"),
    [
        ("owner", True, "pms", "pms"),
        ("owner", True, None, "crm"),
        ("manager", True, "crm", "crm"),
        ("owner", False, "pms", "crm"),
        ("nurse", True, None, "pms"),
    ],
)
def test_hide_other_workspace_narrows_to_the_default(member_factory, role, clinical, preference, expected):
    member = member_factory(role=role, clinical_workspace_available=clinical)
    set_membership(member, default_workspace=preference, hide_other_workspace=True)

    organization = me(member.session_client())["organization"]

    assert organization["workspaces"] == [expected]
    assert organization["defaultWorkspace"] == expected
    assert organization["hideOtherWorkspace"] is True


def test_workspaces_follow_the_practice_at_once(member_factory):
    member = member_factory(role="manager")
    client = member.api_client()
    assert me(client)["organization"]["workspaces"] == ["crm"]

    Organization.objects.filter(id=member.organization.id).update(clinical_workspace_available=True)

    assert me(client)["organization"]["workspaces"] == ["crm", "pms"]


# --- access generation --------------------------------------------------------------------------------------


def test_api_key_reads_generation_zero_and_gets_no_header(owner):
    Organization.objects.filter(id=owner.organization.id).update(access_generation=4)
    set_membership(owner, access_generation=3)

    response = owner.api_client().get(ME)

    assert response.status_code == 200
    assert response.json()["organization"]["accessGeneration"] == 0
    assert HEADER not in response


def test_session_gets_the_generation_in_body_and_header(owner):
    Organization.objects.filter(id=owner.organization.id).update(access_generation=4)
    set_membership(owner, access_generation=3)
    client = owner.session_client()

    response = client.get(ME)
    members = client.get(MEMBERS)

    assert response.json()["organization"]["accessGeneration"] == 7
    assert response[HEADER] == f"{owner.organization.id}:7"
    assert members.status_code == 200
    assert members[HEADER] == f"{owner.organization.id}:7"


def test_session_header_moves_with_either_counter(owner):
    client = owner.session_client()
    org_id = owner.organization.id
    assert client.get(ME)[HEADER] == f"{org_id}:0"

    set_membership(owner, access_generation=1)
    assert client.get(ME)[HEADER] == f"{org_id}:1"
    assert client.get(MEMBERS)[HEADER] == f"{org_id}:1"

    Organization.objects.filter(id=org_id).update(access_generation=5)
    response = client.get(ME)
    assert response[HEADER] == f"{org_id}:6"
    assert response.json()["organization"]["accessGeneration"] == 6
    assert client.get(MEMBERS)[HEADER] == f"{org_id}:6"


def test_session_header_names_the_practice_it_acted_in(owner):
    second = OrganizationFactory(access_generation=2)
    MembershipFactory(organization=second, user=owner.user, role="analyst", access_generation=1)
    client = owner.session_client()

    response = client.get(ME, headers={"X-Organization-ID": str(second.id)})

    assert response[HEADER] == f"{second.id}:3"
    assert response.json()["organization"]["accessGeneration"] == 3


def test_session_without_a_practice_gets_no_header(owner):
    owner.membership.delete()

    response = owner.session_client().get(ME)

    assert response.status_code == 200
    assert HEADER not in response


def test_refused_session_request_gets_no_header(owner):
    response = Client().get(ME)

    assert response.status_code == 401
    assert HEADER not in response


# --- mobile version floor -----------------------------------------------------------------------------------


@pytest.mark.parametrize("client_header", ["mobile/0.9.0", "mobile/0.9", "mobile/0", "mobile/0.99.99"])
@pytest.mark.parametrize("credential", ["api_key", "session"])
def test_old_mobile_build_gets_426(owner, settings, client_header, credential):
    settings.SVC_MOBILE_MIN_VERSION = "1.0.0"
    client = owner.api_client() if credential == "api_key" else owner.session_client()

    response = client.get(ME, headers={"X-Service-Client": client_header})

    assert response.status_code == 426, response.content
    body = response.json()
    assert set(body) == {"code", "message", "details", "minimumVersion"}
    assert body["code"] == "CLIENT_UPGRADE_REQUIRED"
    assert body["details"] == {"minimumVersion": "1.0.0"}
    assert body["minimumVersion"] == "1.0.0"
    assert isinstance(body["message"], str) and body["message"]


@pytest.mark.parametrize("client_header", ["mobile/1.0.0", "mobile/2.1", "mobile/1", "mobile/1.0.0.1", "web/0.1"])
def test_supported_or_non_mobile_clients_get_200(owner, settings, client_header):
    settings.SVC_MOBILE_MIN_VERSION = "1.0.0"

    response = owner.api_client().get(ME, headers={"X-Service-Client": client_header})

    assert response.status_code == 200, response.content


def test_no_client_header_gets_200(owner, settings):
    settings.SVC_MOBILE_MIN_VERSION = "1.0.0"

    assert owner.api_client().get(ME).status_code == 200


def test_floor_compares_versions_numerically(owner, settings):
    settings.SVC_MOBILE_MIN_VERSION = "1.10.0"
    client = owner.api_client()

    assert client.get(ME, headers={"X-Service-Client": "mobile/1.9.9"}).status_code == 426
    assert client.get(ME, headers={"X-Service-Client": "mobile/1.10.0"}).status_code == 200
    assert client.get(ME, headers={"X-Service-Client": "mobile/1.11"}).status_code == 200


def test_floor_does_not_hide_a_missing_credential(db, settings):
    settings.SVC_MOBILE_MIN_VERSION = "1.0.0"

    response = Client().get(ME, headers={"X-Service-Client": "mobile/0.1.0"})

    assert_error(response, 401, "UNAUTHENTICATED")
