"""Patient tags (/tags), saved views (/saved-views) and marketing consent (/patients/{id}/marketing-consent)."""

import json
import uuid

import pytest
from django.test import Client

from apps.events.models import Event
from apps.patients.models import MarketingConsent, Patient, PatientTag, SavedView, Tag
from tests.factories import PatientFactory, TagFactory
from tests.helpers import assert_error

TAGS = "/tags"
VIEWS = "/saved-views"
TAG_FIELDS = {"id", "name", "color", "createdAt"}
VIEW_FIELDS = {
    "id",
    "name",
    "shared",
    "filters",
    "sort",
    "direction",
    "columns",
    "ownerUserId",
    "createdAt",
    "updatedAt",
}
CONSENT_FIELDS = {"id", "channel", "status", "source", "evidence", "recordedAt", "recordedByUserId"}


# --- helpers -----------------------------------------------------------------------------------------------


def assert_validation_error(response, field: str) -> dict:
    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    return body


def post_json(client: Client, path: str, data):
    return client.post(path, data, content_type="application/json")


def patch_json(client: Client, path: str, data):
    return client.patch(path, data, content_type="application/json")


def tag_rows(organization) -> list[tuple]:
    return list(Tag.objects.for_org(organization).order_by("id").values_list("id", "name", "color"))


def view_rows(organization) -> list[dict]:
    return list(SavedView.objects.for_org(organization).order_by("id").values())


def consent_state(organization) -> dict:
    return {
        "consents": list(MarketingConsent.objects.for_org(organization).order_by("id").values()),
        "patients": list(Patient.objects.for_org(organization).order_by("id").values()),
        "events": list(Event.objects.for_org(organization).order_by("id").values_list("id", flat=True)),
    }


# === tags ===========================================================================================================


def test_tag_list_is_sorted_by_name(owner, outsider, api):
    org = owner.organization
    for name in ("vip", "Anxious", "bruxism", "Chair 2"):
        TagFactory(organization=org, name=name)
    TagFactory(organization=outsider.organization, name="Another practice")

    response = api.get(TAGS)

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"items"}
    assert [t["name"] for t in body["items"]] == ["Anxious", "bruxism", "Chair 2", "vip"]
    assert all(set(t) == TAG_FIELDS for t in body["items"])


@pytest.mark.parametrize("color", ["#a1B2c3", "#000000", ""])
def test_create_a_tag(owner, api, color):
    response = post_json(api, TAGS, {"name": "  Implant lead  ", "color": color})

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == TAG_FIELDS
    assert body["name"] == "Implant lead"
    assert body["color"] == color
    tag = Tag.objects.for_org(owner.organization).get(id=body["id"])
    assert (tag.name, tag.color) == ("Implant lead", color)


def test_create_a_tag_without_color_and_at_64_characters(owner, api):
    response = post_json(api, TAGS, {"name": "x" * 64})

    assert response.status_code == 201, response.content
    assert response.json()["color"] == ""


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": None}, "name"),
        ({"name": "x" * 65}, "name"),
        ({"name": "ok", "color": "red"}, "color"),
        ({"name": "ok", "color": "#abc"}, "color"),
        ({"name": "ok", "color": "#GGGGGG"}, "color"),
        ({"name": "ok", "color": "a1b2c3"}, "color"),
        ({"name": "ok", "color": None}, "color"),
        ({"name": "ok", "colour": "#a1b2c3"}, "colour"),
    ],
)
def test_create_a_tag_with_bad_input_is_400(owner, api, payload, field):
    before = tag_rows(owner.organization)

    response = post_json(api, TAGS, payload)

    assert_validation_error(response, field)
    assert tag_rows(owner.organization) == before


@pytest.mark.parametrize("name", ["VIP", "vip", " Vip ", "vIP"])
def test_a_duplicate_tag_name_is_409_case_insensitively(owner, api, name):
    TagFactory(organization=owner.organization, name="Vip")
    before = tag_rows(owner.organization)

    response = post_json(api, TAGS, {"name": name})

    assert_error(response, 409, "TAG_NAME_TAKEN")
    assert tag_rows(owner.organization) == before


