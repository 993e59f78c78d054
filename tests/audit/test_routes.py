"""GET /audit-log, /audit-log/{id}, /audit-log/export and /compliance/retention: filters, paging, CSV, tenancy,
roles; the log has no route that changes anything."""

import csv
import io

import pytest

from apps.audit.models import AuditEntry
from tests.audit.conftest import EXPORT, LOG, make_entry
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_the_list_is_newest_first_with_the_entry_shape(owner, outsider, logged, django_assert_max_num_queries):
    make_entry(outsider.organization, action="create")
    api = owner.api_client()
    with django_assert_max_num_queries(6):
        response = api.get(LOG)
    assert ids(response) == [str(e.id) for e in reversed(logged)]
    body = response.json()
    assert body["nextCursor"] is None
    first = body["items"][-1]
    assert first == {
        "id": str(logged[0].id),
        "createdAt": first["createdAt"],
        "source": "api",
        "userId": str(owner.user.id),
        "credentialKind": "session",
        "credentialId": "",
        "oauthClientId": "",
        "method": "PATCH",
        "route": "/patients/{id}",
        "action": "create",
        "subjectType": "patient",
        "subjectId": "00000000-0000-4000-8000-000000000000",
        "fields": ["=cmd", "firstName"],
        "written": {},
        "statusCode": None,
        "addressBlock": "203.0.113.0/24",
    }


def test_cursor_paging(owner, logged):
    api = owner.api_client()
    first = api.get(f"{LOG}?limit=2").json()
    second = api.get(f"{LOG}?limit=2&cursor={first['nextCursor']}").json()
    third = api.get(f"{LOG}?limit=2&cursor={second['nextCursor']}").json()
    seen = [i["id"] for page in (first, second, third) for i in page["items"]]
    assert seen == [str(e.id) for e in reversed(logged)]
    assert third["nextCursor"] is None


@pytest.mark.parametrize(
    "query, expected",
    [
        ("source=admin", [3]),
        ("credentialKind=api_key", [1]),
        ("action=delete", [2]),
        ("subjectType=patient&subjectId=00000000-0000-4000-8000-000000000004", [4]),
        ("method=PATCH&source=command", [4]),
        ("method=DELETE", []),
    ],
)
def test_filters(owner, logged, query, expected):
    assert ids(owner.api_client().get(f"{LOG}?{query}")) == [str(logged[i].id) for i in reversed(expected)]


def test_time_and_user_filters(owner, logged):
    api = owner.api_client()
    start = logged[1].created_at.isoformat().replace("+00:00", "Z")
    end = logged[3].created_at.isoformat().replace("+00:00", "Z")
    assert ids(api.get(LOG, {"from": start, "to": end})) == [str(logged[2].id), str(logged[1].id)]
    assert ids(api.get(LOG, {"userId": str(owner.user.id)})) == [str(e.id) for e in reversed(logged[:4])]


