"""Pipelines and their stages: /pipelines, /pipelines/{id}, /pipelines/{id}/stages[/reorder|/{stageId}]."""

import uuid

import pytest

from apps.journeys.models import Pipeline, Stage, Treatment
from tests.helpers import assert_error

JSON = "application/json"
STANDARD = [
    ("New lead", "open"),
    ("Contacted", "open"),
    ("Consultation booked", "open"),
    ("Consultation attended", "open"),
    ("Plan presented", "open"),
    ("Won", "won"),
    ("Lost", "lost"),
]


def _stages(pipeline, *, active_only=False):
    return [(s["name"], s["kind"]) for s in pipeline["stages"] if not (active_only and s["archived"])]


def _default(client):
    return client.get("/pipelines").json()["items"][0]


def _snapshot(organization):
    return sorted(
        Stage.objects.for_org(organization).values_list("id", "name", "position", "archived_at", "kind")
    ), sorted(Pipeline.objects.for_org(organization).values_list("id", "name", "is_default"))


def test_first_read_seeds_the_default_pipeline_and_general_enquiry_once(api, owner):
    response = api.get("/pipelines")
    assert response.status_code == 200, response.content
    (pipeline,) = response.json()["items"]
    assert pipeline["name"] == "Treatment pipeline" and pipeline["isDefault"] is True
    assert _stages(pipeline) == STANDARD
    assert [s["position"] for s in pipeline["stages"]] == list(range(7))
    assert set(pipeline["stages"][0]) == {"id", "name", "kind", "position", "archived", "archivedAt"}
    assert api.get("/pipelines").json()["items"] == [pipeline]
    assert Pipeline.objects.for_org(owner.organization).count() == 1
    assert Stage.objects.for_org(owner.organization).count() == 7
    assert Treatment.objects.for_org(owner.organization).get().is_builtin  # the same seeding service
    assert api.get(f"/pipelines/{pipeline['id']}").json() == pipeline


def test_create_with_standard_or_custom_stages(api, owner):
    standard = api.post("/pipelines", {"name": "Implants"}, content_type=JSON)
    assert standard.status_code == 201, standard.content
    assert _stages(standard.json()) == STANDARD and standard.json()["isDefault"] is False
    custom = api.post(
        "/pipelines",
        {
            "name": "Ortho",
            "isDefault": True,
            "stages": [
                {"name": "Scan", "kind": "open"},
                {"name": "Signed", "kind": "won"},
                {"name": "No", "kind": "lost"},
            ],
        },
        content_type=JSON,
    )
    assert custom.status_code == 201, custom.content
    assert _stages(custom.json()) == [("Scan", "open"), ("Signed", "won"), ("No", "lost")]
    items = api.get("/pipelines").json()["items"]
    assert [(p["name"], p["isDefault"]) for p in items] == [
        ("Ortho", True),
        ("Implants", False),
        ("Treatment pipeline", False),
    ]
    assert_error(api.post("/pipelines", {"name": " ortho "}, content_type=JSON), 409, "PIPELINE_NAME_TAKEN")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 121},
        {"name": "P", "colour": "red"},
        {"name": "P", "isDefault": "perhaps"},
        {"name": "P", "stages": []},
        {"name": "P", "stages": "New lead"},
        {
            "name": "P",
            "stages": [{"name": "A", "kind": "open"}, {"name": "B", "kind": "won"}, {"name": "C", "kind": "won"}],
        },
        {
            "name": "P",
            "stages": [{"name": "A", "kind": "open"}, {"name": "B", "kind": "open"}, {"name": "C", "kind": "lost"}],
        },
        {
            "name": "P",
            "stages": [{"name": "A", "kind": "won"}, {"name": "B", "kind": "lost"}, {"name": "C", "kind": "lost"}],
        },
        {
            "name": "P",
            "stages": [{"name": "A", "kind": "open"}, {"name": "B", "kind": "won"}, {"name": "a", "kind": "lost"}],
        },
        {
            "name": "P",
            "stages": [{"name": "A", "kind": "open"}, {"name": "B", "kind": "won"}, {"name": "C", "kind": "maybe"}],
        },
        {
            "name": "P",
            "stages": [{"name": "", "kind": "open"}, {"name": "B", "kind": "won"}, {"name": "C", "kind": "lost"}],
        },
        {
            "name": "P",
            "stages": [
                {"name": "A", "kind": "open", "x": 1},
                {"name": "B", "kind": "won"},
                {"name": "C", "kind": "lost"},
            ],
        },
        ["P"],
    ],
)
def test_bad_pipeline_bodies_are_400_and_nothing_changes(api, owner, body):
    api.get("/pipelines")
    before = _snapshot(owner.organization)
    assert_error(api.post("/pipelines", body, content_type=JSON), 400, "VALIDATION_ERROR")
    assert _snapshot(owner.organization) == before