def test_another_practice_may_use_the_same_tag_name(owner, outsider, api):
    TagFactory(organization=outsider.organization, name="VIP")

    response = post_json(api, TAGS, {"name": "VIP"})

    assert response.status_code == 201, response.content


def test_read_and_rename_a_tag(owner, api):
    tag = TagFactory(organization=owner.organization, name="Old name", color="#111111")

    read = api.get(f"{TAGS}/{tag.id}")
    renamed = patch_json(api, f"{TAGS}/{tag.id}", {"name": "New name"})
    recoloured = patch_json(api, f"{TAGS}/{tag.id}", {"color": "#222222"})
    recased = patch_json(api, f"{TAGS}/{tag.id}", {"name": "NEW NAME"})

    assert read.status_code == 200, read.content
    assert read.json() == {
        "id": str(tag.id),
        "name": "Old name",
        "color": "#111111",
        "createdAt": read.json()["createdAt"],
    }
    assert renamed.status_code == 200, renamed.content
    assert renamed.json()["name"] == "New name"
    assert renamed.json()["color"] == "#111111"
    assert recoloured.status_code == 200, recoloured.content
    assert recoloured.json()["name"] == "New name"
    assert recoloured.json()["color"] == "#222222"
    assert recased.status_code == 200, recased.content
    assert tag_rows(owner.organization) == [(tag.id, "NEW NAME", "#222222")]


def test_renaming_onto_another_tags_name_is_409(owner, api):
    TagFactory(organization=owner.organization, name="Taken")
    tag = TagFactory(organization=owner.organization, name="Mine")
    before = tag_rows(owner.organization)

    response = patch_json(api, f"{TAGS}/{tag.id}", {"name": "TAKEN"})

    assert_error(response, 409, "TAG_NAME_TAKEN")
    assert tag_rows(owner.organization) == before


@pytest.mark.parametrize(
    ("payload", "field"), [({"name": ""}, "name"), ({"color": "blue"}, "color"), ({"id": str(uuid.uuid4())}, "id")]
)
def test_patch_a_tag_with_bad_input_is_400(owner, api, payload, field):
    tag = TagFactory(organization=owner.organization)
    before = tag_rows(owner.organization)

    response = patch_json(api, f"{TAGS}/{tag.id}", payload)

    assert_validation_error(response, field)
    assert tag_rows(owner.organization) == before


def test_deleting_a_tag_removes_it_from_every_patient(owner, api):
    org = owner.organization
    doomed, kept = TagFactory(organization=org), TagFactory(organization=org)
    patients = [PatientFactory(organization=org, tags=[doomed, kept]) for _ in range(3)]

    response = api.delete(f"{TAGS}/{doomed.id}")

    assert response.status_code == 204, response.content
    assert not Tag.objects.for_org(org).filter(id=doomed.id).exists()
    assert set(PatientTag.objects.for_org(org).values_list("patient_id", "tag_id")) == {
        (p.id, kept.id) for p in patients
    }
    assert Patient.objects.for_org(org).count() == 3
    assert_error(api.get(f"{TAGS}/{doomed.id}"), 404, "NOT_FOUND")
    tags_on_patient = api.get(f"/patients/{patients[0].id}").json()["tags"]
    assert [t["id"] for t in tags_on_patient] == [str(kept.id)]


@pytest.mark.parametrize(("method", "payload"), [("get", None), ("patch", {"name": "Mine now"}), ("delete", None)])
def test_another_practices_tag_is_404(owner, outsider, api, method, payload):
    theirs = TagFactory(organization=outsider.organization, name="Theirs")
    patient = PatientFactory(organization=outsider.organization, tags=[theirs])
    before = tag_rows(outsider.organization)

    if method == "patch":
        response = patch_json(api, f"{TAGS}/{theirs.id}", payload)
    else:
        response = getattr(api, method)(f"{TAGS}/{theirs.id}")

    assert_error(response, 404, "NOT_FOUND")
    assert tag_rows(outsider.organization) == before
    assert PatientTag.objects.for_org(outsider.organization).filter(patient=patient).count() == 1


