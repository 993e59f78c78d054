"""Practices and their teams through HTTP: creating and switching practices, workspace preferences, roles, removal
and leaving, the access generation header after every change of what a member may open (workspace, role,
entitlements from the back office), and browser-session-only surfaces."""

import re
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from apps.accounts.models import Membership, Organization
from apps.accounts.services import team
from tests.accounts.two_factor_support import GENERATION, ME, admin_form_data, generation, post, put
from tests.factories import MembershipFactory, OrganizationFactory, UserFactory
from tests.helpers import assert_error

CREATE = "/auth/organization/create"
SET_ACTIVE = "/auth/organization/set-active"


def member_path(user_id, suffix: str = "") -> str:
    return f"/settings/team/members/{user_id}{suffix}"


def set_workspace(client: Client, user_id, body: dict):
    return put(client, member_path(user_id, "/workspace"), body)


def set_role(client: Client, user_id, role: str):
    return put(client, member_path(user_id, "/role"), {"role": role})


def remove(client: Client, user_id):
    return client.delete(member_path(user_id))


def role_of(member) -> str | None:
    row = Membership.objects.for_org(member.organization).filter(user=member.user).first()
    return row.role if row else None


# --- creating and switching practices -----------------------------------------------------------------------------


def test_creating_a_practice_makes_you_its_owner_and_activates_it(owner):
    client = owner.session_client()

    response = post(client, CREATE, {"name": "  Studio Dentistico Rossi ", "country": "it"})

    assert response.status_code == 201, response.content
    body = response.json()
    created = Organization.objects.get(pk=body["id"])
    assert body["name"] == created.name == "Studio Dentistico Rossi"
    assert body["country"] == "IT"
    assert body["memberRole"] == "owner"
    assert Membership.objects.for_org(created).get(user=owner.user).role == "owner"
    me = client.get(ME).json()
    assert me["session"]["activeOrganizationId"] == body["id"]
    assert me["organization"]["id"] == body["id"]
    assert me["organization"]["memberRole"] == "owner"


def test_creating_a_practice_needs_a_name(owner):
    client = owner.session_client()

    assert list(assert_error(post(client, CREATE, {}), 400, "VALIDATION_ERROR")["details"]["fields"]) == ["name"]
    assert_error(post(client, CREATE, {"name": "   "}), 400, "VALIDATION_ERROR")
    assert Membership.objects.unscoped().filter(user=owner.user).count() == 1


def test_a_person_without_a_practice_can_create_one(db):
    user = UserFactory()
    client = Client()
    client.force_login(user)

    response = post(client, CREATE, {"name": "Clinica Verdi"})

    assert response.status_code == 201, response.content
    assert client.get(ME).json()["organization"]["name"] == "Clinica Verdi"


def test_switching_to_a_practice_you_belong_to(owner):
    second = OrganizationFactory(name="Clinica Bianchi")
    MembershipFactory(organization=second, user=owner.user, role="analyst")
    client = owner.session_client()
    assert client.get(ME).json()["session"]["activeOrganizationId"] == str(owner.organization.id)

    response = post(client, SET_ACTIVE, {"organizationId": str(second.id)})

    assert response.status_code == 200, response.content
    assert response.json() == {"activeOrganizationId": str(second.id)}
    me = client.get(ME)
    assert me.json()["session"]["activeOrganizationId"] == str(second.id)
    assert me.json()["organization"]["memberRole"] == "analyst"
    assert me[GENERATION].startswith(f"{second.id}:")


def test_switching_to_a_practice_you_do_not_belong_to_is_403(owner, outsider):
    client = owner.session_client()

    response = post(client, SET_ACTIVE, {"organizationId": str(outsider.organization.id)})

    assert_error(response, 403, "ORGANIZATION_FORBIDDEN")
    assert client.get(ME).json()["session"]["activeOrganizationId"] == str(owner.organization.id)
    unknown = post(client, SET_ACTIVE, {"organizationId": str(uuid.uuid4())})
    assert_error(unknown, 403, "ORGANIZATION_FORBIDDEN")


def test_null_clears_the_active_practice(owner):
    MembershipFactory(organization=OrganizationFactory(), user=owner.user, role="manager")
    client = owner.session_client()

    response = post(client, SET_ACTIVE, {"organizationId": None})

    assert response.status_code == 200, response.content
    assert response.json() == {"activeOrganizationId": None}
    me = client.get(ME)
    assert me.json()["session"]["activeOrganizationId"] is None
    assert me.json()["organization"] is None
    assert GENERATION not in me