def test_rename_and_move_the_default(api, owner):
    default = _default(api)
    other = api.post("/pipelines", {"name": "Implants"}, content_type=JSON).json()
    renamed = api.patch(f"/pipelines/{default['id']}", {"name": "Leads"}, content_type=JSON)
    assert renamed.status_code == 200 and renamed.json()["name"] == "Leads"
    assert_error(
        api.patch(f"/pipelines/{default['id']}", {"name": "IMPLANTS"}, content_type=JSON), 409, "PIPELINE_NAME_TAKEN"
    )
    refused = api.patch(f"/pipelines/{default['id']}", {"isDefault": False}, content_type=JSON)
    assert_error(refused, 409, "DEFAULT_PIPELINE_REQUIRED")
    moved = api.patch(f"/pipelines/{other['id']}", {"isDefault": True}, content_type=JSON)
    assert moved.status_code == 200 and moved.json()["isDefault"] is True
    assert api.get(f"/pipelines/{default['id']}").json()["isDefault"] is False
    assert Pipeline.objects.for_org(owner.organization).filter(is_default=True).get().id == uuid.UUID(other["id"])
    for body in ({}, {"name": ""}, {"stages": []}, {"isDefault": None}):
        assert_error(api.patch(f"/pipelines/{other['id']}", body, content_type=JSON), 400, "VALIDATION_ERROR")


def test_add_stages_before_won_lost_or_at_a_position(api):
    pipeline = _default(api)
    added = api.post(f"/pipelines/{pipeline['id']}/stages", {"name": "Follow-up"}, content_type=JSON)
    assert added.status_code == 201, added.content
    assert added.json()["kind"] == "open" and added.json()["position"] == 5
    first = api.post(f"/pipelines/{pipeline['id']}/stages", {"name": "Triage", "position": 0}, content_type=JSON)
    assert first.json()["position"] == 0
    names = [name for name, _ in _stages(api.get(f"/pipelines/{pipeline['id']}").json())]
    assert names == ["Triage", "New lead", "Contacted", "Consultation booked", "Consultation attended",
                     "Plan presented", "Follow-up", "Won", "Lost"]  # fmt: skip
    stages_url = f"/pipelines/{pipeline['id']}/stages"
    assert_error(api.post(stages_url, {"name": "contacted"}, content_type=JSON), 409, "STAGE_NAME_TAKEN")
    assert_error(
        api.post(stages_url, {"name": "Won again", "kind": "won"}, content_type=JSON), 409, "PIPELINE_STAGES_INVALID"
    )
    for body in ({}, {"name": ""}, {"name": "x" * 81}, {"name": "A", "kind": "maybe"}, {"name": "A", "position": -1},
                 {"name": "A", "position": "first"}, {"name": "A", "archived": True}):  # fmt: skip
        assert_error(api.post(stages_url, body, content_type=JSON), 400, "VALIDATION_ERROR")
    assert len(api.get(f"/pipelines/{pipeline['id']}").json()["stages"]) == 9


