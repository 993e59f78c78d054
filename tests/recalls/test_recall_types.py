"""GET/POST /clinical/recall-types, GET/PATCH /clinical/recall-types/{id}."""

from apps.recalls.models import RecallType
from tests.helpers import assert_error
from tests.recalls.conftest import patch, post, recall_types


def test_the_first_read_seeds_exam_and_hygiene_once(client, owner):
    first = client.get("/clinical/recall-types").json()["items"]
    again = client.get("/clinical/recall-types").json()["items"]

    assert [(t["name"], t["intervalMonths"], t["appointmentType"], t["reminderOffsets"]) for t in first] == [
        ("Exam", 6, "review", [-14, 0, 14]),
        ("Hygiene", 6, "hygiene", [-14, 0, 14]),
    ]
    assert again == first
    assert RecallType.objects.for_org(owner.organization).count() == 2


def test_a_type_is_created_and_changed(client):
    response = post(
        client,
        "/clinical/recall-types",
        {"name": "Perio review", "intervalMonths": 3, "appointmentType": "review", "reminderOffsets": [7, -7, 0, 7]},
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["reminderOffsets"] == [-7, 0, 7]
    assert created["archived"] is False

    changed = patch(client, f"/clinical/recall-types/{created['id']}", {"intervalMonths": 4, "archived": True})

    assert changed.status_code == 200, changed.content
    assert changed.json()["intervalMonths"] == 4 and changed.json()["archived"] is True
    assert "Perio review" not in recall_types(client)
    listed = client.get("/clinical/recall-types?includeArchived=true").json()["items"]
    assert "Perio review" in [t["name"] for t in listed]
    assert client.get(f"/clinical/recall-types/{created['id']}").json()["intervalMonths"] == 4


def test_bad_input_names_the_field(client):
    for body, field in (
        ({"name": "X", "intervalMonths": 0, "appointmentType": "review"}, "intervalMonths"),
        ({"name": "X", "intervalMonths": 6, "appointmentType": "surgery"}, "appointmentType"),
        ({"name": "X", "intervalMonths": 6, "appointmentType": "review", "reminderOffsets": [400]}, "reminderOffsets"),
        ({"name": " ", "intervalMonths": 6, "appointmentType": "review"}, "name"),
        ({"name": "X", "intervalMonths": 6, "appointmentType": "review", "colour": "red"}, "colour"),
    ):
        body_out = assert_error(post(client, "/clinical/recall-types", body), 400, "VALIDATION_ERROR")
        assert field in body_out["details"]["fields"], body_out
    assert_error(client.get("/clinical/recall-types?includeArchived=maybe"), 400, "VALIDATION_ERROR")
    ids = recall_types(client)
    assert_error(patch(client, f"/clinical/recall-types/{ids['Exam']}", {}), 400, "VALIDATION_ERROR")


def test_a_name_is_unique_in_the_practice(client, owner):
    recall_types(client)

    assert_error(
        post(client, "/clinical/recall-types", {"name": "Exam", "intervalMonths": 12, "appointmentType": "review"}),
        409,
        "RECALL_TYPE_NAME_TAKEN",
    )
    assert RecallType.objects.for_org(owner.organization).count() == 2


def test_another_practices_type_is_404_and_unchanged(client, outsider):
    theirs = recall_types(outsider.session_client())["Exam"]

    assert_error(client.get(f"/clinical/recall-types/{theirs}"), 404, "NOT_FOUND")
    assert_error(patch(client, f"/clinical/recall-types/{theirs}", {"intervalMonths": 9}), 404, "NOT_FOUND")
    assert RecallType.objects.for_org(outsider.organization).get(id=theirs).interval_months == 6
