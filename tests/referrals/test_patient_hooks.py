"""Erasure and merge reach referrals (apps.patients hooks): an erased advocate's tokens stop and their enrolment
goes; an erased friend's referral goes; a merge moves enrolments and referrals to the survivor."""

from apps.referrals.models import Advocate, Referral
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.referrals.conftest import make_advocate, post_json

FRIEND = {"firstName": "Bob", "lastName": "Friend", "email": "bob@example.com"}


def test_erasing_the_advocate_stops_their_tokens(api, client, owner, programme, advocate):
    submit = post_json(client, f"/referral/{advocate['shareToken']}/submit", FRIEND)
    assert submit.status_code == 201
    assert api.delete(f"/patients/{advocate['patientId']}").status_code == 200
    assert_error(client.get(f"/referral/{advocate['shareToken']}"), 404, "NOT_FOUND")
    assert_error(client.get(f"/referral/{advocate['statusToken']}/status"), 404, "NOT_FOUND")
    assert_error(client.get(f"/referral/{submit.json()['patientToken']}/status"), 404, "NOT_FOUND")
    assert not Advocate.objects.for_org(owner.organization).exists()


def test_erasing_the_friend_removes_their_referral(api, client, owner, advocate):
    post_json(client, f"/referral/{advocate['shareToken']}/submit", FRIEND)
    referral = Referral.objects.for_org(owner.organization).get()
    assert api.delete(f"/patients/{referral.referred_patient_id}").status_code == 200
    assert client.get(f"/referral/{advocate['statusToken']}/status").json()["referrals"] == []


def test_merge_moves_enrolments_and_referrals(api, client, owner, programme, advocate):
    survivor = PatientFactory(organization=owner.organization)
    merged = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": advocate["patientId"]})
    assert merged.status_code == 200, merged.content
    embed = api.get(f"/patients/{survivor.id}?embed=referral").json()["referral"]
    assert [a["advocateId"] for a in embed["advocacies"]] == [advocate["advocateId"]]
    assert client.get(f"/referral/{advocate['shareToken']}").status_code == 200


def test_merge_into_an_advocate_of_the_same_programme_keeps_the_survivors_tokens(api, client, owner, programme):
    first = make_advocate(api, owner.organization, programme)
    second = make_advocate(api, owner.organization, programme, email="second@example.com")
    assert post_json(client, f"/referral/{second['shareToken']}/submit", FRIEND).status_code == 201
    merged = post_json(api, f"/patients/{first['patientId']}/merge", {"duplicatePatientId": second["patientId"]})
    assert merged.status_code == 200, merged.content
    assert_error(client.get(f"/referral/{second['shareToken']}"), 404, "NOT_FOUND")
    progress = client.get(f"/referral/{first['statusToken']}/status").json()
    assert [r["initials"] for r in progress["referrals"]] == ["BF"]
