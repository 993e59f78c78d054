"""Management commands create_practice and add_member: what they write, what they print, what they refuse."""

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from apps.accounts.models import ApiKey, Membership, Organization, User
from tests.factories import DEFAULT_PASSWORD, UserFactory


def run(command: str, *args: str) -> dict:
    out = StringIO()
    call_command(command, *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def snapshot() -> tuple:
    return (
        sorted(User.objects.values_list("id", flat=True)),
        sorted(Organization.objects.values_list("id", flat=True)),
        sorted(Membership.objects.unscoped().values_list("id", "role")),
        sorted(ApiKey.objects.values_list("id", flat=True)),
    )


def practice_args(**overrides) -> list[str]:
    values = {
        "--name": "Studio Rossi",
        "--owner-email": "Owner@Rossi.example",
        "--owner-password": DEFAULT_PASSWORD,
        "--country": "IT",
    } | overrides
    return [part for pair in values.items() for part in pair]


# --- create_practice ----------------------------------------------------------------------------------------


def test_create_practice_with_key_prints_json_and_the_key_works(db):
    result = run("create_practice", *practice_args(), "--owner-name", "Maria Rossi", "--clinical", "--api-key")

    assert set(result) == {"organizationId", "userId", "apiKey"}
    organization = Organization.objects.get(id=result["organizationId"])
    user = User.objects.get(id=result["userId"])
    assert organization.name == "Studio Rossi"
    assert organization.country == "IT"
    assert organization.clinical_workspace_available is True
    assert organization.kind == "practice"
    assert user.email == "owner@rossi.example"
    assert user.name == "Maria Rossi"
    assert user.check_password(DEFAULT_PASSWORD)
    membership = Membership.objects.for_org(organization).get()
    assert (membership.user_id, membership.role) == (user.id, "owner")
    key = result["apiKey"]
    assert key.startswith("svc_key_")
    assert ApiKey.objects.get(user=user).key_hash == hashlib.sha256(key.encode()).hexdigest()

    response = Client(headers={"Authorization": f"Bearer {key}"}).get("/auth/me")

    assert response.status_code == 200, response.content
    me = response.json()
    assert me["user"]["id"] == str(user.id)
    assert me["organization"]["id"] == str(organization.id)
    assert me["organization"]["memberRole"] == "owner"
    assert me["organization"]["workspaces"] == ["crm", "pms"]
    assert me["organization"]["pmsAccess"]["pmsWorkspaceAvailable"] is True


def test_create_practice_owner_can_sign_in(db):
    result = run("create_practice", *practice_args())

    response = Client().post(
        "/auth/sign-in/email",
        {"email": "owner@rossi.example", "password": DEFAULT_PASSWORD},
        content_type="application/json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["activeOrganizationId"] == result["organizationId"]


def test_create_practice_without_api_key_prints_null(db):
    result = run("create_practice", *practice_args())

    assert result["apiKey"] is None
    assert not ApiKey.objects.exists()
    organization = Organization.objects.get(id=result["organizationId"])
    assert organization.clinical_workspace_available is False


def test_create_practice_uppercases_the_country(db):
    result = run("create_practice", *practice_args(**{"--country": "fr"}))

    assert Organization.objects.get(id=result["organizationId"]).country == "FR"


def test_create_practice_makes_an_existing_user_the_owner(owner):
    existing = UserFactory(email="dr.bianchi@example.com")
    users_before = User.objects.count()

    result = run(
        "create_practice",
        *practice_args(**{"--owner-email": "DR.Bianchi@example.com", "--owner-password": "ignored-password-123"}),
    )

    assert result["userId"] == str(existing.id)
    assert User.objects.count() == users_before
    existing.refresh_from_db()
    assert existing.check_password(DEFAULT_PASSWORD)  # an existing account's password is not touched
    assert Membership.objects.for_org(result["organizationId"]).get().user_id == existing.id


def test_create_practice_for_an_existing_member_adds_a_second_practice(owner):
    result = run("create_practice", *practice_args(**{"--owner-email": owner.user.email}))

    assert result["userId"] == str(owner.user.id)
    assert Membership.objects.unscoped().filter(user=owner.user).count() == 2


@pytest.mark.parametrize("country", ["ITA", "I", "1T", "I-"])
def test_create_practice_with_an_invalid_country_is_refused(db, country):
    before = snapshot()

    with pytest.raises(CommandError, match="country"):
        run("create_practice", *practice_args(**{"--country": country}))

    assert snapshot() == before


def test_create_practice_with_a_weak_password_is_refused(db):
    before = snapshot()

    with pytest.raises(CommandError, match="password"):
        run("create_practice", *practice_args(**{"--owner-password": "short"}))

    assert snapshot() == before


def test_create_practice_with_a_blank_name_is_refused(db):
    before = snapshot()

    with pytest.raises(CommandError, match="name"):
        run("create_practice", *practice_args(**{"--name": "   "}), "--api-key")

    assert snapshot() == before


@pytest.mark.parametrize("email", ["not-an-email", "owner@", ""])
def test_create_practice_with_an_invalid_email_is_refused(db, email):
    before = snapshot()

    with pytest.raises(CommandError):
        run("create_practice", *practice_args(**{"--owner-email": email}))

    assert snapshot() == before


def test_create_practice_without_required_arguments_is_refused(db):
    with pytest.raises(CommandError):
        call_command("create_practice", "--name", "No owner", stdout=StringIO())

    assert not Organization.objects.exists()


def test_create_practice_plain_output(db):
    out = StringIO()

    call_command("create_practice", *practice_args(), stdout=out)

    lines = out.getvalue().splitlines()
    organization = Organization.objects.get()
    assert lines[0] == f"organizationId: {organization.id}"
    assert lines[2] == "apiKey: -"


# --- add_member ---------------------------------------------------------------------------------------------


def test_add_member_gives_an_existing_user_a_membership(owner, outsider):
    result = run(
        "add_member", "--organization", str(owner.organization.id), "--email", outsider.user.email.upper(),
        "--role", "dentist",
    )  # fmt: skip

    assert result == {"organizationId": str(owner.organization.id), "userId": str(outsider.user.id), "apiKey": None}
    membership = Membership.objects.for_org(owner.organization).get(user=outsider.user)
    assert membership.role == "dentist"
    # The outsider keeps their own practice.
    assert Membership.objects.for_org(outsider.organization).filter(user=outsider.user).exists()


def test_add_member_creates_a_new_user_with_a_working_key(owner):
    result = run(
        "add_member", "--organization", str(owner.organization.id), "--email", "New.Hire@example.com",
        "--role", "front_desk", "--password", DEFAULT_PASSWORD, "--name", "New Hire", "--api-key",
    )  # fmt: skip

    user = User.objects.get(id=result["userId"])
    assert user.email == "new.hire@example.com"
    assert user.name == "New Hire"
    assert user.check_password(DEFAULT_PASSWORD)
    assert Membership.objects.for_org(owner.organization).get(user=user).role == "front_desk"

    response = Client(headers={"Authorization": f"Bearer {result['apiKey']}"}).get("/auth/me")

    assert response.status_code == 200, response.content
    assert response.json()["organization"]["id"] == str(owner.organization.id)
    assert response.json()["organization"]["memberRole"] == "front_desk"


def test_add_member_without_password_creates_an_account_that_cannot_sign_in(owner):
    result = run(
        "add_member", "--organization", str(owner.organization.id), "--email", "later@example.com", "--role", "nurse"
    )

    user = User.objects.get(id=result["userId"])
    assert not user.has_usable_password()


def test_add_member_twice_is_refused(owner):
    before = snapshot()

    with pytest.raises(CommandError, match="already a member"):
        run("add_member", "--organization", str(owner.organization.id), "--email", owner.user.email, "--role", "nurse")

    assert snapshot() == before
    assert Membership.objects.for_org(owner.organization).get(user=owner.user).role == "owner"


def test_add_member_twice_with_api_key_creates_no_key(owner):
    before = snapshot()

    with pytest.raises(CommandError):
        run(
            "add_member", "--organization", str(owner.organization.id), "--email", owner.user.email,
            "--role", "owner", "--api-key",
        )  # fmt: skip

    assert snapshot() == before


@pytest.mark.parametrize("organization", ["6f1c2e4a-8d3b-4b7e-9a10-2c5d7e9f0a1b", "not-a-uuid", ""])
def test_add_member_to_an_unknown_practice_is_refused(db, organization):
    before = snapshot()

    with pytest.raises(CommandError, match="no practice"):
        run("add_member", "--organization", organization, "--email", "someone@example.com", "--role", "owner")

    assert snapshot() == before


@pytest.mark.parametrize("role", ["admin", "Owner", "front-desk", ""])
def test_add_member_with_an_invalid_role_is_refused_by_the_parser(owner, role):
    before = snapshot()

    with pytest.raises((CommandError, SystemExit)):
        run("add_member", "--organization", str(owner.organization.id), "--email", "x@example.com", "--role", role)

    assert snapshot() == before


def test_add_member_new_user_with_weak_password_is_refused(owner):
    before = snapshot()

    with pytest.raises(CommandError, match="password"):
        run(
            "add_member", "--organization", str(owner.organization.id), "--email", "weak@example.com",
            "--role", "analyst", "--password", "123",
        )  # fmt: skip

    assert snapshot() == before


@pytest.mark.parametrize("email", ["not-an-email", "weak@", ""])
def test_add_member_with_an_invalid_email_is_refused(owner, email):
    before = snapshot()

    with pytest.raises(CommandError):
        run("add_member", "--organization", str(owner.organization.id), "--email", email, "--role", "analyst")

    assert snapshot() == before
