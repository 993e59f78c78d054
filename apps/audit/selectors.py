"""Reads of the audit log, always for one practice: entries whose organization_id is another practice's (or none,
a platform-level write) are never reached from here."""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import CharField, F, Func, QuerySet, Value

from apps.audit.errors import AuditExportTooLarge
from apps.audit.models import AuditEntry

EXPORT_COLUMNS = (
    ("id", "id"),
    ("createdAt", "created_at"),
    ("source", "source"),
    ("userId", "user_id"),
    ("credentialKind", "credential_kind"),
    ("credentialId", "credential_id"),
    ("oauthClientId", "oauth_client_id"),
    ("method", "method"),
    ("route", "route"),
    ("action", "action"),
    ("subjectType", "subject_type"),
    ("subjectId", "subject_id"),
    ("fields", "fields_text"),
    ("statusCode", "status_code"),
    ("addressBlock", "address_block"),
)


@dataclass(frozen=True)
class AuditQuery:
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    user_id: UUID | None = None
    source: str | None = None
    credential_kind: str | None = None
    subject_type: str | None = None
    subject_id: str | None = None
    action: str | None = None
    method: str | None = None


def entries_of(*, organization, query: AuditQuery = AuditQuery()) -> QuerySet[AuditEntry]:
    """The practice's entries matching the filters, newest first (index audit_org_idx: organization, created_at,
    id, all descending)."""
    rows = AuditEntry.objects.filter(organization_id=organization.pk)
    exact = {
        "user_id": query.user_id,
        "source": query.source,
        "credential_kind": query.credential_kind,
        "subject_type": query.subject_type,
        "subject_id": query.subject_id,
        "action": query.action,
        "method": query.method,
    }
    rows = rows.filter(**{name: value for name, value in exact.items() if value is not None})
    if query.created_from is not None:
        rows = rows.filter(created_at__gte=query.created_from)
    if query.created_to is not None:
        rows = rows.filter(created_at__lt=query.created_to)
    return rows.order_by("-created_at", "-id")


def entry_of(*, organization, entry_id) -> AuditEntry | None:
    return AuditEntry.objects.filter(organization_id=organization.pk, pk=entry_id).first()


def export_rows(*, organization, query: AuditQuery, row_cap: int) -> QuerySet:
    """The export's rows (EXPORT_COLUMNS, newest first; field names joined by ";") as a values_list. More than
    `row_cap` matching entries raises EXPORT_TOO_LARGE before anything is streamed (one bounded count)."""
    rows = entries_of(organization=organization, query=query)
    if rows.order_by()[: row_cap + 1].count() > row_cap:
        raise AuditExportTooLarge(details={"maxRows": row_cap})
    fields_text = Func(F("fields"), Value(";"), function="array_to_string", output_field=CharField())
    return rows.annotate(fields_text=fields_text).values_list(*(column for _, column in EXPORT_COLUMNS))
