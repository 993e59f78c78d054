"""Which practice a request acts in (spec "Organization selection"): automatic with one membership, X-Organization-ID
with several, the session's active practice for a browser, and memberships and roles re-read on every request.

No organization-scoped route open to API keys ships yet (/organization/* is browser-session only), so this module
mounts a probe route built on the real BaseApiView next to the real URLs.
"""

import uuid

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import include, path
from rest_framework.response import Response

from apps.accounts.models import Membership
from apps.core.views import BaseApiView
from tests.factories import MembershipFactory, OrganizationFactory, UserFactory
from tests.helpers import assert_error

ME = "/auth/me"
MEMBERS = "/organization/members"
PROBE = "/test-probe/practice"


class PracticeProbeView(BaseApiView):
    """An organization-scoped route any credential may call: reports the practice and role it acted with."""

    permission = {"GET": "member:read", "POST": "settings:update"}
    scope_area = "settings"

    def get(self, request):
        return Response({"organization_id": self.organization.id, "role": self.membership.role})

    def post(self, request):
        return Response({"organization_id": self.organization.id, "role": self.membership.role})


urlpatterns = [
    path("test-probe/practice", PracticeProbeView.as_view()),
    path("", include("config.urls")),
]
handler400 = "apps.core.errors.handler400"
handler403 = "apps.core.errors.handler403"
handler404 = "apps.core.errors.handler404"
handler500 = "apps.core.errors.handler500"

pytestmark = pytest.mark.urls(__name__)


def memberships_snapshot() -> list[tuple]:
    return list(Membership.objects.unscoped().order_by("id").values_list("id", "organization_id", "user_id", "role"))


def member_ids(response) -> set[str]:
    assert response.status_code == 200, response.content
    return {item["userId"] for item in response.json()["items"]}


@pytest.fixture
def two_practices(member_factory):
    """A person who is owner of one practice and manager of a second (joined later)."""
    member = member_factory(role="owner")
    second = OrganizationFactory()
    MembershipFactory(organization=second, user=member.user, role="manager")
    return member, second


# --- one membership -----------------------------------------------------------------------------------------


def test_one_membership_is_chosen_automatically_for_an_api_key(owner):
    client = owner.api_client()

    me = client.get(ME)
    probe = client.get(PROBE)

    assert me.status_code == 200, me.content
    assert me.json()["organization"]["id"] == str(owner.organization.id)
    assert me.json()["session"] == {"activeOrganizationId": str(owner.organization.id)}
    assert probe.status_code == 200, probe.content
    assert probe.json() == {"organizationId": str(owner.organization.id), "role": "owner"}


def test_one_membership_is_chosen_automatically_for_a_session(owner):
    client = owner.session_client()

    me = client.get(ME)
    probe = client.get(PROBE)

    assert me.json()["organization"]["id"] == str(owner.organization.id)
    assert me.json()["session"] == {"activeOrganizationId": str(owner.organization.id)}
    assert probe.json() == {"organizationId": str(owner.organization.id), "role": "owner"}


def test_the_header_may_name_the_only_practice(owner):
    probe = owner.api_client(organization_id=owner.organization.id).get(PROBE)

    assert probe.status_code == 200, probe.content
    assert probe.json()["organizationId"] == str(owner.organization.id)


# --- several memberships with an API key --------------------------------------------------------------------


def test_api_key_in_two_practices_without_header_is_ambiguous_on_a_practice_route(two_practices):
    member, _ = two_practices
    before = memberships_snapshot()

    response = member.api_client().get(PROBE)

    assert_error(response, 403, "ORGANIZATION_AMBIGUOUS")
    assert memberships_snapshot() == before


def test_api_key_in_two_practices_without_header_is_refused_writes_too(two_practices):
    member, _ = two_practices

    response = member.api_client().post(PROBE, {}, content_type="application/json")

    assert_error(response, 403, "ORGANIZATION_AMBIGUOUS")


def test_auth_me_still_answers_an_ambiguous_api_key(two_practices):
    """/auth/me is the bootstrap identity route, not organization-scoped: it names no practice rather than 403."""
    member, _ = two_practices

    response = member.api_client().get(ME)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user"]["id"] == str(member.user.id)
    assert body["session"] == {"activeOrganizationId": None}
    assert body["organization"] is None
    assert "X-Service-Access-Generation" not in response


