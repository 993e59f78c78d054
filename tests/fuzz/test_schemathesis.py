"""Fuzz gate: schemathesis generates requests for every documented operation, in-process, authenticated as a
practice owner with an API key. Any 5xx, or any response that does not match the documented schema, fails."""

import pytest
import schemathesis
from django.core.signals import request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import checks

from config.wsgi import application
from tests.conftest import make_member

pytestmark = pytest.mark.fuzz

schema = schemathesis.openapi.from_wsgi("/openapi.json", application)


@pytest.fixture
def fuzz_owner(db, settings):
    settings.SVC_API_KEY_BUCKET = (100_000, 1000.0)
    # Like Django's test client: the test's transaction must survive each in-process request.
    request_started.disconnect(close_old_connections)
    yield make_member(role="owner")
    request_started.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_operations_match_their_schema(case, fuzz_owner):
    # positive_data_acceptance is left out: business rules beyond the schema (a password that is too common, an
    # e-mail already taken) rightly refuse some schema-valid bodies. Every other built-in check runs.
    case.call_and_validate(
        headers={"Authorization": f"Bearer {fuzz_owner.api_key}"},
        excluded_checks=[checks.positive_data_acceptance],
    )