@pytest.mark.parametrize(
    "query, field",
    [
        ("from=yesterday", "from"),
        ("to=2026-13-01", "to"),
        ("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "to"),
        ("userId=nobody", "userId"),
        ("source=ftp", "source"),
        ("credentialKind=password", "credentialKind"),
        ("method=GET", "method"),
        ("action=" + "x" * 65, "action"),
        ("subjectId=p4", "subjectId"),
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("cursor=bogus", "cursor"),
        ("colour=red", "colour"),
    ],
)
def test_bad_filters_are_400_naming_the_parameter(owner, logged, query, field):
    for path in (LOG, EXPORT):
        if path == EXPORT and field in ("limit", "cursor"):
            continue
        body = assert_error(owner.api_client().get(f"{path}?{query}"), 400, "VALIDATION_ERROR")
        assert field in body["details"]["fields"], body


def test_detail_and_tenancy(owner, outsider, logged):
    theirs = make_entry(outsider.organization, action="create", subject_id="secret-subject")
    api = owner.api_client()
    response = api.get(f"{LOG}/{logged[0].id}")
    assert response.status_code == 200 and response.json()["id"] == str(logged[0].id)
    assert_error(api.get(f"{LOG}/{theirs.id}"), 404, "NOT_FOUND")
    assert_error(api.get(f"{LOG}/00000000-0000-4000-8000-000000000000"), 404, "NOT_FOUND")
    assert_error(api.get(f"{LOG}/not-a-uuid"), 400, "VALIDATION_ERROR")
    assert str(theirs.id) not in ids(api.get(LOG))
    assert "secret-subject" not in api.get(EXPORT).getvalue().decode()
    # and the other way round
    assert_error(outsider.api_client().get(f"{LOG}/{logged[0].id}"), 404, "NOT_FOUND")
    assert ids(outsider.api_client().get(LOG)) == [str(theirs.id)]


def test_platform_entries_without_a_practice_are_in_no_list(owner, logged):
    platform = AuditEntry.objects.create(source="command", action="run", organization_id=None)
    assert str(platform.id) not in ids(owner.api_client().get(LOG))
    assert_error(owner.api_client().get(f"{LOG}/{platform.id}"), 404, "NOT_FOUND")


@pytest.mark.parametrize("method", ["patch", "put", "delete"])
def test_entries_cannot_be_changed_or_removed_through_the_api(owner, logged, method):
    api = owner.api_client()
    response = getattr(api, method)(f"{LOG}/{logged[0].id}", {"action": "x"}, content_type="application/json")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert_error(api.post(LOG, {}, content_type="application/json"), 405, "METHOD_NOT_ALLOWED")
    assert AuditEntry.objects.get(pk=logged[0].pk).action == "create"
    assert AuditEntry.objects.count() == len(logged)  # the refusals themselves are not writes


def test_the_csv_export(owner, logged):
    response = owner.api_client().get(f"{EXPORT}?source=api")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="audit-log.csv"'
    rows = list(csv.reader(io.StringIO(response.getvalue().decode())))
    assert rows[0][:4] == ["id", "createdAt", "source", "userId"]
    assert [row[0] for row in rows[1:]] == [str(e.id) for e in reversed(logged[:3])]
    created = rows[-1]
    assert created[rows[0].index("fields")] == "'=cmd;firstName"  # joined; a formula-looking cell neutralised
    assert created[rows[0].index("addressBlock")] == "203.0.113.0/24"


def test_the_export_has_a_cap(owner, logged, monkeypatch):
    from apps.audit.api import views

    monkeypatch.setattr(views, "EXPORT_ROW_CAP", 4)
    body = assert_error(owner.api_client().get(EXPORT), 400, "EXPORT_TOO_LARGE")
    assert body["details"] == {"maxRows": 4}
    assert owner.api_client().get(f"{EXPORT}?source=api").status_code == 200


@pytest.mark.parametrize("role", ["front_desk", "analyst", "clinician"])
def test_other_roles_are_refused(member_factory, owner, logged, role):
    member = member_factory(role=role, organization=owner.organization)
    for path in (LOG, f"{LOG}/{logged[0].id}", EXPORT, "/compliance/retention"):
        assert_error(member.api_client().get(path), 403, "PERMISSION_DENIED")


def test_managers_read_and_oauth_needs_a_settings_or_read_scope(member_factory, owner, logged):
    manager = member_factory(role="manager", organization=owner.organization)
    assert len(ids(manager.api_client().get(LOG))) == len(logged)
    raw, _ = mint(owner, scopes="patients.read")
    assert_error(bearer(raw).get(LOG), 403, "INSUFFICIENT_SCOPE")
    raw, _ = mint(owner, scopes="settings.read")
    assert len(ids(bearer(raw).get(LOG))) == len(logged)


def test_retention_periods(owner, settings):
    settings.AUDIT_RETENTION_DAYS = 2190
    response = owner.api_client().get("/compliance/retention")
    assert response.status_code == 200, response.content
    items = {item["record"]: item for item in response.json()["items"]}
    assert items["audit_log"] == {
        "record": "audit_log",
        "description": items["audit_log"]["description"],
        "period": "P2190D",
        "periodDays": 2190.0,
        "countedFrom": "the entry's createdAt",
        "enforcedBy": "apps.audit.tasks.purge_expired (daily)",
        "source": "setting AUDIT_RETENTION_DAYS",
    }
    assert items["webhook_deliveries"]["period"] == "P30D"
    assert items["notifications"]["periodDays"] == settings.SVC_NOTIFICATIONS_RETENTION_DAYS
    assert items["email_event_receipts"]["period"] == "P2D"  # 48 hours
    assert set(items) == {
        "audit_log",
        "webhook_deliveries",
        "notifications",
        "parked_callbacks",
        "email_event_receipts",
        "payment_callback_receipts",
        "oauth_codes_exchanged",
        "oauth_codes_unused",
    }
