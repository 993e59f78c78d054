"""Routes of data transfer (tag data-transfer: /transfer/core-imports…, /transfer/core-exports…) and the practice
archive (tag Practice archive: /practice-archive…).

Imports and exports need transfer:manage (owners and managers) and sit in the settings scope area; /transfer/core-*
is unavailable to MCP agents (apps.mcp.operations hides it). The practice archive needs practice:archive (the owner
alone); scheduling it also needs a browser session with fresh re-authentication (X-Service-Act-Evidence from
POST /user/reauthenticate). Another practice's import or export answers 404 on every route."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from apps.accounts.act_evidence import WITH_ACT_EVIDENCE
from apps.audit.public import request_actor
from apps.core.csv_export import csv_response
from apps.core.errors import ValidationFailed
from apps.core.naming import to_camel
from apps.core.pagination import NewestFirstCursorPagination, offset_page
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.transfer import exports, files, selectors, services
from apps.transfer.api import serializers as s
from apps.transfer.errors import ExportFileGone, ExportNotReady
from apps.transfer.models import DATASETS, DataExport, ExportStatus, ImportFormat, ImportStatus, PatientImport

TRANSFER_TAGS = ["data-transfer"]
ARCHIVE_TAGS = ["Practice archive"]
ACCESS = "Permission transfer:manage (owners and managers); scope area settings. Unavailable to MCP agents."
ARCHIVE_ACCESS = "Permission practice:archive (the practice's owner)."
CONFLICT = OpenApiResponse(ApiErrorSerializer, description="Conflict with the current status (see the code).")
GONE = OpenApiResponse(ApiErrorSerializer, description="EXPORT_LINK_EXPIRED or EXPORT_FILE_EXPIRED.")
UPLOAD_FIELDS = {"file", "format", "source"}
CURSOR_PARAMETERS = [
    OpenApiParameter("cursor", str, description="nextCursor of the previous page."),
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": 100, "default": 25},
        description="Page size, 1 to 100 (default 25).",
    ),
]


class TransferView(BaseApiView):
    permission = "transfer:manage"
    scope_area = "settings"


def _import_body(run: PatientImport, *, preview: list | None = None) -> dict:
    validated = run.status != ImportStatus.UPLOADED
    body = {
        "id": run.id,
        "format": run.format,
        "source": run.source,
        "file_name": run.file_name,
        "size_bytes": run.size_bytes,
        "status": run.status,
        "columns": run.columns,
        "mapping": run.mapping,
        "rows_total": run.rows_total,
        "validation": {
            "rows_valid": run.rows_valid,
            "rows_invalid": run.rows_invalid,
            "problems_total": run.problems_total,
        }
        if validated
        else None,
        "progress": {
            "rows_done": run.rows_done,
            "rows_total": run.rows_total,
            "created": run.created,
            "updated": run.updated,
            "skipped": run.skipped,
            "failed": run.failed,
        },
        "error_code": run.error_code or None,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }
    if preview is not None:
        body["preview"] = preview
    return body


def _preview(run: PatientImport) -> list[dict]:
    rows = []
    for _, cells in files.data_rows(run.storage_name, run.delimiter):
        rows.append(cells)
        if len(rows) == files.PREVIEW_ROWS:
            break
    return rows


def _export_body(export: DataExport) -> dict:
    url = expires = None
    if export.status == ExportStatus.READY:
        url, expires = exports.link_for(export)
    return {
        "id": export.id,
        "purpose": export.purpose,
        "datasets": export.datasets,
        "status": export.status,
        "progress": {"rowsDone": export.rows_done, "rowsTotal": export.rows_total},
        "counts": export.counts,
        "size_bytes": export.size_bytes,
        "download_url": url,
        "download_expires_at": expires,
        "file_expires_at": export.file_expires_at,
        "created_at": export.created_at,
        "ready_at": export.ready_at,
    }


def _page(view, queryset, render) -> Response:
    paginator = NewestFirstCursorPagination()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return Response(paginator.get_paginated_response_data([render(row) for row in page]))


# --- imports ----------------------------------------------------------------------------------------------------------


class ImportListView(TransferView):
    parser_classes = [MultiPartParser]
    max_body_bytes = files.MAX_IMPORT_BYTES + 64 * 1024
    error_statuses = ("413", "415")

    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_imports_list",
        parameters=CURSOR_PARAMETERS,
        responses={200: s.ImportListSerializer},
        summary="The practice's patient imports",
        description=f"{ACCESS} Newest first, paged with nextCursor until null.",
    )
    def get(self, request):
        rows = selectors.imports_of(organization=self.organization)
        return _page(self, rows, lambda run: s.ImportSerializer(_import_body(run)).data)

    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_imports_upload",
        request={"multipart/form-data": s.ImportUploadSerializer},
        responses={201: s.ImportDetailSerializer},
        summary="Upload a patient file to import",
        description=f"{ACCESS} multipart/form-data with file (CSV: UTF-8 with or without a BOM; comma, semicolon, "
        "tab or pipe separated; a header row of unique names; at least one row; at most 50 MiB and 500,000 rows), "
        "format (csv, default; or dentally: a UK dental PMS's patient export, mapped from its known column names) "
        "and source (the external-id namespace, default the format). Answers the import with the detected "
        "columns, a suggested mapping and a preview of the first five rows; nothing is imported yet. A file that "
        "is not UTF-8 text, empty, without rows or with a broken header: 400 IMPORT_FILE_INVALID; over 50 MiB: "
        "413 IMPORT_FILE_TOO_LARGE (413 PAYLOAD_TOO_LARGE when the whole body is over the cap); not multipart: 415.",
    )
    def post(self, request):
        unknown = sorted(set(request.data.keys()) - UPLOAD_FIELDS)
        if unknown:
            raise ValidationFailed.for_field(to_camel(unknown[0]), "is not a field of this request")
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed.for_field("file", "a file is required (multipart/form-data)")
        file_format = request.data.get("format") or ImportFormat.CSV
        if file_format not in ImportFormat.values:
            raise ValidationFailed.for_field("format", f"must be one of {', '.join(ImportFormat.values)}")
        source = request.data.get("source") or None
        if source is not None:
            checked = s.ImportUploadSerializer(data={"source": source}, partial=True)
            if not checked.is_valid():
                raise ValidationFailed.for_field("source", "must be 1 to 64 lower-case letters, digits, _ . -")
        run, found = services.import_upload(
            organization=self.organization, user=request.user, upload=upload, file_format=file_format, source=source
        )
        return Response(s.ImportDetailSerializer(_import_body(run, preview=found["preview"])).data, status=201)


class ImportDetailView(TransferView):
    def run(self, id) -> PatientImport:
        return self.get_tenant_object(PatientImport, id)

    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_imports_read",
        responses={200: s.ImportDetailSerializer},
        summary="Read one import: status, mapping, validation report counts, progress",
        description=f"{ACCESS} progress counts rowsDone of rowsTotal (the checkpoint: rows committed), and created, "
        "updated, skipped (unchanged, archived or merged patients) and failed (rows with problems). Another "
        "practice's import: 404.",
    )
    def get(self, request, id):
        run = self.run(id)
        return Response(s.ImportDetailSerializer(_import_body(run, preview=_preview(run))).data)

    def _map(self, request, id):
        run = self.run(id)
        data = self.parse_body(s.ImportMappingSerializer).validated_data
        run = services.import_map(
            organization=self.organization, run=run, mapping=dict(data["mapping"]), source=data.get("source")
        )
        return Response(s.ImportDetailSerializer(_import_body(run, preview=_preview(run))).data)

    _MAP_DOC = dict(
        tags=TRANSFER_TAGS,
        request=s.ImportMappingSerializer,
        responses={200: s.ImportDetailSerializer, 409: CONFLICT},
        summary="Map the file's columns to patient fields and check every row",
        description=f"{ACCESS} Body {{mapping: {{patientField: column}}, source?}}. Checks every row as the "
        "patients area checks a new patient (first name; an e-mail or a mobile number; a real date of birth as "
        "YYYY-MM-DD or DD/MM/YYYY, not in the future; lengths; status and gender values; phone numbers of 6 to 15 "
        "digits, stored as + and digits) plus a repeated externalId; the validation report (problems as row, "
        "column, problem) replaces any earlier one. Only an uploaded or validated import can be mapped (409 "
        "IMPORT_STATE_CONFLICT). PUT and PATCH do the same.",
    )

    @extend_schema(operation_id="transfer_imports_map", **_MAP_DOC)
    def put(self, request, id):
        return self._map(request, id)

    @extend_schema(operation_id="transfer_imports_map_patch", **_MAP_DOC)
    def patch(self, request, id):
        return self._map(request, id)

    def serializer_context(self) -> dict:
        context = super().serializer_context()
        if "id" in self.kwargs and self.request.method in ("PUT", "PATCH"):
            context["columns"] = self.run(self.kwargs["id"]).columns
        return context


class ImportProblemsView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_import_problems",
        parameters=[s.ProblemQuerySerializer],
        responses={200: s.ProblemPageSerializer},
        summary="The validation report: every problem as row, column, problem",
        description=f"{ACCESS} Offset paged {{items, total, limit, offset}} in row order. Row numbers are the "
        "spreadsheet's (the header is row 1). Values are never repeated here. Another practice's import: 404.",
    )
    def get(self, request, id):
        run = self.get_tenant_object(PatientImport, id)
        query = self.parse_query(s.ProblemQuerySerializer).validated_data
        rows = selectors.problems_of(organization=self.organization, run=run)
        limit, offset = query["limit"], query["offset"]
        items = list(rows.values("row", "column", "field", "problem")[offset : offset + limit])
        return offset_page(s.ProblemSerializer(items, many=True).data, rows.count(), limit=limit, offset=offset)


class ImportProblemsCsvView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_import_problems_csv",
        responses={(200, "text/csv"): OpenApiTypes.STR},
        summary="The validation report as CSV",
        description=f"{ACCESS} text/csv with the header row, column, field, problem; every problem, in row order, "
        "streamed. Another practice's import: 404.",
    )
    def get(self, request, id):
        run = self.get_tenant_object(PatientImport, id)
        rows = selectors.problems_of(organization=self.organization, run=run).values_list(
            "row", "column", "field", "problem"
        )
        return csv_response(request, ["row", "column", "field", "problem"], rows, filename=f"import-{run.id}.csv")


class ImportDryRunView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_import_dry_run",
        request=None,
        responses={200: s.DryRunSerializer, 409: CONFLICT},
        summary="What the import would do, writing nothing",
        description=f"{ACCESS} Reads every row with the mapping and compares it with the practice's patients by "
        "external id (source + externalId): created, updated, skipped (unchanged, archived or merged) and failed "
        "(rows with problems). Writes nothing (not even lead sources). Only a validated import (409 otherwise).",
    )
    def post(self, request, id):
        run = self.get_tenant_object(PatientImport, id)
        return Response(s.DryRunSerializer(services.import_dry_run(organization=self.organization, run=run)).data)


class ImportStartView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_import_start",
        request=None,
        responses={202: s.ImportSerializer, 409: CONFLICT},
        summary="Start the import in the background",
        description=f"{ACCESS} A validated import starts: a background job writes 1,000 rows per transaction and "
        "saves its checkpoint with each; rows with problems are skipped (failed). Idempotent by external id: a "
        "known one is updated, never duplicated. No event or automation per patient. 409 IMPORT_STATE_CONFLICT "
        "unless validated (a stopped import is resumed instead).",
    )
    def post(self, request, id):
        run = self.get_tenant_object(PatientImport, id)
        run = services.import_start(organization=self.organization, user=request.user, run=run)
        return Response(s.ImportSerializer(_import_body(run)).data, status=202)


class ImportResumeView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_import_resume",
        request=None,
        responses={202: s.ImportSerializer, 409: CONFLICT},
        summary="Resume a failed or stalled import from its last committed chunk",
        description=f"{ACCESS} A failed import, or a running one with no committed chunk for two minutes, goes on "
        "from its checkpoint (a sweep also does this every minute). 409 IMPORT_STATE_CONFLICT otherwise.",
    )
    def post(self, request, id):
        run = self.get_tenant_object(PatientImport, id)
        run = services.import_resume(organization=self.organization, run=run)
        return Response(s.ImportSerializer(_import_body(run)).data, status=202)


# --- exports ----------------------------------------------------------------------------------------------------------


class ExportListView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_exports_list",
        parameters=CURSOR_PARAMETERS,
        responses={200: s.ExportListSerializer},
        summary="The practice's data exports",
        description=f"{ACCESS} Newest first, paged with nextCursor until null; ready ones carry a fresh signed "
        "download link.",
    )
    def get(self, request):
        rows = selectors.exports_of(organization=self.organization)
        return _page(self, rows, lambda export: s.ExportSerializer(_export_body(export)).data)

    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_exports_create",
        request=s.ExportCreateSerializer,
        responses={202: s.ExportSerializer},
        summary="Export the practice's data as a zip, in the background",
        description=f"{ACCESS} Body {{datasets?}}: any of {', '.join(DATASETS)} (all when left out). A background "
        "job writes one CSV per dataset (conversations: metadata only, never message bodies) and manifest.json "
        "(counts, generation time) into a zip; progress counts rows. An audit entry records the export. The file "
        "is kept 7 days.",
    )
    def post(self, request):
        has_body = int(request.META.get("CONTENT_LENGTH") or 0)
        data = self.parse_body(s.ExportCreateSerializer).validated_data if has_body else {}
        export = services.export_create(
            organization=self.organization, user=request.user, datasets=data.get("datasets") or list(DATASETS)
        )
        export.refresh_from_db()
        return Response(s.ExportSerializer(_export_body(export)).data, status=202)


class ExportDetailView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_exports_read",
        responses={200: s.ExportSerializer},
        summary="Read one export: status, progress, and when ready a signed download link",
        description=f"{ACCESS} downloadUrl is signed and valid 24 hours from this read (downloadExpiresAt); every "
        "read issues a fresh one. Another practice's export: 404.",
    )
    def get(self, request, id):
        return Response(s.ExportSerializer(_export_body(self.get_tenant_object(DataExport, id))).data)


class ExportDownloadView(TransferView):
    @extend_schema(
        tags=TRANSFER_TAGS,
        operation_id="transfer_exports_download",
        parameters=[s.DownloadQuerySerializer],
        responses={(200, "application/zip"): OpenApiTypes.BINARY, 409: CONFLICT, 410: GONE},
        summary="Download an export's zip through its signed link",
        description=f"{ACCESS} The link needs both its token and the caller's credential in the same practice. An "
        "expired token: 410 EXPORT_LINK_EXPIRED; a tampered one or one of another export: 403 EXPORT_LINK_INVALID; "
        "not ready: 409 EXPORT_NOT_READY; the file deleted (retention, or the practice closed): 410 "
        "EXPORT_FILE_EXPIRED. Every download is recorded in the audit log.",
    )
    def get(self, request, id):
        from django.http import FileResponse

        export = self.get_tenant_object(DataExport, id)
        token = self.parse_query(s.DownloadQuerySerializer).validated_data["token"]
        exports.check_token(token, export)
        if export.status == ExportStatus.EXPIRED:
            raise ExportFileGone()
        if export.status != ExportStatus.READY:
            raise ExportNotReady(export.status)
        handle = exports.open_file(export.storage_name)
        services.export_downloaded(organization=self.organization, export=export, actor=request_actor(request))
        day = export.created_at.date().isoformat()
        return FileResponse(
            handle, as_attachment=True, filename=f"practice-export-{day}.zip", content_type="application/zip"
        )


# --- the practice archive ---------------------------------------------------------------------------------------------


def _archive_body(archive) -> dict:
    if archive is None:
        return {"archive": None}
    return {
        "archive": {
            "id": archive.id,
            "status": archive.status,
            "closes_at": archive.closes_at,
            "cancelled_at": archive.cancelled_at,
            "closed_at": archive.closed_at,
            "export": _export_body(archive.export) if archive.export else None,
            "created_at": archive.created_at,
        }
    }


def _archive_response(organization, status: int = 200) -> Response:
    body = _archive_body(selectors.archive_of(organization=organization))
    return Response(s.ArchiveStateSerializer(body).data, status=status)


class PracticeArchiveView(BaseApiView):
    permission = "practice:archive"
    scope_area = "settings"
    error_statuses = ("409",)

    def get_permissions(self):
        if self.request.method == "POST":
            return [permission() for permission in WITH_ACT_EVIDENCE]
        return super().get_permissions()

    @extend_schema(
        tags=ARCHIVE_TAGS,
        operation_id="practice_archive_read",
        responses={200: s.ArchiveStateSerializer},
        summary="The practice archive: status, export link, closesAt",
        description=f"{ARCHIVE_ACCESS} The latest archive (null when none was asked): scheduled (the grace period "
        "runs until closesAt), cancelled, closing or closed, with the full export and its signed download link.",
    )
    def get(self, request):
        return Response(
            s.ArchiveStateSerializer(_archive_body(selectors.archive_of(organization=self.organization))).data
        )

    @extend_schema(
        tags=ARCHIVE_TAGS,
        operation_id="practice_archive_schedule",
        request=None,
        responses={201: s.ArchiveStateSerializer, 409: CONFLICT},
        summary="Archive the practice: a full export now, the account closed after 30 days",
        description=f"{ARCHIVE_ACCESS} A signed-in browser session with fresh re-authentication only "
        "(X-Service-Act-Evidence from POST /user/reauthenticate; otherwise 403 FRESH_AUTHENTICATION_REQUIRED). "
        "Starts a full export of every dataset and schedules the closing at now + 30 days. At closesAt the account "
        "closes: members removed (they lose access at once), pending invitations cancelled, OAuth connections "
        "disconnected, webhook endpoints archived, every patient erased (with what hangs off them, as DELETE "
        "/patients/{id} does), export and import files deleted. Cancellable until then. 409 "
        "PRACTICE_ARCHIVE_IN_PROGRESS when a closing is already scheduled.",
    )
    def post(self, request):
        services.archive_schedule(organization=self.organization, user=request.user)
        return _archive_response(self.organization, status=201)


class PracticeArchiveCancelView(BaseApiView):
    permission = "practice:archive"
    scope_area = "settings"
    error_statuses = ("409",)

    @extend_schema(
        tags=ARCHIVE_TAGS,
        operation_id="practice_archive_cancel",
        request=None,
        responses={200: s.ArchiveStateSerializer, 409: CONFLICT},
        summary="Cancel the scheduled closing (during the grace period)",
        description=f"{ARCHIVE_ACCESS} The practice stays open; the export made stays downloadable for 7 days. 409 "
        "PRACTICE_ARCHIVE_NOT_SCHEDULED when no closing is scheduled (or it is already under way).",
    )
    def post(self, request):
        services.archive_cancel(organization=self.organization, user=request.user)
        return Response(
            s.ArchiveStateSerializer(_archive_body(selectors.archive_of(organization=self.organization))).data
        )