def test_an_unknown_tag_is_404_and_a_bad_id_400(owner, api):
    assert_error(api.get(f"{TAGS}/{uuid.uuid4()}"), 404, "NOT_FOUND")
    assert_validation_error(api.get(f"{TAGS}/not-a-uuid"), "id")


def test_analyst_reads_tags_but_cannot_change_them(owner, member_factory):
    analyst = member_factory(role="analyst", organization=owner.organization).api_client()
    tag = TagFactory(organization=owner.organization, name="Seen")
    before = tag_rows(owner.organization)

    assert analyst.get(TAGS).status_code == 200
    assert_error(post_json(analyst, TAGS, {"name": "New"}), 403, "PERMISSION_DENIED")
    assert_error(patch_json(analyst, f"{TAGS}/{tag.id}", {"name": "Renamed"}), 403, "PERMISSION_DENIED")
    assert_error(analyst.delete(f"{TAGS}/{tag.id}"), 403, "PERMISSION_DENIED")
    assert tag_rows(owner.organization) == before


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_cannot_use_tags(owner, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()

    assert_error(client.get(TAGS), 403, "PERMISSION_DENIED")
    assert_error(post_json(client, TAGS, {"name": "x"}), 403, "PERMISSION_DENIED")
    assert tag_rows(owner.organization) == []


# === saved views ====================================================================================================


def create_view(client: Client, **fields) -> dict:
    payload = {"name": "My leads", **fields}
    response = post_json(client, VIEWS, payload)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def colleague(owner, member_factory):
    return member_factory(role="front_desk", organization=owner.organization)


def test_create_a_private_view_with_everything(owner, api):
    tag = TagFactory(organization=owner.organization)
    filters = {"status": ["lead"], "tagIds": {"any": [str(tag.id)]}, "hasEmail": True, "createdAt": {"from": None}}

    body = create_view(
        api,
        name="Hot leads",
        filters=filters,
        sort="lastName",
        direction="asc",
        columns=["firstName", "lastName", "email"],
    )

    assert set(body) == VIEW_FIELDS
    assert body["name"] == "Hot leads"
    assert body["shared"] is False
    assert body["filters"] == filters
    assert body["sort"] == "lastName"
    assert body["direction"] == "asc"
    assert body["columns"] == ["firstName", "lastName", "email"]
    assert body["ownerUserId"] == str(owner.user.id)
    assert api.get(f"{VIEWS}/{body['id']}").json() == body


def test_custom_field_names_in_saved_filters_are_kept_as_sent(owner, api):
    filters = {"customFields": {"insurer_name": "Acme", "firstVisitYear": 2021}, "hasPhone": False}

    body = create_view(api, name="Acme patients", filters=filters)

    assert body["filters"] == filters
    assert api.get(f"{VIEWS}/{body['id']}").json()["filters"] == filters


def test_create_a_view_with_defaults(owner, api):
    body = create_view(api, name="Everything")

    assert body["shared"] is False
    assert body["filters"] == {}
    assert body["sort"] == "createdAt"
    assert body["direction"] == "desc"
    assert body["columns"] == []


def test_saved_filters_work_on_the_list(owner, api):
    org = owner.organization
    lead = PatientFactory(organization=org, status="lead")
    PatientFactory(organization=org, status="patient")
    view = create_view(api, name="Leads", filters={"status": ["lead"]})

    listed = api.get("/patients", {"filters": json.dumps(view["filters"])})

    assert listed.status_code == 200, listed.content
    assert [p["id"] for p in listed.json()["items"]] == [str(lead.id)]


def test_the_list_shows_mine_and_shared_ones_not_others_private(owner, outsider, api, colleague):
    mine_private = create_view(api, name="Mine private")
    mine_shared = create_view(api, name="Mine shared", shared=True)
    theirs_shared = create_view(colleague.api_client(), name="Their shared", shared=True)
    create_view(colleague.api_client(), name="Their private")
    create_view(outsider.api_client(), name="Other practice shared", shared=True)

    response = api.get(VIEWS)

    assert response.status_code == 200, response.content
    assert set(response.json()) == {"items"}
    assert [v["id"] for v in response.json()["items"]] == [mine_private["id"], mine_shared["id"], theirs_shared["id"]]
    colleague_sees = {v["name"] for v in colleague.api_client().get(VIEWS).json()["items"]}
    assert colleague_sees == {"Mine shared", "Their shared", "Their private"}


def test_reading_another_members_views(owner, api, colleague):
    private = create_view(colleague.api_client(), name="Private")
    shared = create_view(colleague.api_client(), name="Shared", shared=True)

    assert_error(api.get(f"{VIEWS}/{private['id']}"), 404, "NOT_FOUND")
    response = api.get(f"{VIEWS}/{shared['id']}")
    assert response.status_code == 200, response.content
    assert response.json()["ownerUserId"] == str(colleague.user.id)


def test_only_the_owner_changes_a_view(owner, api, colleague):
    shared = create_view(colleague.api_client(), name="Shared", shared=True)
    private = create_view(colleague.api_client(), name="Private")
    before = view_rows(owner.organization)

    assert_error(patch_json(api, f"{VIEWS}/{shared['id']}", {"name": "Hijacked"}), 403, "PERMISSION_DENIED")
    assert_error(patch_json(api, f"{VIEWS}/{private['id']}", {"name": "Hijacked"}), 404, "NOT_FOUND")
    assert view_rows(owner.organization) == before

    response = patch_json(colleague.api_client(), f"{VIEWS}/{shared['id']}", {"name": "Renamed", "shared": False})
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Renamed"
    assert response.json()["shared"] is False
    assert_error(api.get(f"{VIEWS}/{shared['id']}"), 404, "NOT_FOUND")


def test_a_manager_deletes_a_shared_view_but_not_a_private_one(owner, member_factory, colleague):
    manager = member_factory(role="manager", organization=owner.organization).api_client()
    shared = create_view(colleague.api_client(), name="Shared", shared=True)
    private = create_view(colleague.api_client(), name="Private")

    assert_error(manager.delete(f"{VIEWS}/{private['id']}"), 404, "NOT_FOUND")
    assert SavedView.objects.for_org(owner.organization).filter(id=private["id"]).exists()

    response = manager.delete(f"{VIEWS}/{shared['id']}")

    assert response.status_code == 204, response.content
    assert not SavedView.objects.for_org(owner.organization).filter(id=shared["id"]).exists()


def test_a_member_without_moderation_cannot_delete_anothers_shared_view(owner, api, member_factory):
    telesales = member_factory(role="telesales", organization=owner.organization).api_client()
    shared = create_view(api, name="Owner's shared", shared=True)
    before = view_rows(owner.organization)

    response = telesales.delete(f"{VIEWS}/{shared['id']}")

    assert_error(response, 403, "PERMISSION_DENIED")
    assert view_rows(owner.organization) == before


def test_the_owner_deletes_their_own_views(owner, api, colleague):
    private = create_view(colleague.api_client(), name="Private")

    response = colleague.api_client().delete(f"{VIEWS}/{private['id']}")

    assert response.status_code == 204, response.content
    assert view_rows(owner.organization) == []
    assert_error(colleague.api_client().delete(f"{VIEWS}/{private['id']}"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"filters": {"shoeSize": 42}}, "filters"),
        ({"filters": {"status": ["gone"]}}, "filters"),
        ({"filters": {"tagIds": {"some": []}}}, "filters"),
        ({"filters": {"tagIds": {"any": ["not-a-uuid"]}}}, "filters"),
        ({"filters": {"createdAt": {"from": "yesterday"}}}, "filters"),
        ({"filters": "status=lead"}, "filters"),
        ({"filters": {"city": "x" * 4000}}, "filters"),
        ({"columns": ["firstName", "note"]}, "columns"),
        ({"columns": ["medicalAlert"]}, "columns"),
        ({"columns": ["first_name"]}, "columns"),
        ({"columns": "firstName"}, "columns"),
        ({"sort": "shoeSize"}, "sort"),
        ({"direction": "up"}, "direction"),
        ({"name": ""}, "name"),
        ({"name": "x" * 121}, "name"),
        ({"shared": "maybe"}, "shared"),
    ],
)
def test_a_view_with_bad_input_is_400(owner, api, fields, field):
    response = post_json(api, VIEWS, {"name": "Bad", **fields})

    assert_validation_error(response, field)
    assert view_rows(owner.organization) == []


