import pytest

from tests.teamchat.helpers import person


@pytest.fixture
def alice(owner):
    """The practice's owner (teamchat:manage)."""
    return person(owner)


@pytest.fixture
def bob(owner, member_factory):
    """A front-desk colleague of alice (teamchat:use only)."""
    return person(member_factory(role="front_desk", organization=owner.organization))


@pytest.fixture
def carol(owner, member_factory):
    """A dentist colleague of alice (teamchat:use only)."""
    return person(member_factory(role="dentist", organization=owner.organization))


@pytest.fixture
def mallory(outsider):
    """The owner of another practice."""
    return person(outsider)
