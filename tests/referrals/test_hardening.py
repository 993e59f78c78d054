"""Token shapes and strict booleans: a public token with NUL or characters outside its alphabet is the same 404 as an
unknown one (never a 500), and consent / rotate / active take JSON true or false only."""

import pytest

from apps.patients.models import MarketingConsent
from apps.referrals.models import Advocate, Referral, ReferralProgramme
from tests.helpers import assert_error
from tests.referrals.conftest import post_json
from tests.referrals.test_public import FRIEND, submit

NOT_TOKENS = (
    "%00",
    "rfs_%00",
    "rft_%00",
    "rfp_%00",
    "rfs_abc%00def",
    "rfs_%ED%A0%80",
    "rfs_abc%20def",
    "rfs_abc.def",
    "rfs_" + "a" * 61,
)


@pytest.mark.parametrize("token", NOT_TOKENS)
def test_tokens_outside_the_alphabet_are_the_same_404(client, advocate, token):
    assert_error(client.get(f"/referral/{token}"), 404, "NOT_FOUND")
    assert_error(client.get(f"/referral/{token}/status"), 404, "NOT_FOUND")
    assert_error(submit(client, token), 404, "NOT_FOUND")
    assert not Referral.objects.unscoped().exists()


def test_a_real_token_with_a_nul_appended_is_404(client, advocate):
    share, status = advocate["shareToken"], advocate["statusToken"]
    assert client.get(f"/referral/{share}").status_code == 200
    assert_error(client.get(f"/referral/{share}%00"), 404, "NOT_FOUND")
    assert_error(client.get(f"/referral/{status}%00/status"), 404, "NOT_FOUND")
    patient_token = submit(client, share).json()["patientToken"]
    assert client.get(f"/referral/{patient_token}/status").status_code == 200
    assert_error(client.get(f"/referral/{patient_token}%00/status"), 404, "NOT_FOUND")


@pytest.mark.parametrize("loose", ["yes", "true", 1, "1", "on", None])
def test_marketing_consent_is_a_json_boolean(client, owner, advocate, loose):
    response = submit(client, advocate["shareToken"], FRIEND | {"marketingConsent": loose})
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert "marketingConsent" in body["details"]["fields"]
    assert not Referral.objects.unscoped().exists()
    assert not MarketingConsent.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize("loose", ["yes", "true", 1])
def test_rotate_is_a_json_boolean(api, programme, advocate, loose):
    before = Advocate.objects.unscoped().get(id=advocate["advocateId"])
    path = f"/patients/{advocate['patientId']}/referral-token"
    response = post_json(api, path, {"programmeId": programme["id"], "rotate": loose})
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert "rotate" in body["details"]["fields"]
    after = Advocate.objects.unscoped().get(id=advocate["advocateId"])
    assert (after.share_token, after.status_token) == (before.share_token, before.status_token)


@pytest.mark.parametrize("loose", ["yes", "false", 0])
def test_programme_active_is_a_json_boolean(api, programme, loose):
    response = api.patch(f"/referral-programmes/{programme['id']}", {"active": loose}, content_type="application/json")
    assert "active" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert ReferralProgramme.objects.unscoped().get(id=programme["id"]).active is True