def test_api_key_with_header_acts_in_that_practice(two_practices):
    member, second = two_practices

    first_probe = member.api_client(organization_id=member.organization.id).get(PROBE)
    second_probe = member.api_client(organization_id=second.id).get(PROBE)
    second_me = member.api_client(organization_id=second.id).get(ME)

    assert first_probe.json() == {"organizationId": str(member.organization.id), "role": "owner"}
    assert second_probe.json() == {"organizationId": str(second.id), "role": "manager"}
    assert second_me.status_code == 200, second_me.content
    assert second_me.json()["organization"]["id"] == str(second.id)
    assert second_me.json()["organization"]["memberRole"] == "manager"
    assert second_me.json()["session"] == {"activeOrganizationId": str(second.id)}


def test_header_uuid_is_read_case_insensitively(two_practices):
    member, second = two_practices

    probe = member.api_client(organization_id=str(second.id).upper()).get(PROBE)

    assert probe.status_code == 200, probe.content
    assert probe.json()["organizationId"] == str(second.id)


@pytest.mark.parametrize("path", [PROBE, ME])
def test_header_naming_a_practice_of_someone_else_is_403(two_practices, outsider, path):
    member, _ = two_practices
    before = memberships_snapshot()

    response = member.api_client(organization_id=outsider.organization.id).get(path)

    assert_error(response, 403, "ORGANIZATION_FORBIDDEN")
    assert memberships_snapshot() == before


@pytest.mark.parametrize("path", [PROBE, ME])
def test_header_naming_an_unknown_practice_is_403(owner, path):
    response = owner.api_client(organization_id=uuid.uuid4()).get(path)

    assert_error(response, 403, "ORGANIZATION_FORBIDDEN")


@pytest.mark.parametrize(
    "value", ["", "not-a-uuid", "12", "00000000-0000-0000-0000-00000000000g", "{" + "0" * 32 + "}"]
)
@pytest.mark.parametrize("path", [PROBE, ME])
def test_header_that_is_not_a_uuid_is_400(owner, path, value):
    response = Client(headers={"Authorization": f"Bearer {owner.api_key}", "X-Organization-ID": value}).get(path)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["X-Organization-ID"]


# --- several memberships with a browser session -------------------------------------------------------------


def test_session_acts_in_its_active_practice_and_the_header_overrides_it(two_practices, member_factory):
    member, second = two_practices
    first_colleague = member_factory(role="front_desk", organization=member.organization)
    second_colleague = member_factory(role="analyst", organization=second)
    client = member.session_client()

    default = client.get(MEMBERS)
    override = client.get(MEMBERS, headers={"X-Organization-ID": str(second.id)})
    after = client.get(MEMBERS)

    assert member_ids(default) == {str(member.user.id), str(first_colleague.user.id)}
    assert member_ids(override) == {str(member.user.id), str(second_colleague.user.id)}
    # The header acts for one request; it does not switch the session's active practice.
    assert member_ids(after) == member_ids(default)
    assert client.get(ME).json()["session"] == {"activeOrganizationId": str(member.organization.id)}


def test_session_header_naming_a_foreign_practice_is_403(two_practices, outsider):
    member, _ = two_practices
    client = member.session_client()

    response = client.get(MEMBERS, headers={"X-Organization-ID": str(outsider.organization.id)})

    assert_error(response, 403, "ORGANIZATION_FORBIDDEN")
    assert member_ids(client.get(MEMBERS)) == {str(member.user.id)}


def test_session_header_that_is_not_a_uuid_is_400(owner):
    response = owner.session_client().get(MEMBERS, headers={"X-Organization-ID": "practice-1"})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["X-Organization-ID"]


def test_session_without_an_active_practice_in_two_practices_is_ambiguous(db, password):
    """Signed in before belonging anywhere, then added to two practices: nothing picks one for it."""
    user = UserFactory()
    client = Client()
    signed_in = client.post("/auth/sign-in/email", {"email": user.email, "password": password}, "application/json")
    assert signed_in.json()["activeOrganizationId"] is None
    first, second = OrganizationFactory(), OrganizationFactory()
    MembershipFactory(organization=first, user=user, role="owner")
    MembershipFactory(organization=second, user=user, role="owner")

    assert_error(client.get(MEMBERS), 403, "ORGANIZATION_AMBIGUOUS")
    assert_error(client.get(PROBE), 403, "ORGANIZATION_AMBIGUOUS")
    assert member_ids(client.get(MEMBERS, headers={"X-Organization-ID": str(second.id)})) == {str(user.id)}
    me = client.get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["organization"] is None


