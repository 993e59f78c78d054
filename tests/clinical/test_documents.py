"""Clinical storage: /clinical/patients/{id}/documents (upload, list, read, download, delete)."""

import hashlib

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.clinical.models import ClinicalDocument
from tests.clinical.conftest import DICOM, JPEG, PDF, PNG
from tests.conftest import make_member
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint


def _path(patient, *rest):
    return "/".join([f"/clinical/patients/{patient.id}/documents", *rest])


def _upload(client, patient, content=PDF, *, name="x-ray report.pdf", content_type="application/pdf", **fields):
    data = {"file": SimpleUploadedFile(name, content, content_type=content_type), "category": "xray", **fields}
    return client.post(_path(patient), data)


def _stored(settings, name):
    storage = storages[settings.SVC_MEDIA_STORAGE_ALIAS]
    if not storage.exists(name):
        return None
    with storage.open(name, "rb") as handle:
        return handle.read()


def test_upload_list_read_download_delete(dentist, owner, patient, org, settings, django_capture_on_commit_callbacks):
    client = dentist.session_client()

    response = _upload(client, patient, name="Anna Bianchi panoramic.pdf")

    assert response.status_code == 201, response.content
    document = response.json()
    assert document["name"] == "Anna Bianchi panoramic.pdf"
    assert (document["category"], document["contentType"], document["size"]) == ("xray", "application/pdf", len(PDF))
    assert document["sha256"] == hashlib.sha256(PDF).hexdigest()
    assert document["uploadedById"] == str(dentist.user.id)
    row = ClinicalDocument.objects.for_org(org).get(id=document["id"])
    assert "Anna" not in row.storage_name and "Anna" not in row.name_encrypted
    assert _stored(settings, row.storage_name) == PDF

    photo = _upload(client, patient, JPEG, name="smile.jpg", content_type="image/jpeg", category="photo").json()
    listed = owner.session_client().get(_path(patient)).json()["items"]  # owners read (clinical:read)
    assert [d["id"] for d in listed] == [photo["id"], document["id"]]
    assert [d["id"] for d in client.get(_path(patient) + "?category=photo").json()["items"]] == [photo["id"]]
    assert client.get(_path(patient, document["id"])).json() == document

    download = client.get(_path(patient, document["id"], "download"))
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == PDF
    assert download["Content-Type"] == "application/pdf"
    assert download["Content-Disposition"] == (
        "attachment; filename=\"Anna Bianchi panoramic.pdf\"; filename*=UTF-8''Anna%20Bianchi%20panoramic.pdf"
    )
    assert download["X-Content-Type-Options"] == "nosniff"
    assert download["Cache-Control"] == "private, no-store"

    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(_path(patient, document["id"])).status_code == 204
    assert not ClinicalDocument.objects.for_org(org).filter(id=document["id"]).exists()
    assert _stored(settings, row.storage_name) is None
    assert_error(client.get(_path(patient, document["id"], "download")), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("content", "content_type"),
    [(PNG, "image/png"), (DICOM, "application/dicom"), (JPEG, "image/jpg")],
    ids=["png", "dicom", "jpeg-alias"],
)
def test_accepted_types(dentist, patient, content, content_type):
    response = _upload(dentist.session_client(), patient, content, name="f", content_type=content_type)
    assert response.status_code == 201, response.content


