"""Audit log fixtures: entries made directly (for the read routes) and a patient to write to."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.audit.public import record

LOG = "/audit-log"
SUBJECTS = [f"00000000-0000-4000-8000-00000000000{n}" for n in range(5)]
EXPORT = "/audit-log/export"


def entries_of(organization) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(organization_id=organization.id).order_by("created_at", "id"))


def make_entry(organization, **fields) -> AuditEntry:
    values = {"source": "api", "action": "update", "method": "PATCH", "route": "/patients/{id}"} | fields
    return record(organization_id=organization.id, **values)


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    return time_machine


@pytest.fixture
def logged(owner, clock):
    """Five entries of the owner's practice a minute apart (oldest first) and one of another practice."""
    rows = []
    kinds = [("api", "session", "create"), ("api", "api_key", "update"), ("api", "oauth", "delete")]
    kinds += [("admin", "session", "update"), ("command", "", "run")]
    for source, kind, action in kinds:
        rows.append(
            make_entry(
                owner.organization,
                source=source,
                credential_kind=kind,
                action=action,
                user_id=owner.user.id if source != "command" else None,
                subject_type="patient",
                subject_id=SUBJECTS[len(rows)],
                fields=["firstName", "=cmd"] if action == "create" else [],
                address="203.0.113.9",
            )
        )
        clock.shift(timedelta(minutes=1))
    return rows
