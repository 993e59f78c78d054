"""Spec "Limits": an unseen bearer passes the 300-per-minute address-block screen before its lookup; one resolved
at that edge within the hour skips it."""

import pytest

from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint


@pytest.fixture
def small_window(settings):
    settings.SVC_UNSEEN_BEARER_RATE = "3/m"


def test_guessing_bearers_from_one_block_is_cut_off(small_window, db):
    answers = [bearer(f"svc_key_guess{n}").get("/patients", REMOTE_ADDR=f"203.0.113.{n}").status_code for n in range(5)]
    assert answers[:3] == [401, 401, 401]
    refused = bearer("svc_key_guess9").get("/patients", REMOTE_ADDR="203.0.113.200")  # same /24
    assert_error(refused, 429, "RATE_LIMITED")
    assert int(refused["Retry-After"]) >= 1
    # Another block is not affected.
    assert bearer("svc_key_other").get("/patients", REMOTE_ADDR="198.51.100.7").status_code == 401


def test_a_bearer_resolved_within_the_hour_skips_the_screen(small_window, owner):
    raw, _ = mint(owner)
    api_key = bearer(owner.api_key)
    assert api_key.get("/patients", REMOTE_ADDR="203.0.113.1").status_code == 200  # seen from now on
    assert bearer(raw).get("/patients", REMOTE_ADDR="203.0.113.1").status_code == 200
    for n in range(3):
        bearer(f"svc_oat_guess{n}").get("/patients", REMOTE_ADDR="203.0.113.9")
    assert bearer("svc_oat_guess9").get("/patients", REMOTE_ADDR="203.0.113.9").status_code == 429
    # The known credentials still pass from the exhausted block.
    assert api_key.get("/patients", REMOTE_ADDR="203.0.113.50").status_code == 200
    assert bearer(raw).get("/patients", REMOTE_ADDR="203.0.113.50").status_code == 200


def test_requests_without_a_client_address_pass(small_window, db):
    for n in range(5):
        assert bearer(f"svc_key_guess{n}").get("/patients", REMOTE_ADDR="").status_code == 401
