"""Journeys: create, read, update, list with filters, board, move, win, lose, reopen; events; erasure and merge."""

import uuid
from decimal import Decimal

import pytest

from apps.events.models import Event
from apps.journeys.models import Journey, Stage
from tests.factories import PatientFactory
from tests.helpers import assert_error

JSON = "application/json"


def _create(client, patient, **body):
    return client.post("/journeys", {"patientId": str(patient.id), **body}, content_type=JSON)


def _events(organization, journey_id):
    return list(Event.objects.for_org(organization).filter(subject_id=str(journey_id)).order_by("created_at", "id"))


def test_create_with_defaults_and_read(api, owner, setup):
    response = _create(api, setup["patient"])
    assert response.status_code == 201, response.content
    journey = response.json()
    assert journey["status"] == "open" and journey["stageId"] == setup["stages"]["New lead"]
    assert journey["treatment"]["name"] == "General enquiry" and journey["pipelineId"] == setup["pipeline"]["id"]
    assert journey["estimatedValue"] == "0.00" and journey["currency"] == "EUR"
    assert journey["assigneeId"] == str(owner.user.id) and journey["patient"]["id"] == str(setup["patient"].id)
    assert api.get(f"/journeys/{journey['id']}").json() == journey
    (event,) = _events(owner.organization, journey["id"])
    assert event.type == "journey.created"


def test_create_with_treatment_stage_and_one_open_per_treatment(api, owner, setup):
    body = {"treatmentId": setup["implant"]["id"], "stageId": setup["stages"]["Contacted"], "source": "Website"}
    first = _create(api, setup["patient"], **body)
    assert first.status_code == 201, first.content
    assert first.json()["estimatedValue"] == "3500.00" and first.json()["currency"] == "GBP"
    again = _create(api, setup["patient"], treatmentId=setup["implant"]["id"])
    details = assert_error(again, 409, "JOURNEY_ALREADY_OPEN")["details"]
    assert details == {"existingJourneyId": first.json()["id"]}
    assert _create(api, setup["patient"]).status_code == 201  # another treatment is fine
    assert Journey.objects.for_org(owner.organization).count() == 2


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"patientId": "nope"},
        {"patientId": str(uuid.uuid4())},
        {"estimatedValue": -1},
        {"estimatedValue": "lots"},
        {"currency": "EURO"},
        {"assigneeId": str(uuid.uuid4())},
        {"stageName": "New lead"},
        {"treatmentId": str(uuid.uuid4())},
        {"source": "s" * 81},
    ],
)
def test_bad_create_bodies_are_400(api, owner, setup, body):
    if body:
        body = {"patientId": str(setup["patient"].id), **body}
    assert_error(api.post("/journeys", body, content_type=JSON), 400, "VALIDATION_ERROR")
    assert Journey.objects.for_org(owner.organization).count() == 0


def test_create_refuses_closing_foreign_or_archived_stages_and_archived_treatments(api, owner, outsider, setup):
    patient = setup["patient"]
    assert_error(_create(api, patient, stageId=setup["stages"]["Won"]), 400, "VALIDATION_ERROR")
    other = api.post("/pipelines", {"name": "Other"}, content_type=JSON).json()
    assert_error(_create(api, patient, stageId=other["stages"][0]["id"]), 400, "VALIDATION_ERROR")
    url = f"/pipelines/{setup['pipeline']['id']}/stages/{setup['stages']['Contacted']}"
    api.patch(url, {"archived": True}, content_type=JSON)
    assert_error(_create(api, patient, stageId=setup["stages"]["Contacted"]), 409, "STAGE_ARCHIVED")
    api.delete(f"/treatments/{setup['implant']['id']}")
    assert_error(_create(api, patient, treatmentId=setup["implant"]["id"]), 409, "TREATMENT_ARCHIVED")
    theirs = PatientFactory(organization=outsider.organization)
    assert_error(_create(api, theirs), 400, "VALIDATION_ERROR")
    outsider_member = outsider.membership.user_id
    assert_error(_create(api, patient, assigneeId=str(outsider_member)), 400, "VALIDATION_ERROR")
    assert Journey.objects.for_org(owner.organization).count() == 0