def test_patching_a_view_validates_too(owner, api):
    view = create_view(api, name="Mine", filters={"status": ["lead"]})
    before = view_rows(owner.organization)

    for payload, field in (({"filters": {"shoeSize": 1}}, "filters"), ({"columns": ["note"]}, "columns")):
        assert_validation_error(patch_json(api, f"{VIEWS}/{view['id']}", payload), field)
    assert view_rows(owner.organization) == before


UNSTORABLE_CUSTOM_FIELDS = [
    {"a\u0000b": 1},  # NUL in a key
    {"insurer": "Acme\u0000"},  # NUL in a value
    {"insurer": "\ud800"},  # a lone surrogate
    {"\udc00": True},
    {"insurer": ["ok", {"deep": "x\u0000"}]},  # at any depth
]


@pytest.mark.parametrize("custom_fields", UNSTORABLE_CUSTOM_FIELDS)
def test_custom_fields_postgresql_cannot_store_are_400_not_500(owner, api, custom_fields):
    """JSON accepts NUL and unpaired surrogates in any string; a JSON column does not (a DataError before)."""
    filters = {"customFields": custom_fields}
    body = assert_validation_error(post_json(api, VIEWS, {"name": "Bad", "filters": filters}), "filters")
    assert "customFields" in body["details"]["fields"]["filters"], body
    assert view_rows(owner.organization) == []

    view = create_view(api, name="Mine", filters={"status": ["lead"]})
    before = view_rows(owner.organization)
    assert_validation_error(patch_json(api, f"{VIEWS}/{view['id']}", {"filters": filters}), "filters")
    assert view_rows(owner.organization) == before

    listed = api.get("/patients", {"filters": json.dumps(filters)})
    assert "customFields" in assert_validation_error(listed, "filters")["details"]["fields"]["filters"]