def test_set_active_needs_the_field(owner):
    body = assert_error(post(owner.session_client(), SET_ACTIVE, {}), 400, "VALIDATION_ERROR")

    assert list(body["details"]["fields"]) == ["organizationId"]


# --- workspaces -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "clinical", "workspace"),
    [
        ("dentist", True, "pms"),
        ("nurse", False, "pms"),
        ("front_desk", True, "pms"),
        ("telesales", False, "crm"),
        ("analyst", True, "crm"),
        ("manager", True, "crm"),
    ],
)
def test_any_member_sets_their_own_workspace(member_factory, role, clinical, workspace):
    member = member_factory(role=role, clinical_workspace_available=clinical)
    client = member.session_client()

    response = set_workspace(client, member.user.id, {"workspace": workspace})

    assert response.status_code == 200, response.content
    assert response.json()["defaultWorkspace"] == workspace
    assert response.json()["userId"] == str(member.user.id)
    assert client.get(ME).json()["organization"]["defaultWorkspace"] == workspace


def test_the_answer_is_the_effective_value(member_factory):
    member = member_factory(role="front_desk", clinical_workspace_available=True)
    client = member.session_client()

    both = set_workspace(client, member.user.id, {"workspace": "pms"})
    hidden = set_workspace(client, member.user.id, {"workspace": "pms", "hideOtherWorkspace": True})
    kept = set_workspace(client, member.user.id, {"workspace": "crm"})  # hideOtherWorkspace left as it was

    assert both.json() == {
        "userId": str(member.user.id),
        "role": "front_desk",
        "workspaces": ["crm", "pms"],
        "defaultWorkspace": "pms",
        "hideOtherWorkspace": False,
    }
    assert hidden.json()["workspaces"] == ["pms"] and hidden.json()["hideOtherWorkspace"] is True
    assert kept.json()["workspaces"] == ["crm"] and kept.json()["hideOtherWorkspace"] is True
    me = client.get(ME).json()["organization"]
    assert (me["workspaces"], me["defaultWorkspace"], me["hideOtherWorkspace"]) == (["crm"], "crm", True)


@pytest.mark.parametrize(
    ("role", "clinical", "workspace"),
    [
        ("dentist", True, "crm"),
        ("hygienist", False, "crm"),
        ("telesales", True, "pms"),
        ("analyst", True, "pms"),
        ("front_desk", False, "pms"),
        ("owner", False, "pms"),
    ],
)
def test_a_workspace_the_role_does_not_open_is_409(member_factory, role, clinical, workspace):
    member = member_factory(role=role, clinical_workspace_available=clinical)
    client = member.session_client()
    before = generation(client)

    response = set_workspace(client, member.user.id, {"workspace": workspace})

    body = assert_error(response, 409, "WORKSPACE_UNAVAILABLE")
    assert body["details"]["workspace"] == workspace
    assert Membership.objects.for_org(member.organization).get(user=member.user).default_workspace is None
    assert generation(client) == before


def test_another_members_workspace_needs_member_update(member_factory):
    desk = member_factory(role="front_desk", clinical_workspace_available=True)
    colleague = member_factory(role="front_desk", organization=desk.organization)
    manager = member_factory(role="manager", organization=desk.organization)

    refused = set_workspace(desk.session_client(), colleague.user.id, {"workspace": "pms"})
    allowed = set_workspace(manager.session_client(), colleague.user.id, {"workspace": "pms"})

    assert_error(refused, 403, "PERMISSION_DENIED")
    assert allowed.status_code == 200, allowed.content
    assert allowed.json()["userId"] == str(colleague.user.id)
    assert Membership.objects.for_org(desk.organization).get(user=colleague.user).default_workspace == "pms"


def test_a_managers_change_to_someone_else_does_not_move_the_managers_header(member_factory):
    manager = member_factory(role="manager", clinical_workspace_available=True)
    colleague = member_factory(role="front_desk", organization=manager.organization)
    client = manager.session_client()
    before = generation(client)

    response = set_workspace(client, colleague.user.id, {"workspace": "pms"})

    assert response.status_code == 200, response.content
    assert response[GENERATION] == before
    assert generation(client) == before


