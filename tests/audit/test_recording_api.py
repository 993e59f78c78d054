"""API writes are recorded: one entry per authenticated write answered 2xx, with who, what and field names (never
values); reads, refusals and failures record nothing."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.audit.models import AuditEntry
from tests.audit.conftest import entries_of
from tests.oauth.tokens import bearer, mint

JSON = "application/json"
SECRET_NAME = "Zyxwvutsrq"


def create_patient(client, **request_extra):
    body = {"firstName": SECRET_NAME, "email": "z@example.com"}
    return client.post("/patients", body, content_type=JSON, **request_extra)


def assert_no_values(entry):
    flat = repr([getattr(entry, f.attname) for f in AuditEntry._meta.fields])
    assert SECRET_NAME not in flat and "z@example.com" not in flat


def test_a_session_write_records_who_what_and_field_names(owner):
    client = owner.session_client()
    response = create_patient(client, REMOTE_ADDR="198.51.100.77")
    assert response.status_code == 201, response.content
    patient_id = response.json()["id"]

    [entry] = entries_of(owner.organization)
    assert entry.source == "api"
    assert entry.user_id == owner.user.id
    assert (entry.credential_kind, entry.credential_id, entry.oauth_client_id) == ("session", "", "")
    assert (entry.method, entry.route, entry.action) == ("POST", "/patients", "create")
    assert (entry.subject_type, entry.subject_id) == ("patient", patient_id)
    assert entry.fields == ["email", "firstName"]
    assert entry.status_code == 201
    assert entry.address_block == "198.51.100.0/24"
    assert entry.written == {}
    assert_no_values(entry)


def test_an_api_key_write_records_the_key_and_the_path_id(owner):
    from apps.accounts.models import ApiKey

    api = owner.api_client()
    patient_id = create_patient(api).json()["id"]
    response = api.patch(f"/patients/{patient_id}", {"lastName": "Quux", "phoneMobile": None}, content_type=JSON)
    assert response.status_code == 200, response.content

    created, updated = entries_of(owner.organization)
    key = ApiKey.objects.get(user=owner.user)
    assert (created.credential_kind, created.credential_id) == ("api_key", str(key.id))
    assert (updated.method, updated.route, updated.action) == ("PATCH", "/patients/{id}", "update")
    assert (updated.subject_type, updated.subject_id) == ("patient", patient_id)
    assert updated.fields == ["lastName", "phoneMobile"]
    assert updated.address_block == "127.0.0.0/24"  # the test client's REMOTE_ADDR, as a /24 block
    assert "Quux" not in repr(updated.fields)


def test_an_oauth_write_records_the_connection_and_the_client(owner):
    raw, token = mint(owner)
    response = create_patient(bearer(raw))
    assert response.status_code == 201, response.content

    [entry] = entries_of(owner.organization)
    assert entry.credential_kind == "oauth"
    assert entry.credential_id == str(token.connection_id)
    assert entry.oauth_client_id == token.application.client_id
    assert entry.user_id == owner.user.id
    assert_no_values(entry)


def test_a_verb_route_and_a_delete_are_named_by_their_action(owner):
    api = owner.api_client()
    patient_id = create_patient(api).json()["id"]
    archived = api.post(f"/patients/{patient_id}/archive", {"reason": "moved away"}, content_type=JSON)
    assert archived.status_code == 200, archived.content
    tag = api.post("/tags", {"name": "VIP"}, content_type=JSON)
    assert tag.status_code == 201, tag.content
    deleted = api.delete(f"/tags/{tag.json()['id']}")
    assert deleted.status_code == 204, deleted.content

    rows = entries_of(owner.organization)
    assert [(e.action, e.route, e.subject_type) for e in rows] == [
        ("create", "/patients", "patient"),
        ("archive", "/patients/{id}/archive", "patient"),
        ("create", "/tags", "tag"),
        ("delete", "/tags/{id}", "tag"),
    ]
    assert rows[1].subject_id == patient_id and rows[1].fields == ["reason"]
    assert rows[3].subject_id == tag.json()["id"] and rows[3].status_code == 204


def test_reads_record_nothing(owner):
    api = owner.api_client()
    patient_id = create_patient(api).json()["id"]
    before = AuditEntry.objects.count()
    assert api.get("/patients").status_code == 200
    assert api.get(f"/patients/{patient_id}").status_code == 200
    assert api.get("/audit-log").status_code == 200
    assert AuditEntry.objects.count() == before


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda api: api.post("/patients", {"firstName": ""}, content_type=JSON), id="400-invalid"),
        pytest.param(lambda api: api.post("/patients", b"{", content_type=JSON), id="400-not-json"),
        pytest.param(
            lambda api: api.patch(
                "/patients/00000000-0000-4000-8000-000000000000", {"lastName": "x"}, content_type=JSON
            ),
            id="404",
        ),
        pytest.param(lambda api: api.put("/patients", {}, content_type=JSON), id="405"),
    ],
)
def test_refused_and_failed_writes_record_nothing(owner, call):
    response = call(owner.api_client())
    assert 400 <= response.status_code < 500
    assert AuditEntry.objects.count() == 0


def test_a_role_refusal_records_nothing(member_factory, owner):
    analyst = member_factory(role="analyst", organization=owner.organization)
    response = create_patient(analyst.api_client())
    assert response.status_code == 403
    assert AuditEntry.objects.count() == 0


def test_unauthenticated_and_public_routes_record_nothing(owner):
    from django.test import Client

    assert create_patient(Client()).status_code == 401
    owner.session_client()  # POST /auth/sign-in/email: a public route
    assert AuditEntry.objects.count() == 0


def test_recording_adds_one_insert_per_write_and_nothing_per_read(owner):
    api = owner.api_client()
    patient_id = create_patient(api).json()["id"]
    with CaptureQueriesContext(connection) as write:
        assert api.patch(f"/patients/{patient_id}", {"lastName": "Q"}, content_type=JSON).status_code == 200
    inserts = [q["sql"] for q in write.captured_queries if 'INTO "audit_auditentry"' in q["sql"]]
    assert len(inserts) == 1
    with CaptureQueriesContext(connection) as read:
        assert api.get(f"/patients/{patient_id}").status_code == 200
    assert not [q for q in read.captured_queries if "audit_auditentry" in q["sql"]]


def test_an_audit_failure_is_logged_and_the_write_still_stands(owner, monkeypatch, caplog):
    from apps.audit import middleware

    def broken(**fields):
        raise RuntimeError("audit store unavailable")

    monkeypatch.setattr(middleware, "record", broken)
    response = create_patient(owner.api_client())
    assert response.status_code == 201, response.content
    from apps.patients.public import Patient

    assert Patient.objects.for_org(owner.organization).filter(pk=response.json()["id"]).exists()
    assert AuditEntry.objects.count() == 0
    assert "audit entry not recorded for POST patients: RuntimeError" in caplog.text
    assert SECRET_NAME not in caplog.text
