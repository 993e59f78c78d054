"""Admin and management command writes are recorded; the table is append-only in the database itself; the purge
deletes only entries past retention."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.audit.tasks import purge_expired
from apps.patients.public import Tag
from tests.audit.conftest import make_entry

TAGS = "/admin/patients/tag/"


@pytest.fixture
def staff(admin_user, admin_client):
    return admin_client


def admin_entries():
    return list(AuditEntry.objects.filter(source="admin").order_by("created_at", "id"))


def test_admin_add_change_and_delete_are_recorded(staff, admin_user, owner):
    org = owner.organization
    added = staff.post(f"{TAGS}add/", {"organization": str(org.id), "name": "Gold", "color": "#ffcc00"})
    assert added.status_code == 302, added.content
    tag = Tag.objects.for_org(org).get(name="Gold")
    changed = staff.post(
        f"{TAGS}{tag.id}/change/", {"organization": str(org.id), "name": "Platinum", "color": "#ffcc00"}
    )
    assert changed.status_code == 302, changed.content
    deleted = staff.post(f"{TAGS}{tag.id}/delete/", {"post": "yes"})
    assert deleted.status_code == 302, deleted.content

    create, update, delete = admin_entries()
    for entry in (create, update, delete):
        assert entry.organization_id == org.id
        assert entry.user_id == admin_user.id
        assert (entry.credential_kind, entry.method) == ("session", "POST")
        assert (entry.subject_type, entry.subject_id) == ("tag", str(tag.id))
        assert entry.address_block == "127.0.0.0/24"
    assert [e.action for e in (create, update, delete)] == ["create", "update", "delete"]
    assert update.fields == ["name"]
    assert update.route == "/admin/patients/tag/{object_id}/change/"
    assert "Platinum" not in repr(update.fields) and "Gold" not in repr(update.fields)


def test_an_admin_bulk_delete_records_each_object(staff, owner):
    tags = [Tag.objects.create(organization=owner.organization, name=f"T{n}") for n in range(3)]
    response = staff.post(
        TAGS, {"action": "delete_selected", "_selected_action": [str(t.id) for t in tags], "post": "yes"}
    )
    assert response.status_code == 302, response.content
    assert sorted(e.subject_id for e in admin_entries()) == sorted(str(t.id) for t in tags)
    assert {e.action for e in admin_entries()} == {"delete"}


def test_the_audit_log_is_read_only_in_the_admin(staff, owner):
    entry = make_entry(owner.organization)
    assert staff.get("/admin/audit/auditentry/").status_code == 200
    assert staff.get(f"/admin/audit/auditentry/{entry.id}/change/").status_code == 200  # a view page
    assert staff.get("/admin/audit/auditentry/add/").status_code == 403
    assert staff.post(f"/admin/audit/auditentry/{entry.id}/delete/", {"post": "yes"}).status_code == 403
    assert staff.post(f"/admin/audit/auditentry/{entry.id}/change/", {"action": "x"}).status_code == 403
    assert AuditEntry.objects.get(pk=entry.pk).action == "update"


def test_a_management_command_run_is_recorded(db, capsys):
    call_command("create_practice", name="Studio Verdi", owner_email="verdi@example.com", api_key=True)
    [entry] = AuditEntry.objects.filter(source="command")
    from apps.accounts.models import Organization

    organization = Organization.objects.get(name="Studio Verdi")
    assert entry.organization_id == organization.id
    assert (entry.route, entry.action, entry.subject_type, entry.subject_id) == (
        "create_practice",
        "run",
        "command",
        "create_practice",
    )
    assert entry.fields == ["api_key", "name", "owner_email"]  # option names, never their values
    assert entry.status_code == 0
    assert entry.written["accounts.organization"] == 1
    assert entry.written["accounts.user"] == 1
    assert entry.user_id is None and entry.credential_kind == ""
    assert "verdi@example.com" not in repr(entry.written) + repr(entry.fields)


def test_commands_outside_apps_are_not_recorded(db):
    call_command("check")
    assert not AuditEntry.objects.filter(source="command").exists()


@pytest.mark.parametrize("statement", ["UPDATE audit_auditentry SET action = 'x'", "DELETE FROM audit_auditentry"])
def test_the_database_refuses_update_and_delete(owner, statement):
    entry = make_entry(owner.organization)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)
    assert AuditEntry.objects.get(pk=entry.pk).action == "update"


def test_the_purge_deletes_only_entries_past_retention(owner, settings, time_machine):
    settings.AUDIT_RETENTION_DAYS = 30
    now = timezone.now()
    time_machine.move_to(now - timedelta(days=31), tick=False)
    old = [make_entry(owner.organization) for _ in range(3)]
    time_machine.move_to(now - timedelta(days=29), tick=False)
    kept = make_entry(owner.organization)
    time_machine.move_to(now, tick=False)

    from apps.audit import services

    assert services.audit_purge_expired(batch_size=2) == 3  # two batches
    assert list(AuditEntry.objects.values_list("id", flat=True)) == [kept.id]
    assert purge_expired() == 0  # idempotent
    assert not {e.id for e in old} & set(AuditEntry.objects.values_list("id", flat=True))
    # the purge's permission ended with it
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditentry")
