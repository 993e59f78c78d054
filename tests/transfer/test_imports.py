"""Patient imports through HTTP: upload, mapping and validation report, dry run, the background run (its task
function called directly), idempotency, resumption, no events, tenancy and roles."""

import pytest

from apps.events.models import Event
from apps.patients.models import Patient
from apps.transfer import files, services
from apps.transfer.models import ImportStatus, PatientImport
from tests.helpers import assert_error
from tests.transfer.conftest import HEADER, MAPPING, csv_bytes, good_rows, mapped, upload


@pytest.fixture
def start(commit):
    """POST …/start, its queued task run when the request's transaction commits (as in production)."""

    def post(client, import_id):
        with commit():
            return client.post(f"/transfer/core-imports/{import_id}/start")

    return post


def _patients(org):
    return Patient.objects.for_org(org)


def test_upload_detects_columns_suggests_a_mapping_and_previews(owner, api):
    response = upload(api, csv_bytes(good_rows(7), bom=True))

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "uploaded"
    assert body["columns"] == ["Patient ID", "Forename", "Surname", "Email", "Mobile", "DOB", "Postcode"]
    assert body["mapping"] == MAPPING
    assert body["rowsTotal"] == 7
    assert body["validation"] is None
    assert len(body["preview"]) == 5
    assert body["preview"][0][:3] == ["P1", "Anna1", "Rossi"]
    assert body["source"] == "csv" and body["format"] == "csv"
    assert _patients(owner.organization).count() == 0


def test_dentally_format_maps_its_known_columns(api):
    content = (
        b"id,title,first_name,last_name,email_address,mobile_phone,town,postcode\n1,Ms,Jo,Bloggs,j@x.io,,Leeds,LS1\n"
    )

    body = upload(api, content, format="dentally").json()

    assert body["format"] == "dentally"
    assert body["mapping"]["externalId"] == "id" and body["mapping"]["email"] == "email_address"
    assert body["mapping"]["city"] == "town"


@pytest.mark.parametrize(
    ("content", "fields", "status", "code"),
    [
        (b"", {}, 400, "IMPORT_FILE_INVALID"),  # empty
        (b"Patient ID,Forename\n", {}, 400, "IMPORT_FILE_INVALID"),  # header, no rows
        ("Patient ID,Forename\n1,Zoë\n".encode("latin-1"), {}, 400, "IMPORT_FILE_INVALID"),  # not UTF-8
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", {}, 400, "IMPORT_FILE_INVALID"),  # not text
        (b"a,a\n1,2\n", {}, 400, "IMPORT_FILE_INVALID"),  # a column named twice
        (b"a,,b\n1,2,3\n", {}, 400, "IMPORT_FILE_INVALID"),  # a column without a name
        (b"id,x\n1,2\n", {"format": "dentally"}, 400, "IMPORT_FILE_INVALID"),  # not the PMS's columns
        (b"id,x\n1,2\n", {"format": "xml"}, 400, "VALIDATION_ERROR"),
        (b"id,x\n1,2\n", {"source": "Bad Source!"}, 400, "VALIDATION_ERROR"),
        (b"id,x\n1,2\n", {"colour": "red"}, 400, "VALIDATION_ERROR"),
    ],
    ids=[
        "empty",
        "no-rows",
        "latin-1",
        "binary",
        "duplicate-column",
        "unnamed-column",
        "not-dentally",
        "format",
        "source",
        "unknown-field",
    ],
)
def test_bad_files_are_refused_and_nothing_is_stored(owner, api, content, fields, status, code):
    response = upload(api, content, **fields)

    assert_error(response, status, code)
    assert PatientImport.objects.for_org(owner.organization).count() == 0


def test_a_file_over_the_cap_is_413(owner, api, monkeypatch):
    monkeypatch.setattr(files, "MAX_IMPORT_BYTES", 100)

    response = upload(api, csv_bytes(good_rows(5)))

    body = assert_error(response, 413, "IMPORT_FILE_TOO_LARGE")
    assert body["details"]["maxBytes"] == 100
    assert PatientImport.objects.for_org(owner.organization).count() == 0


