"""Routes of the audit log (tag audit-log) and the retention periods (tag Compliance).

Permission audit:read (owners and managers), scope area settings (OAuth: read, settings.read or settings.write).
The log is append-only: there is no route that changes or removes an entry, so PATCH, PUT and DELETE answer 405.
Another practice's entry answers 404 and never appears in a list or an export."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from apps.audit import retention, selectors
from apps.audit.api import serializers as s
from apps.audit.selectors import EXPORT_COLUMNS
from apps.core.csv_export import csv_response
from apps.core.errors import NotFound
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.views import BaseApiView

TAGS = ["audit-log"]
COMPLIANCE_TAGS = ["Compliance"]
EXPORT_ROW_CAP = 100_000
ACCESS = "Permission audit:read (owners and managers); OAuth tokens need read, settings.read or settings.write."
FILTERS = (
    "Filters: from (inclusive) and to (exclusive), ISO 8601 date-times; userId; source (api, admin, command, "
    "system); credentialKind (session, api_key, oauth); subjectType; subjectId; action (create, update, delete or "
    "a route's verb such as cancel); method (POST, PUT, PATCH, DELETE). A bad value answers 400 VALIDATION_ERROR "
    "naming the parameter in details.fields; an unknown parameter is refused the same way."
)
RECORDED = (
    "An entry is written for every authenticated POST, PUT, PATCH or DELETE answered 2xx (source api), every add, "
    "change and delete in the back office (admin) and every run of a management command that wrote (command). "
    "Field names only, never values."
)


class AuditView(BaseApiView):
    permission = "audit:read"
    scope_area = "settings"


class AuditLogView(AuditView):
    @extend_schema(
        tags=TAGS,
        operation_id="audit_log_list",
        parameters=[s.AuditListQuerySerializer],
        responses={200: s.AuditPageSerializer},
        summary="The practice's audit log, newest first",
        description=f"{ACCESS} Cursor paging {{items, nextCursor}} (limit 1 to 100, default 25). {FILTERS} {RECORDED}",
    )
    def get(self, request):
        query = self.parse_query(s.AuditListQuerySerializer).to_query()
        paginator = NewestFirstCursorPagination()
        page = paginator.paginate_queryset(
            selectors.entries_of(organization=self.organization, query=query), request, view=self
        )
        return Response(paginator.get_paginated_response_data(s.AuditEntrySerializer(page, many=True).data))


class AuditExportView(AuditView):
    def perform_content_negotiation(self, request, force=False):
        # Success is text/csv (streamed below); errors are always the JSON envelope.
        return JSONRenderer(), JSONRenderer.media_type

    @extend_schema(
        tags=TAGS,
        operation_id="audit_log_export",
        parameters=[s.AuditFilterSerializer],
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, header row first.")},
        summary=f"Export the audit log as CSV (the list's filters; at most {EXPORT_ROW_CAP} rows)",
        description=f"{ACCESS} {FILTERS} Columns: {', '.join(name for name, _ in EXPORT_COLUMNS)} (fields joined "
        f"by ';'), newest first, streamed from a server-side cursor. Over {EXPORT_ROW_CAP} matching entries answers "
        "400 EXPORT_TOO_LARGE (details.maxRows) before any row is sent: narrow from/to. Cells starting with = + - @ "
        "are prefixed with an apostrophe (CSV injection).",
    )
    def get(self, request):
        query = self.parse_query(s.AuditFilterSerializer).to_query()
        rows = selectors.export_rows(organization=self.organization, query=query, row_cap=EXPORT_ROW_CAP)
        header = [name for name, _ in EXPORT_COLUMNS]
        return csv_response(request, header, rows, filename="audit-log.csv")


class AuditEntryView(AuditView):
    @extend_schema(
        tags=TAGS,
        operation_id="audit_log_read",
        responses={200: s.AuditEntrySerializer},
        summary="Read one audit entry",
        description=f"{ACCESS} Another practice's entry (or none) answers 404. Entries cannot be changed or "
        "removed: PATCH, PUT and DELETE answer 405.",
    )
    def get(self, request, id):
        entry = selectors.entry_of(organization=self.organization, entry_id=id)
        if entry is None:
            raise NotFound("No such audit entry.")
        return Response(s.AuditEntrySerializer(entry).data)


class RetentionView(AuditView):
    @extend_schema(
        tags=COMPLIANCE_TAGS,
        operation_id="compliance_retention",
        responses={200: s.RetentionListSerializer},
        summary="How long the service keeps its records",
        description=f"{ACCESS} Each period the service enforces with a scheduled purge: the record, the period (ISO "
        "8601 and in days), what it counts from, the task that deletes past it and the setting or constant it is "
        "read from. Records a practice keeps for as long as it wants (patients, appointments, clinical records, "
        "messages) have no period and are not listed.",
    )
    def get(self, request):
        items = [
            {
                "record": item.record,
                "description": item.description,
                "period": item.iso_period,
                "period_days": item.period.total_seconds() / 86400,
                "counted_from": item.counted_from,
                "enforced_by": item.enforced_by,
                "source": item.source,
            }
            for item in retention.retention_periods()
        ]
        return Response(s.RetentionListSerializer({"items": items}).data)
