"""Journeys on the patient timeline (journey_created, _stage_changed, _won, _lost, _reopened) and folded into
GET /patients/{id}?embed=journeys."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.events.models import Event
from apps.journeys import renderers as journey_renderers
from apps.journeys.models import Journey
from apps.patients.models import Activity
from tests.factories import PatientFactory
from tests.helpers import assert_error

JSON = "application/json"


def create(client, patient, **body):
    response = client.post("/journeys", {"patientId": str(patient.id), **body}, content_type=JSON)
    assert response.status_code == 201, response.content
    return response.json()


def act(client, journey, action, body=None):
    return client.post(f"/journeys/{journey['id']}/{action}", body or {}, content_type=JSON)


def timeline(client, patient) -> list[dict]:
    response = client.get(f"/patients/{patient.id}/timeline")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def entries(organization):
    return sorted(Activity.objects.for_org(organization).values_list("id", "kind", "summary"))


def test_transitions_write_entries_newest_first_with_ids_and_names(api, owner, setup):
    patient, stages, implant = setup["patient"], setup["stages"], setup["implant"]
    journey = create(api, patient, treatmentId=implant["id"])
    assert act(api, journey, "move", {"stageId": stages["Contacted"]}).status_code == 200
    assert api.patch(f"/journeys/{journey['id']}", {"source": "Referral"}, content_type=JSON).status_code == 200
    assert act(api, journey, "lose", {"reason": "Too expensive"}).status_code == 200
    assert act(api, journey, "reopen").status_code == 200
    assert act(api, journey, "win").status_code == 200

    items = timeline(api, patient)

    kinds = [e["kind"] for e in items]
    assert kinds == ["journey_won", "journey_reopened", "journey_lost", "journey_stage_changed", "journey_created"]
    won, reopened, lost, moved, created = items
    common = {"journeyId": journey["id"], "treatmentId": implant["id"], "treatmentName": "Implant"}
    common["pipelineId"] = setup["pipeline"]["id"]
    assert created["data"] == {**common, "stageId": stages["New lead"], "stageName": "New lead", "status": "open"}
    assert moved["data"] == {
        **common,
        "stageId": stages["Contacted"],
        "stageName": "Contacted",
        "status": "open",
        "fromStageId": stages["New lead"],
        "fromStageName": "New lead",
    }
    assert lost["data"]["stageName"] == "Lost" and lost["data"]["fromStageName"] == "Contacted"
    assert lost["data"]["status"] == "lost" and lost["summary"] == "Too expensive"
    assert reopened["data"]["stageId"] == stages["Contacted"] and reopened["data"]["fromStageName"] == "Lost"
    assert won["data"]["stageName"] == "Won" and won["data"]["status"] == "won"
    assert all(e["actorUserId"] == str(owner.user.id) for e in items)
    assert {e["summary"] for e in items if e["kind"] != "journey_lost"} == {""}
    lost_event = Event.objects.for_org(owner.organization).get(type="journey.lost")
    assert "Too expensive" not in str(lost_event.data)
    embedded = api.get(f"/patients/{patient.id}", {"embed": "timeline"}).json()["timeline"]
    assert [e["kind"] for e in embedded["items"]] == kinds


def test_refused_transitions_write_no_entry(api, owner, member_factory, outsider, setup):
    journey = create(api, setup["patient"])
    before = entries(owner.organization)
    their_stage = outsider.api_client().get("/pipelines").json()["items"][0]["stages"][1]["id"]
    dentist = member_factory(role="dentist", organization=owner.organization).api_client()

    assert_error(act(api, journey, "lose", {"reason": ""}), 400, "VALIDATION_ERROR")
    assert_error(act(api, journey, "move", {"stageId": their_stage}), 400, "VALIDATION_ERROR")
    assert_error(act(api, journey, "move", {"stageId": setup["stages"]["Won"]}), 400, "VALIDATION_ERROR")
    assert_error(act(api, journey, "reopen"), 409, "JOURNEY_NOT_CLOSED")
    assert_error(act(dentist, journey, "win"), 403, "PERMISSION_DENIED")
    assert_error(dentist.get(f"/patients/{setup['patient'].id}/timeline"), 403, "PERMISSION_DENIED")
    assert_error(act(outsider.api_client(), journey, "win"), 404, "NOT_FOUND")
    assert_error(outsider.api_client().get(f"/patients/{setup['patient'].id}/timeline"), 404, "NOT_FOUND")

    assert entries(owner.organization) == before
    assert Journey.objects.for_org(owner.organization).get(id=journey["id"]).status == "open"


def test_erasure_removes_the_entries_and_merge_moves_them(api, owner, setup):
    survivor, duplicate = setup["patient"], PatientFactory(organization=owner.organization)
    erased = PatientFactory(organization=owner.organization)
    create(api, survivor)
    on_duplicate = create(api, duplicate, treatmentId=setup["implant"]["id"])
    act(api, on_duplicate, "move", {"stageId": setup["stages"]["Contacted"]})
    create(api, erased)

    merged = api.post(f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}, content_type=JSON)
    assert merged.status_code == 200, merged.content
    assert api.delete(f"/patients/{erased.id}").status_code == 200

    assert not Activity.objects.for_org(owner.organization).filter(patient_id=erased.id).exists()
    kinds = [e["kind"] for e in timeline(api, survivor)]
    assert kinds == ["merged", "journey_stage_changed", "journey_created", "journey_created"]


# --- embed=journeys ------------------------------------------------------------------------------------------------


def test_embed_journeys_folds_in_the_patients_journeys_newest_first(api, owner, outsider, setup):
    patient = setup["patient"]
    general = create(api, patient)
    implant = create(api, patient, treatmentId=setup["implant"]["id"])
    act(api, general, "lose", {"reason": "No answer"})
    create(api, PatientFactory(organization=owner.organization))  # someone else's
    their_patient = PatientFactory(organization=outsider.organization)
    create(outsider.api_client(), their_patient)

    response = api.get(f"/patients/{patient.id}", {"embed": "journeys"})

    assert response.status_code == 200, response.content
    journeys = response.json()["journeys"]
    assert [j["id"] for j in journeys] == [implant["id"], general["id"]]
    assert journeys[0] == api.get(f"/journeys/{implant['id']}").json()
    assert journeys[1]["status"] == "lost" and journeys[1]["stage"]["name"] == "Lost"
    assert_error(outsider.api_client().get(f"/patients/{patient.id}", {"embed": "journeys"}), 404, "NOT_FOUND")
    assert api.get(f"/patients/{their_patient.id}", {"embed": "journeys"}).status_code == 404


def test_embed_journeys_is_bounded_and_reads_no_row_twice(api, owner, setup, monkeypatch):
    patient = setup["patient"]
    create(api, patient)
    with CaptureQueriesContext(connection) as one:
        assert len(api.get(f"/patients/{patient.id}", {"embed": "journeys"}).json()["journeys"]) == 1
    treatments = [api.post("/treatments", {"name": f"T{i}"}, content_type=JSON).json() for i in range(4)]
    ids = [create(api, patient, treatmentId=t["id"])["id"] for t in treatments]
    with CaptureQueriesContext(connection) as five:
        assert len(api.get(f"/patients/{patient.id}", {"embed": "journeys"}).json()["journeys"]) == 5
    assert len(five) == len(one)

    monkeypatch.setattr(journey_renderers, "EMBED_JOURNEYS_LIMIT", 2)
    bounded = api.get(f"/patients/{patient.id}", {"embed": "journeys"}).json()["journeys"]
    assert [j["id"] for j in bounded] == ids[::-1][:2]


def test_embed_journeys_without_journeys_is_an_empty_list(api, setup):
    response = api.get(f"/patients/{setup['patient'].id}", {"embed": "journeys,timeline"})
    assert response.json()["journeys"] == [] and response.json()["timeline"]["items"] == []


@pytest.mark.parametrize("bad", ["nope", "5b1e7a3c-2f4d-4c8e-9a6b-0d3f2e1c4b5a"])
def test_a_bad_or_unknown_patient_id_on_create_writes_no_entry(api, owner, setup, bad):
    before = entries(owner.organization)
    response = api.post("/journeys", {"patientId": bad}, content_type=JSON)
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"].keys() == {"patientId"}
    assert entries(owner.organization) == before