def test_update_emits_changed_fields(api, owner, member_factory, setup):
    journey = _create(api, setup["patient"]).json()
    colleague = member_factory(role="front_desk", organization=owner.organization)
    body = {"estimatedValue": "1200.50", "assigneeId": str(colleague.user.id), "source": "Referral"}
    response = api.patch(f"/journeys/{journey['id']}", body, content_type=JSON)
    assert response.status_code == 200, response.content
    updated = response.json()
    assert updated["estimatedValue"] == "1200.50" and updated["assigneeId"] == str(colleague.user.id)
    event = _events(owner.organization, journey["id"])[-1]
    assert event.type == "journey.updated"
    assert event.data["action"] == "updated"
    assert sorted(event.data["changedFields"]) == ["assigneeId", "estimatedValue", "source"]
    unassigned = api.patch(f"/journeys/{journey['id']}", {"assigneeId": None}, content_type=JSON)
    assert unassigned.json()["assigneeId"] is None
    same = api.patch(f"/journeys/{journey['id']}", {"source": "Referral"}, content_type=JSON)
    assert same.status_code == 200 and len(_events(owner.organization, journey["id"])) == 3
    for body in ({}, {"status": "won"}, {"stageId": setup["stages"]["Contacted"]}, {"estimatedValue": -5}):
        assert_error(api.patch(f"/journeys/{journey['id']}", body, content_type=JSON), 400, "VALIDATION_ERROR")


def test_update_to_a_treatment_with_an_open_journey_is_409(api, setup):
    _create(api, setup["patient"], treatmentId=setup["implant"]["id"])
    general = _create(api, setup["patient"]).json()
    response = api.patch(f"/journeys/{general['id']}", {"treatmentId": setup["implant"]["id"]}, content_type=JSON)
    assert_error(response, 409, "JOURNEY_ALREADY_OPEN")
    assert api.get(f"/journeys/{general['id']}").json()["treatment"]["name"] == "General enquiry"


def test_move_win_lose_reopen_with_events(api, owner, setup):
    journey = _create(api, setup["patient"]).json()
    url = f"/journeys/{journey['id']}"
    moved = api.post(f"{url}/move", {"stageId": setup["stages"]["Consultation booked"]}, content_type=JSON)
    assert moved.status_code == 200, moved.content
    assert moved.json()["stageId"] == setup["stages"]["Consultation booked"]
    event = _events(owner.organization, journey["id"])[-1]
    assert event.type == "journey.stage_changed" and event.data["action"] == "stage_changed"
    assert event.data["fromStageId"] == setup["stages"]["New lead"]
    assert event.data["toStageId"] == setup["stages"]["Consultation booked"]
    assert "stageId" in event.data["changedFields"]

    assert_error(
        api.post(f"{url}/move", {"stageId": setup["stages"]["Won"]}, content_type=JSON), 400, "VALIDATION_ERROR"
    )
    assert_error(api.post(f"{url}/lose", {}, content_type=JSON), 400, "VALIDATION_ERROR")
    assert_error(api.post(f"{url}/lose", {"reason": ""}, content_type=JSON), 400, "VALIDATION_ERROR")
    assert_error(api.post(f"{url}/lose", {"reason": "x" * 501}, content_type=JSON), 400, "VALIDATION_ERROR")
    lost = api.post(f"{url}/lose", {"reason": "Too expensive"}, content_type=JSON).json()
    assert lost["status"] == "lost" and lost["stageId"] == setup["stages"]["Lost"] and lost["lostAt"]
    assert lost["lostReason"] == "Too expensive"
    event = _events(owner.organization, journey["id"])[-1]
    assert event.type == "journey.lost" and event.data["toStageId"] == setup["stages"]["Lost"]
    assert "Too expensive" not in str(event.data)  # free text stays out of events

    assert_error(
        api.post(f"{url}/move", {"stageId": setup["stages"]["Contacted"]}, content_type=JSON), 409, "JOURNEY_NOT_OPEN"
    )
    assert_error(api.post(f"{url}/win", content_type=JSON), 409, "JOURNEY_NOT_OPEN")
    reopened = api.post(f"{url}/reopen", content_type=JSON).json()
    assert reopened["status"] == "open" and reopened["stageId"] == setup["stages"]["Consultation booked"]
    assert reopened["reopenedAt"] and reopened["lostReason"] == ""
    assert _events(owner.organization, journey["id"])[-1].type == "journey.reopened"
    assert_error(api.post(f"{url}/reopen", content_type=JSON), 409, "JOURNEY_NOT_CLOSED")

    won = api.post(f"{url}/win", content_type=JSON).json()
    assert won["status"] == "won" and won["stageId"] == setup["stages"]["Won"] and won["wonAt"]
    assert _events(owner.organization, journey["id"])[-1].type == "journey.won"
    back = api.post(f"{url}/reopen", {"stageId": setup["stages"]["Plan presented"]}, content_type=JSON).json()
    assert back["stageId"] == setup["stages"]["Plan presented"]
    types = [e.type for e in _events(owner.organization, journey["id"])]
    assert types == ["journey.created", "journey.stage_changed", "journey.lost", "journey.reopened", "journey.won",
                     "journey.reopened"]  # fmt: skip