def test_a_duplicate_view_name_for_the_same_owner_is_409(owner, api, colleague):
    create_view(api, name="Follow-ups")
    before = view_rows(owner.organization)

    response = post_json(api, VIEWS, {"name": "FOLLOW-UPS", "shared": True})

    assert_error(response, 409, "SAVED_VIEW_NAME_TAKEN")
    assert view_rows(owner.organization) == before
    other_owner = post_json(colleague.api_client(), VIEWS, {"name": "Follow-ups"})
    assert other_owner.status_code == 201, other_owner.content


def test_renaming_a_view_onto_another_of_mine_is_409(owner, api):
    create_view(api, name="First")
    second = create_view(api, name="Second")
    before = view_rows(owner.organization)

    response = patch_json(api, f"{VIEWS}/{second['id']}", {"name": "first"})

    assert_error(response, 409, "SAVED_VIEW_NAME_TAKEN")
    assert view_rows(owner.organization) == before


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_another_practices_view_is_404(owner, outsider, api, method):
    theirs = create_view(outsider.api_client(), name="Theirs", shared=True)
    before = view_rows(outsider.organization)

    path = f"{VIEWS}/{theirs['id']}"
    response = patch_json(api, path, {"name": "Mine"}) if method == "patch" else getattr(api, method)(path)

    assert_error(response, 404, "NOT_FOUND")
    assert view_rows(outsider.organization) == before


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_cannot_use_saved_views(owner, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()

    assert_error(client.get(VIEWS), 403, "PERMISSION_DENIED")
    assert_error(post_json(client, VIEWS, {"name": "x"}), 403, "PERMISSION_DENIED")
    assert view_rows(owner.organization) == []


# === marketing consent ==============================================================================================


def consent_url(patient) -> str:
    return f"/patients/{patient.id}/marketing-consent"


def record(client: Client, patient, **fields):
    payload = {"channel": "sms", "status": "granted", "source": "form", "evidence": "", **fields}
    response = post_json(client, consent_url(patient), payload)
    assert response.status_code == 201, response.content
    return response.json()


def test_recording_consent_returns_the_record(owner, api):
    patient = PatientFactory(organization=owner.organization)

    body = record(api, patient, channel="email", status="granted", source="form", evidence="Form v3, box ticked")

    assert set(body) == CONSENT_FIELDS
    assert body["channel"] == "email"
    assert body["status"] == "granted"
    assert body["source"] == "form"
    assert body["evidence"] == "Form v3, box ticked"
    assert body["recordedAt"].endswith("Z")
    assert body["recordedByUserId"] == str(owner.user.id)
    row = MarketingConsent.objects.for_org(owner.organization).get(id=body["id"])
    assert row.patient_id == patient.id


def test_withdrawn_sms_opts_out_and_granted_again_opts_back_in(owner, api):
    org = owner.organization
    patient = PatientFactory(organization=org, sms_opt_out=False)
    evidence = "Patient replied STOP to the reminder"

    record(api, patient, channel="sms", status="withdrawn", source="sms_reply", evidence=evidence)

    assert api.get(f"/patients/{patient.id}").json()["smsOptOut"] is True
    assert api.get(f"/patients/{patient.id}").json()["emailOptOut"] is False
    updates = list(
        Event.objects.for_org(org).filter(type="patient.updated", subject_id=str(patient.id)).order_by("created_at")
    )
    assert len(updates) == 1
    assert updates[0].data["changedFields"] == ["smsOptOut"]
    assert evidence not in json.dumps(updates[0].data)
    assert "STOP" not in json.dumps(updates[0].data)

    record(api, patient, channel="sms", status="granted", source="in_person", evidence="Signed form at desk")

    assert api.get(f"/patients/{patient.id}").json()["smsOptOut"] is False
    updates = list(
        Event.objects.for_org(org).filter(type="patient.updated", subject_id=str(patient.id)).order_by("created_at")
    )
    assert len(updates) == 2
    assert updates[1].data["changedFields"] == ["smsOptOut"]
    assert "Signed form" not in json.dumps(updates[1].data)


@pytest.mark.parametrize(("channel", "flag"), [("email", "emailOptOut"), ("whatsapp", "whatsappOptOut")])
def test_each_channel_feeds_its_own_opt_out(owner, api, channel, flag):
    patient = PatientFactory(organization=owner.organization)

    record(api, patient, channel=channel, status="withdrawn", source="phone")

    body = api.get(f"/patients/{patient.id}").json()
    assert body[flag] is True
    assert body["smsOptOut"] is False


def test_consent_shows_the_current_state_per_channel_and_the_history_newest_first(owner, api):
    patient = PatientFactory(organization=owner.organization)
    first = record(api, patient, channel="sms", status="granted", source="form")
    second = record(api, patient, channel="email", status="granted", source="form")
    third = record(api, patient, channel="sms", status="withdrawn", source="phone")

    response = api.get(consent_url(patient))

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"current", "smsOptOut", "emailOptOut", "whatsappOptOut", "history"}
    assert sorted((c["channel"], c["id"]) for c in body["current"]) == sorted(
        [("sms", third["id"]), ("email", second["id"])]
    )
    assert [c["id"] for c in body["history"]] == [third["id"], second["id"], first["id"]]
    assert body["smsOptOut"] is True
    assert body["emailOptOut"] is False
    assert body["whatsappOptOut"] is False
    embedded = api.get(f"/patients/{patient.id}", {"embed": "marketing"}).json()["marketing"]
    assert sorted(c["id"] for c in embedded["current"]) == sorted([third["id"], second["id"]])