def test_json_instead_of_multipart_is_415(api):
    response = api.post("/transfer/core-imports", {"file": "x"}, content_type="application/json")

    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_bad_rows_are_reported_with_row_column_and_problem(owner, api):
    rows = [
        *good_rows(2),
        ",NoId,X,a@example.com,,,",  # row 4: no external id
        "P9,,X,b@example.com,,,",  # row 5: no first name
        "P10,Bad,X,not-an-email,,,",  # row 6
        "P11,Bad,X,,12,,",  # row 7: phone too short (and so no contact)
        "P12,Bad,X,c@example.com,,31/02/1990,",  # row 8: not a real date
        "P1,Again,X,d@example.com,,,",  # row 9: repeats row 2's id
        "P13,Short,X",  # row 10: too few cells
    ]
    body = mapped(api, csv_bytes(rows))

    assert body["status"] == "validated"
    assert body["validation"] == {"rowsValid": 2, "rowsInvalid": 7, "problemsTotal": 8}
    page = api.get(f"/transfer/core-imports/{body['id']}/problems?limit=100").json()
    assert page["total"] == 8 and page["limit"] == 100 and page["offset"] == 0
    found = {(p["row"], p["column"], p["problem"]) for p in page["items"]}
    assert (4, "Patient ID", "is required") in found
    assert (5, "Forename", "is required") in found
    assert (6, "Email", "is not an e-mail address") in found
    assert (7, "Mobile", "is not a phone number (6 to 15 digits)") in found
    assert (8, "DOB", "must be a real date as YYYY-MM-DD or DD/MM/YYYY") in found
    assert (9, "Patient ID", "repeats the id of row 2") in found
    assert (10, "", "has 3 cells; the header has 7") in found
    assert [p["row"] for p in page["items"]] == sorted(p["row"] for p in page["items"])

    csv_response = api.get(f"/transfer/core-imports/{body['id']}/problems/csv")
    assert csv_response.status_code == 200
    lines = b"".join(csv_response.streaming_content).decode().splitlines()
    assert lines[0] == "row,column,field,problem" and len(lines) == 9
    assert _patients(owner.organization).count() == 0


def test_problem_pages_are_bounded(api, django_assert_max_num_queries):
    body = mapped(api, csv_bytes([f"P{n},,X,,,," for n in range(30)]))

    with django_assert_max_num_queries(8):
        page = api.get(f"/transfer/core-imports/{body['id']}/problems?limit=10&offset=20").json()

    assert page["total"] == 60 and len(page["items"]) == 10 and page["offset"] == 20
    assert_error(api.get(f"/transfer/core-imports/{body['id']}/problems?limit=0"), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    ("mapping", "field"),
    [
        ({"firstName": "Forename", "email": "Email"}, "mapping"),  # no externalId
        ({**MAPPING, "shoeSize": "DOB"}, "mapping"),
        ({**MAPPING, "email": "E-mail"}, "mapping"),  # not a column of the file
        ({**MAPPING, "lastName": "Forename"}, "mapping"),  # one column, two fields
        ({"externalId": "Patient ID", "firstName": "Forename"}, "mapping"),  # no contact column
    ],
)
def test_bad_mappings_are_400_and_change_nothing(api, mapping, field):
    body = upload(api, csv_bytes(good_rows(2))).json()

    response = api.patch(f"/transfer/core-imports/{body['id']}", {"mapping": mapping}, content_type="application/json")

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in error["details"]["fields"]
    assert api.get(f"/transfer/core-imports/{body['id']}").json()["status"] == "uploaded"


def test_dry_run_says_what_would_happen_and_writes_nothing(owner, api):
    body = mapped(api, csv_bytes([*good_rows(3), "P99,,X,,,,"]))
    events_before = Event.objects.for_org(owner.organization).count()

    response = api.post(f"/transfer/core-imports/{body['id']}/dry-run")

    assert response.status_code == 200, response.content
    assert response.json() == {"created": 3, "updated": 0, "skipped": 0, "failed": 1}
    assert _patients(owner.organization).count() == 0
    assert Event.objects.for_org(owner.organization).count() == events_before