def test_rename_archive_restore_stages_and_the_rules(api, owner):
    pipeline = _default(api)
    ids = {s["name"]: s["id"] for s in pipeline["stages"]}
    url = f"/pipelines/{pipeline['id']}/stages"
    renamed = api.patch(f"{url}/{ids['Contacted']}", {"name": "Called"}, content_type=JSON)
    assert renamed.status_code == 200 and renamed.json()["name"] == "Called"
    assert_error(api.patch(f"{url}/{ids['New lead']}", {"name": "called"}, content_type=JSON),
                 409, "STAGE_NAME_TAKEN")  # fmt: skip
    archived = api.patch(f"{url}/{ids['Contacted']}", {"archived": True}, content_type=JSON)
    assert archived.status_code == 200 and archived.json()["archived"] is True and archived.json()["archivedAt"]
    reread = api.get(f"/pipelines/{pipeline['id']}").json()
    assert ("Called", "open") in _stages(reread) and ("Called", "open") not in _stages(reread, active_only=True)
    for kind in ("Won", "Lost"):
        response = api.patch(f"{url}/{ids[kind]}", {"archived": True}, content_type=JSON)
        assert_error(response, 409, "PIPELINE_STAGES_INVALID")
    for name in ("New lead", "Consultation booked", "Consultation attended"):
        assert api.patch(f"{url}/{ids[name]}", {"archived": True}, content_type=JSON).status_code == 200
    last_open = api.patch(f"{url}/{ids['Plan presented']}", {"archived": True}, content_type=JSON)
    assert_error(last_open, 409, "PIPELINE_STAGES_INVALID")
    assert Stage.objects.for_org(owner.organization).get(id=ids["Plan presented"]).archived_at is None
    restored = api.patch(f"{url}/{ids['Contacted']}", {"archived": False}, content_type=JSON)
    assert restored.json()["archived"] is False and restored.json()["archivedAt"] is None
    for body in ({}, {"kind": "won"}, {"name": ""}, {"archived": "soon"}, {"position": 1}):
        assert_error(api.patch(f"{url}/{ids['Contacted']}", body, content_type=JSON), 400, "VALIDATION_ERROR")
    assert_error(api.patch(f"{url}/not-a-uuid", {"name": "A"}, content_type=JSON), 400, "VALIDATION_ERROR")
    assert_error(api.patch(f"{url}/{uuid.uuid4()}", {"name": "A"}, content_type=JSON), 404, "NOT_FOUND")


def test_a_stage_of_another_pipeline_is_404_through_this_one(api, owner):
    first = _default(api)
    second = api.post("/pipelines", {"name": "Implants"}, content_type=JSON).json()
    response = api.patch(
        f"/pipelines/{first['id']}/stages/{second['stages'][0]['id']}", {"name": "Moved"}, content_type=JSON
    )
    assert_error(response, 404, "NOT_FOUND")
    assert Stage.objects.for_org(owner.organization).get(id=second["stages"][0]["id"]).name == "New lead"


def test_reorder_active_stages_archived_ones_follow(api):
    pipeline = _default(api)
    ids = {s["name"]: s["id"] for s in pipeline["stages"]}
    url = f"/pipelines/{pipeline['id']}/stages"
    api.patch(f"{url}/{ids['Contacted']}", {"archived": True}, content_type=JSON)
    order = ["Won", "Lost", "Plan presented", "New lead", "Consultation attended", "Consultation booked"]
    response = api.post(f"{url}/reorder", {"stageIds": [ids[n] for n in order]}, content_type=JSON)
    assert response.status_code == 200, response.content
    assert [s["name"] for s in response.json()["stages"]] == [*order, "Contacted"]
    assert [s["position"] for s in response.json()["stages"]] == list(range(7))

    active = [ids[n] for n in order]
    for stage_ids in (
        active[:-1],  # one missing
        [*active, ids["Contacted"]],  # an archived one
        [*active, active[0]],  # a duplicate
        [*active[:-1], str(uuid.uuid4())],  # an unknown one
        [],
        ["nope"],
    ):
        refused = api.post(f"{url}/reorder", {"stageIds": stage_ids}, content_type=JSON)
        assert_error(refused, 400, "VALIDATION_ERROR")
    for body in ({}, {"stageIds": "x"}, {"ids": active}):
        assert_error(api.post(f"{url}/reorder", body, content_type=JSON), 400, "VALIDATION_ERROR")
    assert [s["name"] for s in api.get(f"/pipelines/{pipeline['id']}").json()["stages"]] == [*order, "Contacted"]