def test_a_patient_without_consent_records(owner, api):
    patient = PatientFactory(organization=owner.organization, email_opt_out=True)

    body = api.get(consent_url(patient)).json()

    assert body == {"current": [], "smsOptOut": False, "emailOptOut": True, "whatsappOptOut": False, "history": []}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"channel": "pigeon", "status": "granted", "source": "form"}, "channel"),
        ({"channel": "phone", "status": "granted", "source": "form"}, "channel"),
        ({"channel": "sms", "status": "maybe", "source": "form"}, "status"),
        ({"channel": "sms", "status": "GRANTED", "source": "form"}, "status"),
        ({"status": "granted", "source": "form"}, "channel"),
        ({"channel": "sms", "source": "form"}, "status"),
        ({"channel": "sms", "status": "granted"}, "source"),
        ({"channel": "sms", "status": "granted", "source": ""}, "source"),
        ({"channel": "sms", "status": "granted", "source": "x" * 65}, "source"),
        ({"channel": "sms", "status": "granted", "source": "form", "evidence": None}, "evidence"),
    ],
)
def test_bad_consent_input_is_400(owner, api, payload, field):
    patient = PatientFactory(organization=owner.organization)
    before = consent_state(owner.organization)

    response = post_json(api, consent_url(patient), payload)

    assert_validation_error(response, field)
    assert consent_state(owner.organization) == before


