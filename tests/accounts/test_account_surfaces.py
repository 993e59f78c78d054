"""Account-wide surfaces (/user/*, /organization/*): browser session only, their documented shapes, tenant isolation
of the member list, and the role → permission table."""

import json

import pytest
from django.test import Client

from apps.accounts import roles
from apps.accounts.models import Membership
from tests.factories import MembershipFactory, OrganizationFactory
from tests.helpers import assert_error

SURFACES = ["/user/me", "/organization/mine", "/organization/active", "/organization/members", "/user/api-keys"]
CRM_RESOURCES = (
    "patient:", "journey:", "task:", "appointment:", "conversation:", "treatment:",
    "campaign:", "deposit:", "reputation:", "report:",
)  # fmt: skip
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def memberships_snapshot() -> list[tuple]:
    return list(Membership.objects.unscoped().order_by("id").values_list("id", "organization_id", "user_id", "role"))


# --- who may call -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SURFACES)
def test_api_key_is_refused_on_account_surfaces(owner, path):
    before = memberships_snapshot()

    response = owner.api_client().get(path)

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert "X-Service-Access-Generation" not in response
    assert memberships_snapshot() == before


@pytest.mark.parametrize("path", SURFACES)
def test_api_key_in_several_practices_is_refused_before_practice_selection(owner, path):
    MembershipFactory(organization=OrganizationFactory(), user=owner.user, role="owner")

    response = owner.api_client().get(path)

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")


@pytest.mark.parametrize("path", SURFACES)
def test_account_surfaces_without_credentials_are_401(db, path):
    response = Client().get(path)

    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("path", SURFACES)
def test_account_surfaces_answer_a_session(owner, path):
    response = owner.session_client().get(path)

    assert response.status_code == 200, response.content


@pytest.mark.parametrize("path", SURFACES)
def test_account_surfaces_refuse_writes(owner, path):
    response = owner.session_client().post(path, {}, content_type="application/json")

    assert_error(response, 405, "METHOD_NOT_ALLOWED")


# --- shapes -------------------------------------------------------------------------------------------------


def test_user_me_shape(owner):
    response = owner.session_client().get("/user/me")

    assert response.json() == {
        "id": str(owner.user.id),
        "email": owner.user.email,
        "name": owner.user.name,
        "createdAt": owner.user.created_at.strftime(TIMESTAMP_FORMAT),
        "emailVerifiedAt": None,
        "phoneMobile": "",
    }


def test_your_own_mobile_number_is_kept_in_e164_and_checked(owner):
    client = owner.session_client()

    def patch(data):
        return client.patch("/user/me", json.dumps(data), content_type="application/json")

    assert patch({"phoneMobile": "+44 7700 900123"}).json()["phoneMobile"] == "+447700900123"
    for bad in ("07700 900123", "+44 12", 447700900123):
        response = patch({"phoneMobile": bad})
        assert response.status_code == 400 and "phoneMobile" in response.json()["details"]["fields"], bad
    assert client.get("/user/me").json()["phoneMobile"] == "+447700900123"
    assert patch({"phoneMobile": ""}).json()["phoneMobile"] == ""


def test_organization_mine_lists_only_the_callers_practices(owner, outsider):
    second = OrganizationFactory(name="Second Smile", country="FR", region="eu")
    MembershipFactory(organization=second, user=owner.user, role="dentist")

    response = owner.session_client().get("/organization/mine")

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items"}
    assert body["items"] == [
        {
            "id": str(owner.organization.id),
            "name": owner.organization.name,
            "country": "IT",
            "region": "eu",
            "memberRole": "owner",
            "createdAt": owner.organization.created_at.strftime(TIMESTAMP_FORMAT),
        },
        {
            "id": str(second.id),
            "name": "Second Smile",
            "country": "FR",
            "region": "eu",
            "memberRole": "dentist",
            "createdAt": second.created_at.strftime(TIMESTAMP_FORMAT),
        },
    ]
    assert str(outsider.organization.id) not in response.content.decode()


def test_organization_mine_is_empty_without_membership(owner):
    owner.membership.delete()

    response = owner.session_client().get("/organization/mine")

    assert response.json() == {"items": []}


def test_organization_active_shape(member_factory):
    member = member_factory(role="front_desk", clinical_workspace_available=True)

    response = member.session_client().get("/organization/active")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "id": str(member.organization.id),
        "name": member.organization.name,
        "memberRole": "front_desk",
        "workspaces": ["crm", "pms"],
        "defaultWorkspace": "crm",
        "hideOtherWorkspace": False,
        "pmsAccess": {
            "pmsWorkspaceAvailable": True,
            "nativeWritesEnabled": False,
            "systemOfRecord": "external",
            "authorityGeneration": 0,
        },
        "accessGeneration": 0,
    }
    assert response["X-Service-Access-Generation"] == f"{member.organization.id}:0"


def test_organization_active_follows_the_header(owner):
    second = OrganizationFactory()
    MembershipFactory(organization=second, user=owner.user, role="analyst")

    response = owner.session_client().get("/organization/active", headers={"X-Organization-ID": str(second.id)})

    assert response.json()["id"] == str(second.id)
    assert response.json()["memberRole"] == "analyst"