def test_session_in_two_practices_gets_the_first_membership_as_active(two_practices):
    member, _ = two_practices

    probe = member.session_client().get(PROBE)

    assert probe.json() == {"organizationId": str(member.organization.id), "role": "owner"}


# --- no membership ------------------------------------------------------------------------------------------


def test_no_membership_reads_auth_me_without_a_practice(db, member_factory):
    member = member_factory(role="owner")
    member.membership.delete()

    for client in (member.api_client(), member.session_client()):
        response = client.get(ME)
        assert response.status_code == 200, response.content
        assert response.json()["organization"] is None
        assert response.json()["session"] == {"activeOrganizationId": None}
        assert "X-Service-Access-Generation" not in response


def test_no_membership_is_403_on_practice_routes(db, member_factory):
    member = member_factory(role="owner")
    member.membership.delete()

    assert_error(member.session_client().get(MEMBERS), 403, "NO_ORGANIZATION")
    assert_error(member.session_client().get("/organization/active"), 403, "NO_ORGANIZATION")
    assert_error(member.api_client().get(PROBE), 403, "NO_ORGANIZATION")


# --- changes take effect on the next request ----------------------------------------------------------------


def test_removing_the_membership_takes_effect_on_the_next_request(owner):
    session = owner.session_client()
    key = owner.api_client()
    assert session.get(MEMBERS).status_code == 200
    assert key.get(PROBE).status_code == 200

    Membership.objects.unscoped().filter(id=owner.membership.id).delete()

    assert_error(session.get(MEMBERS), 403, "NO_ORGANIZATION")
    assert_error(key.get(PROBE), 403, "NO_ORGANIZATION")
    assert session.get(ME).json()["organization"] is None
    # The header cannot bring the old practice back either.
    assert_error(
        key.get(PROBE, headers={"X-Organization-ID": str(owner.organization.id)}), 403, "ORGANIZATION_FORBIDDEN"
    )


def test_removing_the_active_membership_falls_back_to_the_remaining_one(two_practices):
    member, second = two_practices
    session = member.session_client()
    assert session.get(PROBE).json()["organizationId"] == str(member.organization.id)

    Membership.objects.unscoped().filter(id=member.membership.id).delete()

    assert session.get(PROBE).json() == {"organizationId": str(second.id), "role": "manager"}
    assert member.api_client().get(PROBE).json()["organizationId"] == str(second.id)


def test_removing_a_session_membership_does_not_end_the_session(owner):
    session = owner.session_client()
    sessions_before = Session.objects.count()

    owner.membership.delete()

    assert session.get(ME).status_code == 200
    assert Session.objects.count() == sessions_before


def test_demoting_a_member_takes_effect_at_once(owner):
    session = owner.session_client()
    key = owner.api_client()
    assert key.post(PROBE, {}, content_type="application/json").status_code == 200
    assert session.post(PROBE, {}, content_type="application/json").status_code == 200

    Membership.objects.unscoped().filter(id=owner.membership.id).update(role="front_desk")

    body = assert_error(key.post(PROBE, {}, content_type="application/json"), 403, "PERMISSION_DENIED")
    assert body["details"] == {"permission": "settings:update"}
    assert_error(session.post(PROBE, {}, content_type="application/json"), 403, "PERMISSION_DENIED")
    assert key.get(PROBE).json() == {"organizationId": str(owner.organization.id), "role": "front_desk"}
    assert session.get(ME).json()["organization"]["memberRole"] == "front_desk"
    assert key.get(ME).json()["organization"]["memberRole"] == "front_desk"


def test_promoting_a_member_takes_effect_at_once(member_factory):
    member = member_factory(role="analyst")
    key = member.api_client()
    assert_error(key.post(PROBE, {}, content_type="application/json"), 403, "PERMISSION_DENIED")

    Membership.objects.unscoped().filter(id=member.membership.id).update(role="manager")

    assert key.post(PROBE, {}, content_type="application/json").status_code == 200