def test_consent_on_a_merged_patient_is_409(owner, api):
    survivor = PatientFactory(organization=owner.organization)
    duplicate = PatientFactory(organization=owner.organization)
    merged = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})
    assert merged.status_code == 200, merged.content
    before = consent_state(owner.organization)

    response = post_json(api, consent_url(duplicate), {"channel": "sms", "status": "withdrawn", "source": "phone"})

    body = assert_error(response, 409, "PATIENT_MERGED")
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert consent_state(owner.organization) == before


def test_another_practices_patient_consent_is_404(owner, outsider, api):
    theirs = PatientFactory(organization=outsider.organization)
    record(outsider.api_client(), theirs, channel="email", status="granted", source="form", evidence="theirs")
    before = consent_state(outsider.organization)

    read = api.get(consent_url(theirs))
    write = post_json(api, consent_url(theirs), {"channel": "sms", "status": "withdrawn", "source": "phone"})

    assert_error(read, 404, "NOT_FOUND")
    assert_error(write, 404, "NOT_FOUND")
    assert consent_state(outsider.organization) == before


def test_analyst_reads_consent_but_cannot_record_it(owner, member_factory):
    analyst = member_factory(role="analyst", organization=owner.organization).api_client()
    patient = PatientFactory(organization=owner.organization)
    before = consent_state(owner.organization)

    assert analyst.get(consent_url(patient)).status_code == 200
    response = post_json(analyst, consent_url(patient), {"channel": "sms", "status": "withdrawn", "source": "phone"})

    assert_error(response, 403, "PERMISSION_DENIED")
    assert consent_state(owner.organization) == before


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_cannot_use_marketing_consent(owner, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()
    patient = PatientFactory(organization=owner.organization)

    assert_error(client.get(consent_url(patient)), 403, "PERMISSION_DENIED")
    assert_error(
        post_json(client, consent_url(patient), {"channel": "sms", "status": "granted", "source": "form"}),
        403,
        "PERMISSION_DENIED",
    )