def test_start_runs_the_job_and_creates_patients_without_events(owner, api, start):
    body = mapped(api, csv_bytes([*good_rows(3), "P99,,X,,,,"]))

    response = start(api, body["id"])

    assert response.status_code == 202, response.content
    run = api.get(f"/transfer/core-imports/{body['id']}").json()
    assert run["status"] == "completed"  # eager Celery in tests ran the task function on commit
    assert run["progress"] == {"rowsDone": 4, "rowsTotal": 4, "created": 3, "updated": 0, "skipped": 0, "failed": 1}
    patient = _patients(owner.organization).get(external_id="P1")
    assert (patient.first_name, patient.email, patient.phone_mobile) == ("Anna1", "anna1@example.com", "+447700900001")
    assert str(patient.date_of_birth) == "1980-02-02" and patient.status == "patient"
    assert patient.external_source == "csv"
    assert Event.objects.for_org(owner.organization).count() == 0
    # Imported patients are found by the list's typo-tolerant search (the search keys are right).
    found = api.get("/patients?q=anna2@example.com&sort=relevance").json()
    assert found["items"][0]["id"] == str(_patients(owner.organization).get(external_id="P2").id)


def test_a_re_run_updates_and_never_duplicates(owner, api, start):
    first = mapped(api, csv_bytes(good_rows(3)))
    start(api, first["id"])
    rows = good_rows(3)
    rows[1] = rows[1].replace("Anna2", "Annie")

    second = mapped(api, csv_bytes([*rows, *good_rows(1, start=4)]))
    assert api.post(f"/transfer/core-imports/{second['id']}/dry-run").json() == {
        "created": 1,
        "updated": 1,
        "skipped": 2,
        "failed": 0,
    }
    start(api, second["id"])

    progress = api.get(f"/transfer/core-imports/{second['id']}").json()["progress"]
    assert (progress["created"], progress["updated"], progress["skipped"]) == (1, 1, 2)
    assert _patients(owner.organization).count() == 4
    assert _patients(owner.organization).get(external_id="P2").first_name == "Annie"


def test_another_source_is_another_namespace(owner, api, start):
    start(api, mapped(api, csv_bytes(good_rows(2)))["id"])
    other = mapped(api, csv_bytes(good_rows(2)), source="oldpms")
    start(api, other["id"])

    assert _patients(owner.organization).count() == 4


