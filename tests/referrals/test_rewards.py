"""Rewards: recorded once when the referred friend's journey reaches the programme's stage (committed
journey.stage_changed / journey.won, worked in Celery), shown on the advocate's status page and in
GET /patients/{id}?embed=referral."""

from apps.events.models import Event
from apps.journeys.public import Journey, Stage
from apps.referrals.models import Referral, Reward
from apps.referrals.tasks import process_events, sweep
from tests.factories import PatientFactory
from tests.referrals.conftest import make_advocate, make_programme, post_json

FRIEND = {"firstName": "Bob", "lastName": "Friend", "email": "bob@example.com"}


def _setup(api, client, owner, committed, stage_name: str | None = "Consultation booked"):
    api.get("/pipelines")
    fields = {}
    if stage_name:
        stage = Stage.objects.for_org(owner.organization).get(name=stage_name)
        fields["successStageId"] = str(stage.id)
    programme = make_programme(api, **fields)
    advocate = make_advocate(api, owner.organization, programme)
    response = committed(post_json, client, f"/referral/{advocate['shareToken']}/submit", FRIEND)
    assert response.status_code == 201, response.content
    referral = Referral.objects.for_org(owner.organization).get()
    journey = Journey.objects.for_org(owner.organization).get(patient_id=referral.referred_patient_id)
    return programme, advocate, referral, journey


def _move(api, committed, journey, name):
    stage = Stage.objects.for_org(journey.organization_id).get(pipeline_id=journey.pipeline_id, name=name)
    response = committed(post_json, api, f"/journeys/{journey.id}/move", {"stageId": str(stage.id)})
    assert response.status_code == 200, response.content


def test_reward_recorded_once_at_the_configured_stage(api, client, owner, committed):
    _, advocate, _, journey = _setup(api, client, owner, committed)
    _move(api, committed, journey, "Contacted")
    assert not Reward.objects.for_org(owner.organization).exists()
    _move(api, committed, journey, "Consultation booked")
    reward = Reward.objects.for_org(owner.organization).get()
    assert reward.description == "£50 off your next visit" and str(reward.amount) == "50.00"
    assert reward.currency == "GBP" and reward.journey_id == journey.id
    # Later stages, the win and a replayed event add nothing.
    _move(api, committed, journey, "Plan presented")
    assert committed(post_json, api, f"/journeys/{journey.id}/win").status_code == 200
    ids = list(
        Event.objects.for_org(owner.organization).filter(type__startswith="journey.").values_list("id", flat=True)
    )
    assert process_events([str(i) for i in ids]) == 0
    assert Reward.objects.for_org(owner.organization).count() == 1

    status = client.get(f"/referral/{advocate['statusToken']}/status").json()
    assert status["referrals"][0]["status"] == "successful" and status["referrals"][0]["succeededAt"]
    assert status["rewards"] == [
        {"id": str(reward.id), "description": "£50 off your next visit", "amount": "50.00", "currency": "GBP",
         "createdAt": status["rewards"][0]["createdAt"], "paidAt": None}
    ]  # fmt: skip


def test_jumping_past_the_stage_counts(api, client, owner, committed):
    _, _, _, journey = _setup(api, client, owner, committed)
    _move(api, committed, journey, "Plan presented")
    assert Reward.objects.for_org(owner.organization).count() == 1


def test_without_a_stage_the_win_counts_and_a_loss_never(api, client, owner, committed):
    _, _, _, journey = _setup(api, client, owner, committed, stage_name=None)
    _move(api, committed, journey, "Plan presented")
    assert not Reward.objects.for_org(owner.organization).exists()
    response = committed(post_json, api, f"/journeys/{journey.id}/lose", {"reason": "Too far"})
    assert response.status_code == 200, response.content
    assert not Reward.objects.for_org(owner.organization).exists()
    assert committed(post_json, api, f"/journeys/{journey.id}/reopen").status_code == 200
    assert committed(post_json, api, f"/journeys/{journey.id}/win").status_code == 200
    assert Reward.objects.for_org(owner.organization).count() == 1


def test_other_patients_journeys_earn_nothing(api, client, owner, committed):
    _setup(api, client, owner, committed)
    stranger = PatientFactory(organization=owner.organization)
    response = committed(post_json, api, "/journeys", {"patientId": str(stranger.id)})
    assert response.status_code == 201, response.content
    journey = Journey.objects.for_org(owner.organization).get(patient=stranger)
    _move(api, committed, journey, "Plan presented")
    assert not Reward.objects.for_org(owner.organization).exists()


def test_patient_embed(api, client, owner, outsider, committed):
    programme, advocate, referral, journey = _setup(api, client, owner, committed)
    _move(api, committed, journey, "Consultation booked")
    body = api.get(f"/patients/{advocate['patientId']}?embed=referral").json()["referral"]
    assert body["advocacies"] == [
        {"advocateId": advocate["advocateId"], "programmeId": programme["id"], "programmeName": "Refer a friend",
         "programmeActive": True, "shareUrl": advocate["shareUrl"], "statusUrl": advocate["statusUrl"],
         "referrals": 1, "successful": 1}
    ]  # fmt: skip
    assert len(body["rewards"]) == 1 and body["referredBy"] is None
    friend = api.get(f"/patients/{referral.referred_patient_id}?embed=referral").json()["referral"]
    assert friend["advocacies"] == [] and friend["rewards"] == []
    assert friend["referredBy"]["advocatePatientId"] == advocate["patientId"]
    assert friend["referredBy"]["status"] == "successful"
    plain = api.get(f"/patients/{advocate['patientId']}").json()
    assert "referral" not in plain
    # Another practice never sees the patient (404), and its own patients embed nothing of this practice.
    other = outsider.api_client()
    assert other.get(f"/patients/{advocate['patientId']}?embed=referral").status_code == 404
    own = PatientFactory(organization=outsider.organization)
    assert other.get(f"/patients/{own.id}?embed=referral").json()["referral"] == {
        "advocacies": [],
        "rewards": [],
        "referredBy": None,
    }


def test_the_sweep_makes_good_a_lost_task(api, client, owner, committed):
    _, advocate, _, journey = _setup(api, client, owner, committed)
    stage = Stage.objects.for_org(owner.organization).get(pipeline_id=journey.pipeline_id, name="Plan presented")
    # Moved without running the commit listeners: as if the queued task never reached a worker.
    assert post_json(api, f"/journeys/{journey.id}/move", {"stageId": str(stage.id)}).status_code == 200
    assert not Reward.objects.for_org(owner.organization).exists()
    assert sweep() == 1
    assert sweep() == 0
    status = client.get(f"/referral/{advocate['statusToken']}/status").json()
    assert [r["status"] for r in status["referrals"]] == ["successful"] and len(status["rewards"]) == 1
