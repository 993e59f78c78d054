"""Shared fixtures: practices, members of each role, an outsider practice, and a client per credential kind."""

import importlib
from dataclasses import dataclass

import pytest
from django.test import Client
from django_redis import get_redis_connection

from apps.accounts import services
from apps.accounts.models import Membership, Organization, User
from tests.factories import DEFAULT_PASSWORD, MembershipFactory, OrganizationFactory, UserFactory


@pytest.fixture(autouse=True)
def _clean_redis():
    """Each xdist worker has its own Redis database (config.settings.test); empty it around every test."""
    redis = get_redis_connection("default")
    redis.flushdb()
    yield
    redis.flushdb()


@dataclass
class Member:
    user: User
    organization: Organization
    membership: Membership
    api_key: str

    def api_client(self, organization_id=None) -> Client:
        """A client authenticating with this member's API key."""
        headers = {"Authorization": f"Bearer {self.api_key}"}
        if organization_id:
            headers["X-Organization-ID"] = str(organization_id)
        return Client(headers=headers)

    def session_client(self, *, enforce_csrf: bool = True) -> Client:
        """A browser client signed in through the real sign-in route, CSRF checks on."""
        client = Client(enforce_csrf_checks=enforce_csrf)
        response = client.post(
            "/auth/sign-in/email",
            {"email": self.user.email, "password": DEFAULT_PASSWORD},
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
        client.defaults["HTTP_X_CSRFTOKEN"] = client.cookies["csrftoken"].value
        return client


def make_member(*, role: str = "owner", organization: Organization | None = None, **org_fields) -> Member:
    organization = organization or OrganizationFactory(**org_fields)
    user = UserFactory()
    membership = MembershipFactory(organization=organization, user=user, role=role)
    key = services.api_key_create(user=user, name="tests").secret
    return Member(user=user, organization=organization, membership=membership, api_key=key)


@pytest.fixture
def member_factory(db):
    return make_member


@pytest.fixture
def owner(db) -> Member:
    return make_member(role="owner")


@pytest.fixture
def outsider(db) -> Member:
    """The owner of another practice: everything of `owner`'s practice must be invisible to them."""
    return make_member(role="owner")


@pytest.fixture
def api(owner) -> Client:
    return owner.api_client()


@pytest.fixture
def password() -> str:
    return DEFAULT_PASSWORD


@pytest.fixture
def agreements_seeded(db):
    """The agreement versions data migration 0002 publishes. A transactional test elsewhere in the run truncates
    every table (migration data included), so tests that need them put them back the way the migration does."""
    from django.apps import apps as installed_apps

    importlib.import_module("apps.agreements.migrations.0002_seed_current_versions").seed(installed_apps, None)