def test_an_interrupted_run_resumes_from_its_last_committed_chunk(
    owner, api, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(services, "CHUNK_ROWS", 2)
    body = mapped(api, csv_bytes([*good_rows(4), "P50,,X,,,,", *good_rows(2, start=5)]))
    with django_capture_on_commit_callbacks(execute=False):  # the worker is "lost": the task never runs
        assert api.post(f"/transfer/core-imports/{body['id']}/start").status_code == 202

    assert services.run_import(body["id"], max_chunks=2) == ImportStatus.RUNNING  # then the worker dies
    run = PatientImport.objects.for_org(owner.organization).get(id=body["id"])
    assert (run.rows_done, run.created) == (4, 4)
    assert _patients(owner.organization).count() == 4
    # Not stalled yet: resume refuses; a second runner with a stale checkpoint does nothing.
    assert_error(api.post(f"/transfer/core-imports/{body['id']}/resume"), 409, "IMPORT_STATE_CONFLICT")

    assert services.run_import(body["id"]) == ImportStatus.COMPLETED
    run.refresh_from_db()
    assert (run.status, run.rows_done, run.created, run.failed) == ("completed", 7, 6, 1)
    assert _patients(owner.organization).count() == 6


def test_the_sweep_and_resume_continue_a_stalled_import(owner, api, clock, django_capture_on_commit_callbacks):
    body = mapped(api, csv_bytes(good_rows(3)))
    with django_capture_on_commit_callbacks(execute=False):
        api.post(f"/transfer/core-imports/{body['id']}/start")
    clock.shift(services.STALE_SECONDS + 1)

    assert services.sweep_stalled_imports() == 1  # eager: the queued task ran at once

    assert api.get(f"/transfer/core-imports/{body['id']}").json()["status"] == "completed"
    assert _patients(owner.organization).count() == 3


def test_a_failed_import_resumes(owner, api, monkeypatch, start, commit):
    body = mapped(api, csv_bytes(good_rows(3)))
    calls = {"n": 0}
    real = services.import_patients

    def failing(**kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("database went away")
        return real(**kwargs)

    monkeypatch.setattr(services, "import_patients", failing)
    start(api, body["id"])
    failed = api.get(f"/transfer/core-imports/{body['id']}").json()
    assert (failed["status"], failed["errorCode"], failed["progress"]["rowsDone"]) == ("failed", "unexpected_error", 0)
    assert_error(start(api, body["id"]), 409, "IMPORT_STATE_CONFLICT")

    with commit():
        assert api.post(f"/transfer/core-imports/{body['id']}/resume").status_code == 202

    assert api.get(f"/transfer/core-imports/{body['id']}").json()["status"] == "completed"
    assert _patients(owner.organization).count() == 3


def test_state_conflicts(api, start):
    body = upload(api, csv_bytes(good_rows(2))).json()

    assert_error(api.post(f"/transfer/core-imports/{body['id']}/dry-run"), 409, "IMPORT_STATE_CONFLICT")
    assert_error(start(api, body["id"]), 409, "IMPORT_STATE_CONFLICT")
    mapped_id = mapped(api, csv_bytes(good_rows(2)))["id"]
    start(api, mapped_id)
    response = api.put(f"/transfer/core-imports/{mapped_id}", {"mapping": MAPPING}, content_type="application/json")
    assert_error(response, 409, "IMPORT_STATE_CONFLICT")


def test_list_is_newest_first_and_bounded(api, django_assert_max_num_queries):
    ids = [upload(api, csv_bytes(good_rows(1))).json()["id"] for _ in range(3)]

    with django_assert_max_num_queries(8):
        page = api.get("/transfer/core-imports?limit=2").json()

    assert [item["id"] for item in page["items"]] == ids[::-1][:2]
    assert page["nextCursor"]


def test_another_practice_sees_nothing(owner, api, outsider):
    body = mapped(api, csv_bytes(good_rows(2)))
    theirs = outsider.api_client()

    for method, path in [
        ("get", ""),
        ("get", "/problems"),
        ("get", "/problems/csv"),
        ("post", "/dry-run"),
        ("post", "/start"),
        ("post", "/resume"),
    ]:
        assert_error(getattr(theirs, method)(f"/transfer/core-imports/{body['id']}{path}"), 404, "NOT_FOUND")
    response = theirs.put(f"/transfer/core-imports/{body['id']}", {"mapping": MAPPING}, content_type="application/json")
    assert_error(response, 404, "NOT_FOUND")
    assert theirs.get("/transfer/core-imports").json()["items"] == []
    assert PatientImport.objects.for_org(owner.organization).get(id=body["id"]).status == "validated"


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "dentist"])
def test_roles_without_transfer_manage_are_refused(owner, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()

    assert_error(upload(client, csv_bytes(good_rows(1))), 403, "PERMISSION_DENIED")
    assert_error(client.get("/transfer/core-imports"), 403, "PERMISSION_DENIED")
    assert PatientImport.objects.for_org(owner.organization).count() == 0


def test_a_manager_may_import(owner, manager, start):
    client = manager.api_client()

    body = mapped(client, csv_bytes(good_rows(1)))

    assert start(client, body["id"]).status_code == 202
    assert _patients(owner.organization).count() == 1


def test_header_only_problems_and_lead_sources(owner, api, start):
    header = HEADER.replace("Postcode", "Source")
    body = mapped(
        api,
        csv_bytes([r.replace("SW1A 1AA", "Google") for r in good_rows(2)], header=header),
        mapping={**{k: v for k, v in MAPPING.items() if k != "postalCode"}, "leadSource": "Source"},
    )

    start(api, body["id"])

    patients = _patients(owner.organization).select_related("lead_source")
    assert {p.lead_source.name for p in patients} == {"Google"}