def test_organization_members_lists_only_the_active_practice(owner, outsider, member_factory):
    colleague = member_factory(role="hygienist", organization=owner.organization)
    outsider_colleague = member_factory(role="manager", organization=outsider.organization)

    response = owner.session_client().get("/organization/members")

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items"}
    assert body["items"] == [
        {
            "userId": str(owner.user.id),
            "email": owner.user.email,
            "name": owner.user.name,
            "role": "owner",
            "joinedAt": owner.membership.created_at.strftime(TIMESTAMP_FORMAT),
        },
        {
            "userId": str(colleague.user.id),
            "email": colleague.user.email,
            "name": colleague.user.name,
            "role": "hygienist",
            "joinedAt": colleague.membership.created_at.strftime(TIMESTAMP_FORMAT),
        },
    ]
    content = response.content.decode()
    for foreign in (outsider, outsider_colleague):
        assert str(foreign.user.id) not in content
        assert foreign.user.email not in content


def test_organization_members_query_count_is_bounded(owner, member_factory, django_assert_max_num_queries):
    for role in roles.ROLES * 3:
        member_factory(role=role, organization=owner.organization)
    client = owner.session_client()

    with django_assert_max_num_queries(4):
        response = client.get("/organization/members")

    assert response.status_code == 200
    assert len(response.json()["items"]) == 1 + len(roles.ROLES) * 3


@pytest.mark.parametrize("role", sorted(roles.CLINICAL_ROLES))
def test_clinical_roles_can_read_members(member_factory, role):
    member = member_factory(role=role)

    response = member.session_client().get("/organization/members")

    assert response.status_code == 200, response.content
    assert [item["userId"] for item in response.json()["items"]] == [str(member.user.id)]


@pytest.mark.parametrize("role", roles.ROLES)
def test_every_role_reads_its_active_practice(member_factory, role):
    member = member_factory(role=role)

    response = member.session_client().get("/organization/active")

    assert response.status_code == 200, response.content
    assert response.json()["memberRole"] == role


# --- the role table -----------------------------------------------------------------------------------------


def test_role_table_covers_exactly_the_eight_roles():
    assert roles.ROLES == (
        "owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse",
    )  # fmt: skip
    assert set(roles.ROLE_PERMISSIONS) == set(roles.ROLES)
    assert {value for value, _ in roles.ROLE_CHOICES} == set(roles.ROLES)
    assert sorted(roles.CLINICAL_ROLES) == ["dentist", "hygienist", "nurse"]


@pytest.mark.parametrize("role", roles.ROLES)
def test_every_permission_is_resource_colon_action(role):
    for permission in roles.ROLE_PERMISSIONS[role]:
        resource, _, action = permission.partition(":")
        assert resource and action and ":" not in action, permission


@pytest.mark.parametrize("role", roles.ROLES)
def test_every_role_may_read_members(role):
    assert roles.role_has_permission(role, "member:read")


@pytest.mark.parametrize("role", sorted(roles.CLINICAL_ROLES))
def test_clinical_roles_hold_no_crm_permission(role):
    crm = {p for p in roles.ROLE_PERMISSIONS[role] if p.startswith(CRM_RESOURCES)}

    assert crm == set()
    assert not roles.role_has_permission(role, "patient:read")
    assert not roles.role_has_permission(role, "report:read")


def test_only_the_owner_may_erase_patients():
    holders = {role for role, permissions in roles.ROLE_PERMISSIONS.items() if "patient:erase" in permissions}

    assert holders == {"owner"}


def test_bulk_archive_is_for_owners_and_managers():
    holders = {role for role, permissions in roles.ROLE_PERMISSIONS.items() if "patient:delete" in permissions}

    assert holders == {"owner", "manager"}


def test_owner_holds_every_permission_any_role_holds_but_writing_clinical_records():
    # Writing and signing clinical records is a clinician's act (dentist, hygienist, nurse), never a manager's.
    clinical_acts = {"clinical:write", "clinical:sign"}
    assert roles.ROLE_PERMISSIONS["owner"] == roles.ALL_PERMISSIONS - clinical_acts
    owner_only = {"patient:erase", "practice:archive", "agreement:accept"}
    assert roles.ROLE_PERMISSIONS["manager"] == roles.ALL_PERMISSIONS - clinical_acts - owner_only


def test_clinical_permissions_by_role():
    def holders(permission):
        return {role for role in roles.ROLES if roles.role_has_permission(role, permission)}

    assert holders("pms:diary") == {"owner", "manager", "front_desk", "dentist", "hygienist", "nurse"}
    assert holders("clinical:read") == {"owner", "manager", "dentist", "hygienist", "nurse"}
    assert holders("clinical:write") == {"dentist", "hygienist", "nurse"}
    assert holders("clinical:sign") == {"dentist", "hygienist"}
    assert holders("pms:manage") == {"owner", "manager"}


def test_unknown_role_holds_nothing():
    assert not roles.role_has_permission("superuser", "member:read")