def test_another_practices_pipelines_are_404_on_every_route_and_never_listed(api, owner, outsider):
    theirs_client = outsider.api_client()
    theirs = _default(theirs_client)
    stage = theirs["stages"][0]["id"]
    before = _snapshot(outsider.organization)
    base = f"/pipelines/{theirs['id']}"
    assert_error(api.get(base), 404, "NOT_FOUND")
    assert_error(api.patch(base, {"name": "Mine"}, content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.post(f"{base}/stages", {"name": "Mine"}, content_type=JSON), 404, "NOT_FOUND")
    assert_error(api.patch(f"{base}/stages/{stage}", {"name": "Mine"}, content_type=JSON), 404, "NOT_FOUND")
    reorder = api.post(f"{base}/stages/reorder", {"stageIds": [stage]}, content_type=JSON)
    assert_error(reorder, 404, "NOT_FOUND")
    mine = _default(api)
    crossed = api.patch(f"/pipelines/{mine['id']}/stages/{stage}", {"name": "Mine"}, content_type=JSON)
    assert_error(crossed, 404, "NOT_FOUND")
    assert _snapshot(outsider.organization) == before
    assert [p["id"] for p in api.get("/pipelines").json()["items"]] == [mine["id"]]


@pytest.mark.parametrize(
    ("role", "read", "write"),
    [
        ("owner", 200, 201),
        ("manager", 200, 201),
        ("front_desk", 200, 403),
        ("telesales", 200, 403),
        ("analyst", 200, 403),
        ("dentist", 403, 403),
    ],
)
def test_reading_needs_journey_read_and_changing_settings_update(member_factory, owner, role, read, write):
    pipeline = _default(owner.api_client())
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert client.get("/pipelines").status_code == read
    assert client.get(f"/pipelines/{pipeline['id']}").status_code == read
    before = _snapshot(owner.organization)
    base = f"/pipelines/{pipeline['id']}"
    stage = pipeline["stages"][0]["id"]
    responses = [
        client.post("/pipelines", {"name": f"P {role}"}, content_type=JSON),
        client.patch(base, {"name": f"P2 {role}"}, content_type=JSON),
        client.post(f"{base}/stages", {"name": f"S {role}"}, content_type=JSON),
        client.patch(f"{base}/stages/{stage}", {"name": f"S2 {role}"}, content_type=JSON),
        client.post(f"{base}/stages/reorder", {"stageIds": [s["id"] for s in pipeline["stages"]]}, content_type=JSON),
    ]
    if write == 403:
        for response in responses:
            body = assert_error(response, 403, "PERMISSION_DENIED")
            if role != "dentist":
                assert body["details"] == {"permission": "settings:update"}
        assert _snapshot(owner.organization) == before
    else:
        assert [r.status_code for r in responses] == [201, 200, 201, 200, 400]  # the new stage is not listed


def test_openapi_documents_the_pipeline_routes(api):
    paths = api.get("/openapi.json").json()["paths"]
    expected = {
        "/pipelines": {"get", "post"},
        "/pipelines/{id}": {"get", "patch"},
        "/pipelines/{id}/stages": {"post"},
        "/pipelines/{id}/stages/reorder": {"post"},
        "/pipelines/{id}/stages/{stage_id}": {"patch"},
    }
    for path, methods in expected.items():
        assert set(paths[path]) >= methods, path
        for method in methods:
            operation = paths[path][method]
            assert operation["tags"] == ["pipelines"] and operation["summary"]
            if method != "get":
                assert "409" in operation["responses"] and "settings:update" in operation["description"]