def test_a_workspace_change_moves_the_access_generation(member_factory):
    member = member_factory(role="owner", clinical_workspace_available=True)
    client = member.session_client()
    colleague = member_factory(role="manager", organization=member.organization)
    colleague_client = colleague.session_client()
    before, colleague_before = generation(client), generation(colleague_client)
    assert before.startswith(f"{member.organization.id}:")

    response = set_workspace(client, member.user.id, {"workspace": "pms", "hideOtherWorkspace": True})

    assert response.status_code == 200, response.content
    after = generation(client)
    assert after != before
    assert response[GENERATION] == after
    assert client.get(ME).json()["organization"]["accessGeneration"] == int(after.split(":")[1])
    assert generation(colleague_client) == colleague_before  # only the member's own view changed
    again = set_workspace(client, member.user.id, {"workspace": "crm"})
    assert again[GENERATION] not in (before, after)


def test_a_workspace_set_by_a_manager_moves_the_members_header(member_factory):
    manager = member_factory(role="manager", clinical_workspace_available=True)
    desk = member_factory(role="front_desk", organization=manager.organization)
    desk_client = desk.session_client()
    before = generation(desk_client)

    assert set_workspace(manager.session_client(), desk.user.id, {"workspace": "pms"}).status_code == 200

    assert generation(desk_client) != before


def test_machine_credentials_get_no_generation_header(owner):
    response = owner.api_client().get(ME)

    assert response.status_code == 200, response.content
    assert GENERATION not in response
    assert response.json()["organization"]["accessGeneration"] == 0


@pytest.mark.parametrize("suffix", ["/workspace", "/role", ""])
def test_another_practices_member_is_404(owner, outsider, suffix):
    client = owner.session_client()
    path = member_path(outsider.user.id, suffix)

    if suffix == "/workspace":
        response = put(client, path, {"workspace": "crm"})
    elif suffix == "/role":
        response = put(client, path, {"role": "analyst"})
    else:
        response = client.delete(path)

    assert_error(response, 404, "NOT_FOUND")
    assert role_of(outsider) == "owner"


def test_a_bad_member_id_is_400(owner):
    body = assert_error(
        set_workspace(owner.session_client(), "not-a-uuid", {"workspace": "crm"}), 400, "VALIDATION_ERROR"
    )

    assert list(body["details"]["fields"]) == ["userId"]


# --- roles ----------------------------------------------------------------------------------------------------------


def test_a_role_change_moves_the_members_generation(owner, member_factory):
    desk = member_factory(role="front_desk", organization=owner.organization)
    desk_client = desk.session_client()
    before = generation(desk_client)

    response = set_role(owner.session_client(), desk.user.id, "analyst")

    assert response.status_code == 200, response.content
    assert response.json()["role"] == "analyst"
    assert response.json()["workspaces"] == ["crm"]
    me = desk_client.get(ME)
    assert me[GENERATION] != before
    assert me.json()["organization"]["memberRole"] == "analyst"


def test_setting_the_same_role_moves_nothing(owner, member_factory):
    desk = member_factory(role="front_desk", organization=owner.organization)
    desk_client = desk.session_client()
    before = generation(desk_client)

    assert set_role(owner.session_client(), desk.user.id, "front_desk").status_code == 200

    assert generation(desk_client) == before


def test_a_role_change_needs_member_update(owner, member_factory):
    desk = member_factory(role="front_desk", organization=owner.organization)
    analyst = member_factory(role="analyst", organization=owner.organization)

    assert_error(set_role(desk.session_client(), analyst.user.id, "manager"), 403, "PERMISSION_DENIED")
    assert_error(set_role(desk.session_client(), desk.user.id, "manager"), 403, "PERMISSION_DENIED")
    assert role_of(analyst) == "analyst" and role_of(desk) == "front_desk"


