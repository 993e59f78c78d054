"""Fixtures of the notifications tests: a conversation that came in by SMS (through the real callback route), and
`committed(fn, ...)` running what a commit publishes (the listeners; Celery is eager in tests)."""

import pytest

from tests.conversations.conftest import PRACTICE_NUMBER, connection, inbound  # noqa: F401
from tests.conversations.test_inbound_sms import sms
from tests.factories import PatientFactory

__all__ = ["PRACTICE_NUMBER"]


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """committed(fn, *args, **kwargs): call fn, then run the on-commit callbacks its transactions registered."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


@pytest.fixture
def conversation(owner, inbound) -> dict:  # noqa: F811 (the imported fixture)
    """A conversation of the owner's practice: a patient texted the practice's SMS number. Its JSON."""
    PatientFactory(organization=owner.organization, phone_mobile="+393331234567", first_name="Ada")
    response = inbound(sms(1))
    assert response.status_code == 200, response.content
    (item,) = owner.api_client().get("/conversations").json()["items"]
    return item