def test_refused_files(dentist, patient, org, settings):
    client = dentist.session_client()
    text = _upload(client, patient, b"hello", name="notes.txt", content_type="text/plain")
    assert "file" in assert_error(text, 400, "VALIDATION_ERROR")["details"]["fields"]
    renamed = _upload(client, patient, PDF, name="scan.png", content_type="image/png")
    assert assert_error(renamed, 400, "VALIDATION_ERROR")["details"]["fields"]["file"] == [
        "the file's content is not image/png"
    ]
    assert "file" in assert_error(_upload(client, patient, b""), 400, "VALIDATION_ERROR")["details"]["fields"]
    assert (
        "category"
        in assert_error(_upload(client, patient, category="invoice"), 400, "VALIDATION_ERROR")["details"]["fields"]
    )
    no_category = client.post(_path(patient), {"file": SimpleUploadedFile("a.pdf", PDF, "application/pdf")})
    assert "category" in assert_error(no_category, 400, "VALIDATION_ERROR")["details"]["fields"]
    no_file = client.post(_path(patient), {"category": "xray"})
    assert "file" in assert_error(no_file, 400, "VALIDATION_ERROR")["details"]["fields"]
    unknown = _upload(client, patient, colour="red")
    assert "colour" in assert_error(unknown, 400, "VALIDATION_ERROR")["details"]["fields"]
    as_json = client.post(_path(patient), {"category": "xray"}, content_type="application/json")
    assert_error(as_json, 415, "UNSUPPORTED_MEDIA_TYPE")

    settings.SVC_CLINICAL_DOCUMENT_MAX_BYTES = len(PDF) - 1
    too_large = assert_error(_upload(client, patient), 413, "CLINICAL_DOCUMENT_TOO_LARGE")
    assert too_large["details"]["maxBytes"] == len(PDF) - 1
    assert not ClinicalDocument.objects.for_org(org).exists()


def test_a_body_over_the_route_cap_is_413_before_parsing(dentist, patient):
    from apps.clinical.api.views import DocumentListView

    client = dentist.session_client()
    response = client.post(
        _path(patient),
        b"x",
        content_type="multipart/form-data; boundary=b",
        CONTENT_LENGTH=str(DocumentListView.max_body_bytes + 1),
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_permissions(owner, front_desk, dentist, member_factory, patient, org):
    document = _upload(dentist.session_client(), patient).json()
    nurse = member_factory(role="nurse", organization=org)
    assert _upload(nurse.session_client(), patient).status_code == 201  # clinical:write
    # Owners read the record but do not write clinical content.
    assert_error(_upload(owner.session_client(), patient), 403, "PERMISSION_DENIED")
    assert_error(owner.session_client().delete(_path(patient, document["id"])), 403, "PERMISSION_DENIED")
    # Front desk opens the clinical workspace but reads no clinical content.
    desk = front_desk.session_client()
    for path in (_path(patient), _path(patient, document["id"]), _path(patient, document["id"], "download")):
        assert_error(desk.get(path), 403, "PERMISSION_DENIED")
    assert ClinicalDocument.objects.for_org(org).count() == 2


def test_other_practices(dentist, outsider, patient, org):
    theirs = PatientFactory(organization=outsider.organization)
    their_dentist = make_member(role="dentist", organization=outsider.organization)
    their_doc = _upload(their_dentist.session_client(), theirs).json()
    client = dentist.session_client()
    assert_error(_upload(client, theirs), 404, "NOT_FOUND")
    assert_error(client.get(_path(theirs)), 404, "NOT_FOUND")
    # Their document under our patient's path, or under theirs: the same 404.
    for path in (_path(patient, their_doc["id"]), _path(theirs, their_doc["id"])):
        assert_error(client.get(path), 404, "NOT_FOUND")
        assert_error(client.get(path + "/download"), 404, "NOT_FOUND")
        assert_error(client.delete(path), 404, "NOT_FOUND")
    assert ClinicalDocument.objects.for_org(outsider.organization).count() == 1
    # Another of our own patients' document is not under this patient either.
    mine = _upload(client, patient).json()
    other_patient = PatientFactory(organization=org)
    assert_error(client.get(_path(other_patient, mine["id"], "download")), 404, "NOT_FOUND")


def test_machine_credentials_and_a_closed_workspace(dentist, closed, patient):
    raw, _ = mint(dentist, "read write")
    for client in (dentist.api_client(), bearer(raw)):
        assert_error(client.get(_path(patient)), 403, "transport_not_allowed")
        assert_error(_upload(client, patient), 403, "transport_not_allowed")
    closed_patient = PatientFactory(organization=closed.organization)
    assert_error(closed.session_client().get(_path(closed_patient)), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert_error(closed.api_client().get(_path(closed_patient)), 403, "PMS_WORKSPACE_UNAVAILABLE")