def test_only_owners_grant_the_owner_role(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    desk = member_factory(role="front_desk", organization=owner.organization)

    assert_error(set_role(manager.session_client(), desk.user.id, "owner"), 403, "PERMISSION_DENIED")
    assert_error(set_role(manager.session_client(), manager.user.id, "owner"), 403, "PERMISSION_DENIED")
    assert role_of(desk) == "front_desk"
    assert set_role(owner.session_client(), desk.user.id, "owner").status_code == 200
    assert role_of(desk) == "owner"


def test_only_owners_take_the_owner_role_away(owner, member_factory):
    second_owner = member_factory(role="owner", organization=owner.organization)
    manager = member_factory(role="manager", organization=owner.organization)

    assert_error(set_role(manager.session_client(), second_owner.user.id, "manager"), 403, "PERMISSION_DENIED")
    assert role_of(second_owner) == "owner"
    assert set_role(owner.session_client(), second_owner.user.id, "manager").status_code == 200
    assert role_of(second_owner) == "manager"


def test_the_last_owner_cannot_be_demoted(owner, member_factory):
    member_factory(role="manager", organization=owner.organization)

    response = set_role(owner.session_client(), owner.user.id, "manager")

    assert_error(response, 409, "LAST_OWNER")
    assert role_of(owner) == "owner"


def test_an_owner_can_step_down_when_another_owner_remains(owner, member_factory):
    other = member_factory(role="owner", organization=owner.organization)

    response = set_role(owner.session_client(), owner.user.id, "manager")

    assert response.status_code == 200, response.content
    assert role_of(owner) == "manager"
    assert_error(set_role(other.session_client(), other.user.id, "analyst"), 409, "LAST_OWNER")


def test_an_unknown_role_is_400(owner, member_factory):
    desk = member_factory(role="front_desk", organization=owner.organization)

    body = assert_error(set_role(owner.session_client(), desk.user.id, "superuser"), 400, "VALIDATION_ERROR")

    assert list(body["details"]["fields"]) == ["role"]


# --- removal and leaving --------------------------------------------------------------------------------------------


def test_a_manager_removes_a_member_who_then_loses_access(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    desk = member_factory(role="front_desk", organization=owner.organization)
    desk_client = desk.session_client()

    response = remove(manager.session_client(), desk.user.id)

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert role_of(desk) is None
    assert desk_client.get(ME).json()["organization"] is None
    assert_error(desk_client.get("/organization/members"), 403, "NO_ORGANIZATION")


def test_removing_someone_else_needs_member_update(owner, member_factory):
    desk = member_factory(role="front_desk", organization=owner.organization)
    analyst = member_factory(role="analyst", organization=owner.organization)

    assert_error(remove(desk.session_client(), analyst.user.id), 403, "PERMISSION_DENIED")
    assert role_of(analyst) == "analyst"


def test_any_member_can_leave(owner, member_factory):
    desk = member_factory(role="front_desk", organization=owner.organization)

    assert remove(desk.session_client(), desk.user.id).status_code == 200
    assert role_of(desk) is None


def test_only_owners_remove_owners(owner, member_factory):
    other = member_factory(role="owner", organization=owner.organization)
    manager = member_factory(role="manager", organization=owner.organization)

    assert_error(remove(manager.session_client(), other.user.id), 403, "PERMISSION_DENIED")
    assert role_of(other) == "owner"
    assert remove(owner.session_client(), other.user.id).status_code == 200
    assert role_of(other) is None


def test_the_last_owner_can_neither_leave_nor_be_removed(owner, member_factory):
    member_factory(role="manager", organization=owner.organization)

    assert_error(remove(owner.session_client(), owner.user.id), 409, "LAST_OWNER")
    assert role_of(owner) == "owner"


def test_an_owner_leaves_when_another_owner_remains(owner, member_factory):
    other = member_factory(role="owner", organization=owner.organization)

    assert remove(owner.session_client(), owner.user.id).status_code == 200
    assert role_of(owner) is None
    assert_error(remove(other.session_client(), other.user.id), 409, "LAST_OWNER")


# --- entitlements from the back office --------------------------------------------------------------------------------


@pytest.fixture
def staff_client(db):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


def form_errors(response) -> list:
    context = response.context
    inlines = context.get("inline_admin_formsets", [])
    return [context["adminform"].form.errors] + [inline.formset.errors for inline in inlines]


def choose_workspaces(*members) -> None:
    """Members who picked a workspace."""
    for member in members:
        client = member.session_client()
        assert set_workspace(client, member.user.id, {"workspace": "crm"}).status_code == 200


def save_in_admin(staff_client: Client, organization: Organization, **changes):
    page = f"/admin/accounts/organization/{organization.id}/change/"
    form = staff_client.get(page)
    assert form.status_code == 200
    data = admin_form_data(form)
    for name, value in changes.items():
        if value is True:
            data[name] = "on"
        elif value is False:
            data.pop(name, None)
        else:
            data[name] = value
    response = staff_client.post(page, data)
    assert response.status_code == 302, form_errors(response)
    return response


def test_an_entitlement_change_in_the_back_office_moves_every_members_header(owner, member_factory, staff_client):
    desk = member_factory(role="front_desk", organization=owner.organization)
    choose_workspaces(owner, desk)
    clients = [owner.session_client(), desk.session_client()]
    before = [generation(c) for c in clients]

    save_in_admin(staff_client, owner.organization, clinical_workspace_available=True)

    after = [generation(c) for c in clients]
    assert all(a != b for a, b in zip(after, before, strict=True))
    organization = Organization.objects.get(pk=owner.organization.pk)
    assert organization.clinical_workspace_available is True
    me = clients[1].get(ME).json()["organization"]
    assert me["workspaces"] == ["crm", "pms"]
    assert me["pmsAccess"]["pmsWorkspaceAvailable"] is True


def test_a_system_of_record_change_in_the_back_office_moves_the_header(owner, staff_client):
    choose_workspaces(owner)
    client = owner.session_client()
    before = generation(client)

    save_in_admin(staff_client, owner.organization, pms_system_of_record="native", pms_native_writes_enabled=True)

    assert generation(client) != before
    me = client.get(ME).json()["organization"]["pmsAccess"]
    assert me["systemOfRecord"] == "native" and me["nativeWritesEnabled"] is True


def test_another_practices_header_does_not_move(owner, outsider, staff_client):
    choose_workspaces(owner)
    client = outsider.session_client()
    before = generation(client)

    save_in_admin(staff_client, owner.organization, clinical_workspace_available=True)

    assert generation(client) == before


def test_the_entitlement_service_moves_the_header_only_on_a_real_change(owner):
    client = owner.session_client()
    before = generation(client)

    team.organization_update_entitlements(organization=owner.organization, clinical_workspace_available=False)
    unchanged = generation(client)
    team.organization_update_entitlements(organization=owner.organization, clinical_workspace_available=True)

    assert unchanged == before
    assert generation(client) != before


def test_the_back_office_saves_a_practice_whose_members_never_chose_a_workspace(owner, staff_client):
    save_in_admin(staff_client, owner.organization, clinical_workspace_available=True)

    assert Organization.objects.get(pk=owner.organization.pk).clinical_workspace_available is True


def test_a_role_change_in_the_back_office_moves_the_members_header(owner, member_factory, staff_client):
    desk = member_factory(role="front_desk", organization=owner.organization)
    choose_workspaces(desk)
    desk_client = desk.session_client()
    before = generation(desk_client)
    page = f"/admin/accounts/membership/{desk.membership.id}/change/"
    data = admin_form_data(staff_client.get(page)) | {"role": "analyst"}

    response = staff_client.post(page, data)

    assert response.status_code == 302
    assert role_of(desk) == "analyst"
    assert generation(desk_client) != before


# --- browser session only ---------------------------------------------------------------------------------------------

SESSION_ONLY_PREFIXES = ("user/", "organization/", "auth/organization/", "settings/team/")


def _routes(patterns, prefix: str = ""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


def session_only_routes() -> list[tuple[str, str]]:
    cases = []
    for route, callback in _routes(get_resolver("config.urls").url_patterns):
        view = getattr(callback, "view_class", None)
        if view is None or not route.startswith(SESSION_ONLY_PREFIXES):
            continue
        path = "/" + re.sub(r"<[^>]+>", "3f1c2f7e-4d52-4a8e-9a0e-6b1f4c2d9e10", route)
        for method in ("get", "post", "put", "patch", "delete"):
            if hasattr(view, method):
                cases.append((method.upper(), path))
    return cases


SESSION_ONLY = session_only_routes()


def test_the_sweep_covers_the_issue_routes():
    paths = {path for _, path in SESSION_ONLY}
    for expected in (
        "/user/two-factor",
        "/user/two-factor/setup",
        "/user/reauthenticate",
        "/user/me",
        "/user/sessions",
        "/organization/mine",
        "/organization/logo",
        "/auth/organization/invite-member",
        "/auth/organization/accept-invitation",
        "/settings/team/members/3f1c2f7e-4d52-4a8e-9a0e-6b1f4c2d9e10/workspace",
    ):
        assert expected in paths
    assert ("DELETE", "/user/two-factor/setup") in SESSION_ONLY


@pytest.mark.parametrize(("method", "path"), SESSION_ONLY, ids=[f"{m} {p}" for m, p in SESSION_ONLY])
def test_api_keys_get_browser_session_required(owner, method, path):
    response = owner.api_client().generic(method, path, b"{}", content_type="application/json")

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert GENERATION not in response