def test_reopen_is_refused_while_another_journey_for_the_treatment_is_open(api, setup):
    first = _create(api, setup["patient"]).json()
    api.post(f"/journeys/{first['id']}/lose", {"reason": "No answer"}, content_type=JSON)
    second = _create(api, setup["patient"])
    assert second.status_code == 201
    assert_error(api.post(f"/journeys/{first['id']}/reopen", content_type=JSON), 409, "JOURNEY_ALREADY_OPEN")
    assert api.get(f"/journeys/{first['id']}").json()["status"] == "lost"


def test_archived_stage_keeps_its_journeys_and_refuses_new_moves(api, owner, setup):
    journey = _create(api, setup["patient"], stageId=setup["stages"]["Contacted"]).json()
    other = _create(api, setup["patient"], treatmentId=setup["implant"]["id"]).json()
    url = f"/pipelines/{setup['pipeline']['id']}/stages/{setup['stages']['Contacted']}"
    assert api.patch(url, {"archived": True}, content_type=JSON).status_code == 200
    kept = api.get(f"/journeys/{journey['id']}").json()
    assert kept["stageId"] == setup["stages"]["Contacted"] and kept["stage"]["archived"] is True
    move = api.post(f"/journeys/{other['id']}/move", {"stageId": setup["stages"]["Contacted"]}, content_type=JSON)
    assert_error(move, 409, "STAGE_ARCHIVED")
    board = api.get("/journeys/board").json()
    contacted = [c for c in board["columns"] if c["stage"]["id"] == setup["stages"]["Contacted"]]
    assert contacted and contacted[0]["count"] == 1
    moved_out = api.post(f"/journeys/{journey['id']}/move", {"stageId": setup["stages"]["New lead"]}, content_type=JSON)
    assert moved_out.status_code == 200


def test_list_filters_and_paging(api, owner, member_factory, setup):
    patients = [setup["patient"], *(PatientFactory(organization=owner.organization) for _ in range(2))]
    colleague = member_factory(role="telesales", organization=owner.organization)
    ids = [_create(api, p).json()["id"] for p in patients]
    implant = _create(api, patients[0], treatmentId=setup["implant"]["id"], assigneeId=str(colleague.user.id)).json()
    api.post(f"/journeys/{ids[1]}/win", content_type=JSON)
    page = api.get("/journeys", {"limit": 2}).json()
    assert page["total"] == 4 and page["limit"] == 2 and [j["id"] for j in page["items"]] == [implant["id"], ids[2]]
    assert api.get("/journeys", {"limit": 2, "offset": 2}).json()["items"][1]["id"] == ids[0]

    def found(**query):
        return {j["id"] for j in api.get("/journeys", query).json()["items"]}

    assert found(status="won") == {ids[1]}
    assert found(treatmentId=setup["implant"]["id"]) == {implant["id"]}
    assert found(assigneeId=str(colleague.user.id)) == {implant["id"]}
    assert found(patientId=str(patients[0].id)) == {ids[0], implant["id"]}
    assert found(stageId=setup["stages"]["Won"]) == {ids[1]}
    assert found(pipelineId=setup["pipeline"]["id"]) == {*ids, implant["id"]}
    assert found(createdAfter="2000-01-01T00:00:00Z", createdBefore="2100-01-01T00:00:00Z") == {*ids, implant["id"]}
    assert found(createdBefore="2000-01-01T00:00:00Z") == set()
    assert found(wonAfter="2000-01-01T00:00:00Z") == {ids[1]}
    for query in ({"limit": 0}, {"limit": 101}, {"status": "maybe"}, {"stageId": "x"}, {"createdAfter": "yesterday"},
                  {"sort": "name"}):  # fmt: skip
        assert_error(api.get("/journeys", query), 400, "VALIDATION_ERROR")


