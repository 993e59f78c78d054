"""Exports through HTTP: the zip's contents, progress, the signed link (expiry, tampering), audit entries, tenancy
and roles. The build task runs when the request's transaction commits."""

import csv
import io
import json
import zipfile
from datetime import timedelta

import pytest

from apps.audit.models import AuditEntry
from apps.tasks.public import Task
from apps.transfer import exports, services
from apps.transfer.models import DataExport
from tests.factories import PatientFactory
from tests.helpers import assert_error


@pytest.fixture
def data(owner, outsider):
    mine = [PatientFactory(organization=owner.organization, first_name=f"Mine{n}") for n in range(3)]
    mine.append(PatientFactory(organization=owner.organization, first_name="=HYPERLINK(1)"))
    Task.objects.create(organization=owner.organization, title="Call back", patient=mine[0], created_by=owner.user)
    PatientFactory(organization=outsider.organization, first_name="Theirs")
    Task.objects.create(organization=outsider.organization, title="Their task", created_by=outsider.user)
    return mine


def _create(api, commit, body=None):
    with commit():
        if body is None:
            response = api.post("/transfer/core-exports", content_type="application/json")
        else:
            response = api.post("/transfer/core-exports", body, content_type="application/json")
    assert response.status_code == 202, response.content
    return api.get(f"/transfer/core-exports/{response.json()['id']}").json()


def _zip(response) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def _csv(archive: zipfile.ZipFile, name: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(archive.read(name).decode())))


def test_export_builds_a_zip_of_the_practice_data_only(owner, api, commit, data):
    export = _create(api, commit)

    assert export["status"] == "ready"
    assert export["progress"] == {"rowsDone": 5, "rowsTotal": 5}
    assert export["counts"] == {"patients": 4, "journeys": 0, "tasks": 1, "appointments": 0, "conversations": 0}
    assert export["downloadUrl"].startswith(f"/transfer/core-exports/{export['id']}/download?token=")
    response = api.get(export["downloadUrl"])
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    archive = _zip(response)
    assert sorted(archive.namelist()) == [
        "appointments.csv",
        "conversations.csv",
        "journeys.csv",
        "manifest.json",
        "patients.csv",
        "tasks.csv",
    ]
    patients = _csv(archive, "patients.csv")
    assert {row["firstName"] for row in patients} == {"Mine0", "Mine1", "Mine2", "'=HYPERLINK(1)"}
    assert {row["id"] for row in patients} == {str(p.id) for p in data}
    assert [row["title"] for row in _csv(archive, "tasks.csv")] == ["Call back"]
    conversations_header = archive.read("conversations.csv").decode().splitlines()[0]
    assert "body" not in conversations_header.lower()
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["organizationId"] == str(owner.organization.id)
    assert manifest["datasets"]["patients"] == {"file": "patients.csv", "rows": 4}
    assert manifest["generatedAt"].endswith("Z")


def test_datasets_can_be_chosen_and_bad_bodies_are_400(owner, api, commit, data):
    export = _create(api, commit, {"datasets": ["tasks"]})

    assert export["datasets"] == ["tasks"] and export["counts"] == {"tasks": 1}
    for body in ({"datasets": ["invoices"]}, {"datasets": []}, {"datasets": "tasks"}, {"colour": 1}):
        response = api.post("/transfer/core-exports", body, content_type="application/json")
        assert_error(response, 400, "VALIDATION_ERROR")
    assert DataExport.objects.for_org(owner.organization).count() == 1


def test_audit_entries_record_creation_and_every_download(owner, api, commit, data):
    export = _create(api, commit)
    api.get(export["downloadUrl"])
    api.get(export["downloadUrl"])

    actions = list(
        AuditEntry.objects.filter(organization_id=owner.organization.id, subject_type="export")
        .order_by("created_at")
        .values_list("action", "subject_id", "user_id")
    )
    assert actions == [
        ("export.created", export["id"], owner.user.id),
        ("export.downloaded", export["id"], owner.user.id),
        ("export.downloaded", export["id"], owner.user.id),
    ]
    # A download names the credential and where it came from, like the API write entries.
    download = AuditEntry.objects.filter(organization_id=owner.organization.id, action="export.downloaded").first()
    key = owner.user.api_keys.get()
    assert (download.credential_kind, download.credential_id) == ("api_key", str(key.id))
    assert download.address_block == "127.0.0.0/24"


