import pytest


@pytest.fixture(autouse=True)
def _agreements(agreements_seeded):
    """The bootstrap counts the pending agreements: the seeded versions must be there."""