def test_board_groups_by_stage_with_counts_and_sums(api, owner, setup, django_assert_max_num_queries):
    patients = [setup["patient"], *(PatientFactory(organization=owner.organization) for _ in range(2))]
    for patient in patients:
        _create(api, patient, treatmentId=setup["implant"]["id"], estimatedValue="1000.25")
    one = _create(api, patients[0]).json()
    api.post(f"/journeys/{one['id']}/move", {"stageId": setup["stages"]["Contacted"]}, content_type=JSON)
    with django_assert_max_num_queries(25):
        response = api.get("/journeys/board", {"perStage": 2})
    assert response.status_code == 200, response.content
    board = response.json()
    assert board["pipelineId"] == setup["pipeline"]["id"]
    columns = {c["stage"]["name"]: c for c in board["columns"]}
    assert list(columns) == [s["name"] for s in setup["pipeline"]["stages"]]
    assert columns["New lead"]["count"] == 3 and columns["New lead"]["valueSum"] == "3000.75"
    assert len(columns["New lead"]["items"]) == 2
    assert columns["Contacted"]["count"] == 1 and columns["Contacted"]["items"][0]["id"] == one["id"]
    assert columns["Won"]["count"] == 0 and columns["Won"]["valueSum"] == "0.00"
    only_implant = api.get("/journeys/board", {"treatmentId": setup["implant"]["id"]}).json()
    assert sum(c["count"] for c in only_implant["columns"]) == 3
    assert_error(api.get("/journeys/board", {"pipelineId": str(uuid.uuid4())}), 400, "VALIDATION_ERROR")
    assert_error(api.get("/journeys/board", {"perStage": 101}), 400, "VALIDATION_ERROR")