def test_an_expired_link_is_410_and_a_fresh_read_gives_a_new_one(api, commit, data, clock):
    export = _create(api, commit)
    clock.shift(exports.LINK_LIFETIME + timedelta(seconds=1))

    assert_error(api.get(export["downloadUrl"]), 410, "EXPORT_LINK_EXPIRED")

    fresh = api.get(f"/transfer/core-exports/{export['id']}").json()["downloadUrl"]
    assert api.get(fresh).status_code == 200


def test_a_tampered_or_borrowed_link_is_403(owner, api, commit, data):
    first, second = _create(api, commit), _create(api, commit)
    token = first["downloadUrl"].split("token=")[1]

    assert_error(api.get(first["downloadUrl"][:-2] + "xx"), 403, "EXPORT_LINK_INVALID")
    assert_error(api.get(f"/transfer/core-exports/{second['id']}/download?token={token}"), 403, "EXPORT_LINK_INVALID")
    assert_error(api.get(f"/transfer/core-exports/{first['id']}/download"), 400, "VALIDATION_ERROR")
    assert not AuditEntry.objects.filter(organization_id=owner.organization.id, action="export.downloaded").exists()


def test_not_ready_and_purged_files(owner, api, commit, data, clock, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        queued = api.post("/transfer/core-exports", content_type="application/json").json()
    export = DataExport.objects.for_org(owner.organization).get(id=queued["id"])
    url, _ = exports.link_for(export)
    assert queued["status"] == "queued" and queued["downloadUrl"] is None
    assert_error(api.get(url), 409, "EXPORT_NOT_READY")

    ready = _create(api, commit)
    clock.shift(exports.FILE_RETENTION + timedelta(minutes=1))
    assert services.purge_export_files() == 1
    url, _ = exports.link_for(DataExport.objects.for_org(owner.organization).get(id=ready["id"]))
    assert_error(api.get(url), 410, "EXPORT_FILE_EXPIRED")
    assert api.get(f"/transfer/core-exports/{ready['id']}").json()["status"] == "expired"


def test_another_practice_cannot_reach_our_exports(owner, api, outsider, commit, data):
    export = _create(api, commit)
    theirs = outsider.api_client()

    assert_error(theirs.get(f"/transfer/core-exports/{export['id']}"), 404, "NOT_FOUND")
    assert_error(theirs.get(export["downloadUrl"]), 404, "NOT_FOUND")
    assert theirs.get("/transfer/core-exports").json()["items"] == []
    # Their own export holds none of our patients.
    their_export = _create(theirs, commit)
    names = {row["firstName"] for row in _csv(_zip(theirs.get(their_export["downloadUrl"])), "patients.csv")}
    assert names == {"Theirs"}


def test_list_is_newest_first_and_bounded(api, commit, data, django_assert_max_num_queries):
    ids = [_create(api, commit, {"datasets": ["tasks"]})["id"] for _ in range(3)]

    with django_assert_max_num_queries(8):
        page = api.get("/transfer/core-exports?limit=2").json()

    assert [item["id"] for item in page["items"]] == ids[::-1][:2]
    assert page["nextCursor"]


@pytest.mark.parametrize("role", ["front_desk", "analyst", "telesales", "hygienist"])
def test_other_roles_are_refused(owner, member_factory, role, commit, data, api):
    export = _create(api, commit)
    client = member_factory(role=role, organization=owner.organization).api_client()

    assert_error(client.post("/transfer/core-exports", content_type="application/json"), 403, "PERMISSION_DENIED")
    assert_error(client.get(export["downloadUrl"]), 403, "PERMISSION_DENIED")
    assert DataExport.objects.for_org(owner.organization).count() == 1
