"""Fuzz gate: schemathesis generates requests for every documented operation, in-process, authenticated as a
practice owner with an API key. Any 5xx, any status the operation does not document, or any response that does
not match the documented schema fails.

The run is deterministic: a fixed schemathesis seed (each operation's Hypothesis seed derives from it and the
operation's label), no example database, and a bounded number of examples per operation, so CI sees the same
requests on every run and the gate stays within a couple of minutes on two cores."""

import pytest
import schemathesis
from django.core.signals import request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import checks

from config.wsgi import application
from tests.conftest import make_member

pytestmark = pytest.mark.fuzz

SEED = 26
MAX_EXAMPLES = 25

schema = schemathesis.openapi.from_wsgi("/openapi.json", application)
schema.config.seed = SEED

# The conformance checks this gate exists for; every other built-in check runs too, except
# positive_data_acceptance: business rules beyond the schema (a password that is too common, an e-mail already
# taken) rightly refuse some schema-valid bodies.
REQUIRED_CHECKS = (checks.not_a_server_error, checks.status_code_conformance, checks.response_schema_conformance)
EXCLUDED_CHECKS = [checks.positive_data_acceptance]


@pytest.fixture
def fuzz_owner(db, settings):
    settings.SVC_API_KEY_BUCKET = (100_000, 1000.0)
    # Like Django's test client: the test's transaction must survive each in-process request.
    request_started.disconnect(close_old_connections)
    yield make_member(role="owner")
    request_started.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_operations_match_their_schema(case, fuzz_owner):
    case.call_and_validate(
        headers={"Authorization": f"Bearer {fuzz_owner.api_key}"},
        additional_checks=list(REQUIRED_CHECKS),
        excluded_checks=EXCLUDED_CHECKS,
    )