def test_another_practices_journeys_are_404_on_every_route_and_never_listed(api, owner, outsider, setup):
    theirs_client = outsider.api_client()
    their_pipeline = theirs_client.get("/pipelines").json()["items"][0]
    their_patient = PatientFactory(organization=outsider.organization)
    theirs = _create(theirs_client, their_patient).json()
    url = f"/journeys/{theirs['id']}"
    stage = setup["stages"]["Contacted"]
    assert_error(api.get(url), 404, "NOT_FOUND")
    assert_error(api.patch(url, {"source": "x"}, content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.post(f"{url}/move", {"stageId": stage}, content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.post(f"{url}/win", content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.post(f"{url}/lose", {"reason": "x"}, content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.post(f"{url}/reopen", content_type=JSON), 404, "NOT_FOUND")
    stored = Journey.objects.for_org(outsider.organization).get(id=theirs["id"])
    assert stored.status == "open" and stored.source == ""
    mine = _create(api, setup["patient"]).json()
    foreign_stage = their_pipeline["stages"][1]["id"]
    move = api.post(f"/journeys/{mine['id']}/move", {"stageId": foreign_stage}, content_type=JSON)
    assert_error(move, 400, "VALIDATION_ERROR")
    assert [j["id"] for j in api.get("/journeys").json()["items"]] == [mine["id"]]
    assert api.get("/journeys", {"pipelineId": their_pipeline["id"]}).json()["items"] == []
    assert_error(api.get("/journeys/board", {"pipelineId": their_pipeline["id"]}), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    ("role", "read", "create", "update"),
    [
        ("owner", 200, 201, 200),
        ("manager", 200, 201, 200),
        ("front_desk", 200, 201, 200),
        ("telesales", 200, 201, 200),
        ("analyst", 200, 403, 403),
        ("dentist", 403, 403, 403),
    ],
)
def test_permissions_per_role(member_factory, owner, setup, role, read, create, update):
    journey = _create(owner.api_client(), setup["patient"]).json()
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert client.get("/journeys").status_code == read
    assert client.get("/journeys/board").status_code == read
    assert client.get(f"/journeys/{journey['id']}").status_code == read
    assert _create(client, setup["patient"], treatmentId=setup["implant"]["id"]).status_code == create
    url = f"/journeys/{journey['id']}"
    responses = [
        client.patch(url, {"source": "Phone"}, content_type=JSON),
        client.post(f"{url}/move", {"stageId": setup["stages"]["Contacted"]}, content_type=JSON),
        client.post(f"{url}/lose", {"reason": "No"}, content_type=JSON),
        client.post(f"{url}/reopen", content_type=JSON),
        client.post(f"{url}/win", content_type=JSON),
    ]
    assert [r.status_code for r in responses] == [update] * 5
    if update == 403:
        stored = Journey.objects.for_org(owner.organization).get(id=journey["id"])
        assert stored.status == "open" and stored.source == ""


def test_erasure_deletes_journeys_and_merge_repoints_them(api, owner, setup):
    survivor, duplicate, erased = setup["patient"], *(PatientFactory(organization=owner.organization) for _ in "ab")
    on_survivor = _create(api, survivor).json()
    clash = _create(api, duplicate).json()
    moved = _create(api, duplicate, treatmentId=setup["implant"]["id"]).json()
    gone = _create(api, erased).json()
    merged = api.post(f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)}, content_type=JSON)
    assert merged.status_code == 200, merged.content
    rows = {j.id: j for j in Journey.objects.for_org(owner.organization)}
    assert {str(rows[uuid.UUID(i)].patient_id) for i in (on_survivor["id"], clash["id"], moved["id"])} == {
        str(survivor.id)
    }
    assert rows[uuid.UUID(clash["id"])].status == "lost" and rows[uuid.UUID(moved["id"])].status == "open"
    assert rows[uuid.UUID(on_survivor["id"])].status == "open"
    assert api.delete(f"/patients/{erased.id}").status_code == 200
    assert not Journey.objects.for_org(owner.organization).filter(id=gone["id"]).exists()


def test_openapi_documents_the_journey_routes(api):
    paths = api.get("/openapi.json").json()["paths"]
    expected = {
        "/journeys": {"get", "post"},
        "/journeys/board": {"get"},
        "/journeys/{id}": {"get", "patch"},
        "/journeys/{id}/move": {"post"},
        "/journeys/{id}/win": {"post"},
        "/journeys/{id}/lose": {"post"},
        "/journeys/{id}/reopen": {"post"},
    }
    for path, methods in expected.items():
        for method in methods:
            assert paths[path][method]["tags"] == ["journeys"], path


def test_value_is_decimal_not_float(owner, setup, api):
    journey = _create(api, setup["patient"], estimatedValue="0.10").json()
    assert Journey.objects.for_org(owner.organization).get(id=journey["id"]).estimated_value == Decimal("0.10")
    assert Stage.objects.for_org(owner.organization).count() == 7


def test_board_value_rows_render_exactly_what_the_serializers_render(api, owner, member_factory, setup):
    """The board renders from .values() rows (apps.journeys.renderers.board); BoardSerializer (the schema) over model
    instances gives the same bytes: won, lost, reopened, assigned and unassigned journeys, an archived stage, zero
    and non-zero values, a timestamp on a whole second."""
    from datetime import UTC, datetime

    from apps.core.renderers import CamelCaseJSONRenderer
    from apps.journeys.api.serializers import BoardSerializer
    from apps.journeys.models import Pipeline
    from apps.journeys.selectors import journey_board, journey_rows

    colleague = member_factory(role="telesales", organization=owner.organization)
    patients = [setup["patient"], *(PatientFactory(organization=owner.organization) for _ in range(4))]
    made = [
        _create(api, patients[0], treatmentId=setup["implant"]["id"], estimatedValue="1000.25").json(),
        _create(api, patients[1], assigneeId=str(colleague.user.id), estimatedValue="0").json(),
        _create(api, patients[2], source="website", stageId=setup["stages"]["Contacted"]).json(),
        _create(api, patients[3]).json(),
        _create(api, patients[4], estimatedValue="99999.99").json(),
    ]
    api.post(f"/journeys/{made[1]['id']}/win", content_type=JSON)
    api.post(f"/journeys/{made[3]['id']}/lose", {"reason": "Too far — «away»"}, content_type=JSON)
    api.post(f"/journeys/{made[3]['id']}/reopen", content_type=JSON)
    api.post(f"/journeys/{made[4]['id']}/lose", {"reason": "No answer"}, content_type=JSON)
    Journey.objects.for_org(owner.organization).filter(id=made[0]["id"]).update(
        stage_entered_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    )
    url = f"/pipelines/{setup['pipeline']['id']}/stages/{setup['stages']['Contacted']}"
    assert api.patch(url, {"archived": True}, content_type=JSON).status_code == 200

    for query in ({}, {"perStage": 1}, {"perStage": 0}, {"treatmentId": setup["implant"]["id"]}):
        response = api.get("/journeys/board", query)
        assert response.status_code == 200, response.content
        pipeline = Pipeline.objects.for_org(owner.organization).get(id=setup["pipeline"]["id"])
        filters = {"treatment_id": uuid.UUID(query["treatmentId"])} if "treatmentId" in query else {}
        columns = journey_board(
            organization=owner.organization, pipeline=pipeline, filters=filters, per_stage=query.get("perStage", 20)
        )
        for column in columns:  # the same rows as model instances, for the serializer
            ids = [row["id"] for row in column["items"]]
            by_id = {j.id: j for j in journey_rows(Journey.objects.for_org(owner.organization).filter(id__in=ids))}
            column["items"] = [by_id[id] for id in ids]
        expected = BoardSerializer({"pipeline_id": pipeline.id, "columns": columns}).data
        assert response.content == CamelCaseJSONRenderer().render(expected)
    assert any(c["stage"]["archived"] and c["items"] for c in api.get("/journeys/board").json()["columns"])
