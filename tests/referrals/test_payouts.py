"""Paying rewards out: the practice's payout list (GET /referral-rewards) and marking a reward given
(POST /referral-rewards/{id}/mark-paid), once only, shown on the advocate's status page."""

import pytest

from apps.referrals.models import Reward
from tests.helpers import assert_error
from tests.referrals.conftest import post_json
from tests.referrals.test_programmes import ROLES
from tests.referrals.test_rewards import FRIEND, _move, _setup


@pytest.fixture
def earned(api, client, owner, committed):
    programme, advocate, referral, journey = _setup(api, client, owner, committed)
    _move(api, committed, journey, "Consultation booked")
    return programme, advocate, referral, Reward.objects.for_org(owner.organization).get()


def test_unpaid_rewards_are_listed_then_marked_paid_once(api, client, owner, earned):
    programme, advocate, referral, reward = earned
    unpaid = api.get("/referral-rewards?paid=false").json()
    assert unpaid["total"] == 1
    row = unpaid["items"][0]
    assert row["id"] == str(reward.id) and row["paidAt"] is None and row["amount"] == "50.00"
    assert row["programmeId"] == programme["id"] and row["advocatePatientId"] == advocate["patientId"]
    assert row["referralId"] == str(referral.id) and row["referredPatientId"] == str(referral.referred_patient_id)
    assert api.get("/referral-rewards?paid=true").json()["total"] == 0

    paid = post_json(api, f"/referral-rewards/{reward.id}/mark-paid", {"note": "Voucher 1234"})
    assert paid.status_code == 200, paid.content
    body = paid.json()
    assert body["paidAt"] and body["payoutNote"] == "Voucher 1234" and body["paidByUserId"] == str(owner.user.id)
    assert api.get("/referral-rewards?paid=false").json()["total"] == 0
    assert api.get("/referral-rewards?paid=true").json()["items"][0]["id"] == str(reward.id)
    assert api.get(f"/referral-rewards?programmeId={programme['id']}").json()["total"] == 1

    again = post_json(api, f"/referral-rewards/{reward.id}/mark-paid", {"note": "twice"})
    assert_error(again, 409, "REFERRAL_REWARD_ALREADY_PAID")
    assert again.json()["details"]["paidAt"] == body["paidAt"]
    reward.refresh_from_db()
    assert reward.payout_note == "Voucher 1234"

    status = client.get(f"/referral/{advocate['statusToken']}/status").json()
    assert status["rewards"][0]["paidAt"] == body["paidAt"]
    embed = api.get(f"/patients/{advocate['patientId']}?embed=referral").json()
    assert embed["referral"]["rewards"][0]["paidAt"] == body["paidAt"]


def test_bad_input_is_400_and_changes_nothing(api, earned):
    reward = earned[3]
    assert_error(api.get("/referral-rewards?paid=maybe"), 400, "VALIDATION_ERROR")
    assert_error(api.get("/referral-rewards?programmeId=nope"), 400, "VALIDATION_ERROR")
    assert_error(
        post_json(api, f"/referral-rewards/{reward.id}/mark-paid", {"note": "x" * 501}), 400, "VALIDATION_ERROR"
    )
    assert_error(post_json(api, f"/referral-rewards/{reward.id}/mark-paid", {"extra": 1}), 400, "VALIDATION_ERROR")
    assert_error(
        post_json(api, f"/referral-rewards/{reward.id}/mark-paid", {"note": "a\x00b"}), 400, "VALIDATION_ERROR"
    )
    reward.refresh_from_db()
    assert reward.paid_at is None


def test_another_practice_sees_nothing(api, outsider, earned):
    programme, _, _, reward = earned
    other = outsider.api_client()
    assert other.get("/referral-rewards").json()["total"] == 0
    assert_error(other.get(f"/referral-rewards?programmeId={programme['id']}"), 400, "VALIDATION_ERROR")
    assert_error(post_json(other, f"/referral-rewards/{reward.id}/mark-paid"), 404, "NOT_FOUND")
    reward.refresh_from_db()
    assert reward.paid_at is None


@pytest.mark.parametrize("role", ROLES)
def test_roles(role, owner, member_factory, earned):
    reward = earned[3]
    client = member_factory(role=role, organization=owner.organization).api_client()
    readers = {"owner", "manager", "front_desk", "telesales", "analyst"}
    assert client.get("/referral-rewards").status_code == (200 if role in readers else 403)
    paid = post_json(client, f"/referral-rewards/{reward.id}/mark-paid")
    assert paid.status_code == (200 if role in {"owner", "manager"} else 403)
    reward.refresh_from_db()
    assert (reward.paid_at is not None) == (role in {"owner", "manager"})


def test_a_friend_without_a_reward_is_not_listed(api, client, owner, committed):
    _setup(api, client, owner, committed)  # submitted, stage not reached
    assert api.get("/referral-rewards").json() == {"items": [], "total": 0, "limit": 25, "offset": 0}
    assert FRIEND["firstName"]
