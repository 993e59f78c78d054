"""Settings of the connected PMS (tag pms), under /settings/pms/…: the connection, its imports and the sync review
queue. Thin: parse, call one service or selector, render. Permission pms:manage, scope area settings; not clinical
(a practice whose system of record is an external PMS connects it before it has the clinical workspace). Another
practice's ids answer 404."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.core.pagination import offset_page
from apps.core.views import BaseApiView
from apps.pms import selectors, services
from apps.pms.api import serializers as s
from apps.pms.models import PmsConnection, PmsImport, PmsSyncReview

TAGS = ["pms"]
CONTRACT = (
    "The connector contract is pmsconnect (docs/pms.md): the import pulls GET {baseUrl}/v1/patients and "
    "/v1/appointments (bearer API key, {items, nextCursor} pages); the PMS posts changes to callbackUrl signed with "
    'X-Service-Signature v1=HMAC-SHA256(secret, "<X-Service-Timestamp>.<X-Service-Delivery-Id>.<raw body>"). '
)


def _with_secret(connection, shown: services.Shown) -> dict:
    return s.ConnectionWithSecretSerializer(connection).data | {"signing_secret": shown.signing_secret}


class PmsSettingsView(BaseApiView):
    scope_area = "settings"
    permission = "pms:manage"


class ConnectionListView(PmsSettingsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_connections_list",
        parameters=[s.OffsetQuerySerializer],
        responses={200: s.ConnectionPageSerializer},
        summary="The practice's PMS connections (the live one and disconnected ones), newest first",
        description="Permission pms:manage. {items, total, limit, offset}. Credentials are never returned "
        "(apiKeySet says whether one is stored). health is healthy, degraded or failing with healthReason.",
    )
    def get(self, request):
        query = self.parse_query(s.OffsetQuerySerializer).validated_data
        rows = selectors.connections_of(organization=self.organization)
        limit, offset = query["limit"], query["offset"]
        items = list(rows[offset : offset + limit])
        return offset_page(s.ConnectionSerializer(items, many=True).data, rows.count(), limit=limit, offset=offset)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_connections_create",
        request=s.ConnectionCreateSerializer,
        responses={201: s.ConnectionWithSecretSerializer},
        summary="Connect the practice's PMS and start the historical import",
        description="Permission pms:manage. " + CONTRACT + "The API key is stored encrypted; signingSecret is "
        "shown in this answer only. The connection starts importing (status importing; GET "
        "/settings/pms/imports shows progress) and turns active when the import completes. One live connection "
        "per practice: 409 PMS_ALREADY_CONNECTED. baseUrl must be https on a public host (400 otherwise).",
    )
    def post(self, request):
        data = dict(self.parse_body(s.ConnectionCreateSerializer).validated_data)
        connection, shown, _ = services.connection_create(organization=self.organization, user=request.user, data=data)
        return Response(_with_secret(connection, shown), status=201)


class ConnectionItemView(PmsSettingsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_connections_read",
        responses={200: s.ConnectionSerializer},
        summary="Read the PMS connection: status and health",
        description="Permission pms:manage. status importing → active → disconnected; health healthy, degraded "
        "(an import page failed, healthReason the code) or failing (the PMS refuses the API key). Every change "
        "of health records pms_connection.health_changed. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.ConnectionSerializer(self.get_tenant_object(PmsConnection, id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_connections_update",
        request=s.ConnectionUpdateSerializer,
        responses={200: s.ConnectionSerializer},
        summary="Change the PMS connection's name, base URL or API key",
        description="Permission pms:manage. Any subset of name, baseUrl, apiKey; a new apiKey turns a failing "
        "connection healthy (resume the import afterwards). Disconnected: 409 PMS_CONNECTION_DISCONNECTED.",
    )
    def patch(self, request, id):
        connection = self.get_tenant_object(PmsConnection, id)
        data = dict(self.parse_body(s.ConnectionUpdateSerializer).validated_data)
        connection = services.connection_update(
            organization=self.organization, user=request.user, connection=connection, data=data
        )
        return Response(s.ConnectionSerializer(connection).data)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_connections_disconnect",
        request=None,
        responses={200: s.ConnectionSerializer},
        summary="Disconnect the PMS (links and mirrored records stay)",
        description="Permission pms:manage. The callback URL answers 404 from now on, a running import stops, "
        "credentials are wiped. Links, patients and appointments already mirrored stay. Repeating is harmless.",
    )
    def delete(self, request, id):
        connection = services.connection_disconnect(
            organization=self.organization, user=request.user, connection=self.get_tenant_object(PmsConnection, id)
        )
        return Response(s.ConnectionSerializer(connection).data)


class ConnectionRotateView(PmsSettingsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_connections_rotate",
        request=s.RotateSerializer,
        responses={200: s.ConnectionWithSecretSerializer},
        summary="Rotate the callback signing secret and/or the routing token",
        description="Permission pms:manage. signingSecret true: a new secret, shown in this answer only; the "
        "previous one still verifies callbacks for 24 hours (previousSecretUntil). routingToken true: a new "
        "callbackUrl; the old one answers 404 at once. Disconnected: 409 PMS_CONNECTION_DISCONNECTED.",
    )
    def post(self, request, id):
        connection = self.get_tenant_object(PmsConnection, id)
        data = self.parse_body(s.RotateSerializer).validated_data
        connection, shown = services.connection_rotate(
            organization=self.organization,
            user=request.user,
            connection=connection,
            signing_secret=data["signing_secret"],
            routing_token=data["routing_token"],
        )
        return Response(_with_secret(connection, shown))


class ConnectionImportView(PmsSettingsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_imports_start",
        request=None,
        responses={
            201: s.ImportSerializer,
            200: OpenApiResponse(s.ImportSerializer, description="An unfinished import was resumed instead."),
        },
        summary="Start (or resume) the connection's historical import",
        description="Permission pms:manage. Pulls patients, then appointments, page by page, in the background. "
        "Patients are matched to CRM patients by e-mail or phone, or created, and linked; appointments are "
        "mirrored into the diary; practitioners matched by the PMS's id (created when unknown). No event is "
        "recorded per record. An unfinished import of the connection is resumed from its cursor (200) instead of "
        "starting a second one. Disconnected: 409 PMS_CONNECTION_DISCONNECTED.",
    )
    def post(self, request, id):
        connection = self.get_tenant_object(PmsConnection, id)
        run, created = services.import_start(organization=self.organization, user=request.user, connection=connection)
        return Response(s.ImportSerializer(run).data, status=201 if created else 200)


class ImportListView(PmsSettingsView):
    @extend_schema(
        tags=TAGS,
        operation_id="pms_imports_list",
        parameters=[s.ImportListQuerySerializer],
        responses={200: s.ImportPageSerializer},
        summary="The practice's PMS imports, newest first",
        description="Permission pms:manage. {items, total, limit, offset}; state filters (running, failed, completed).",
    )
    def get(self, request):
        query = self.parse_query(s.ImportListQuerySerializer).validated_data
        rows = selectors.imports_of(organization=self.organization)
        if query.get("state"):
            rows = rows.filter(state=query["state"])
        limit, offset = query["limit"], query["offset"]
        items = list(rows[offset : offset + limit])
        return offset_page(s.ImportSerializer(items, many=True).data, rows.count(), limit=limit, offset=offset)


class ImportItemView(PmsSettingsView):
    @extend_schema(
        tags=TAGS,
        operation_id="pms_imports_read",
        responses={200: s.ImportSerializer},
        summary="An import's progress: state, counts per kind, cursor position, errors",
        description="Permission pms:manage. state running, failed (stopped on an error: errors says which; "
        "resume it) or completed; phase patients, appointments or done; position.cursor is where it resumes. "
        "counts per kind; errors are the last 50 problems (codes and PMS item ids only). Another practice's id "
        "answers 404.",
    )
    def get(self, request, id):
        return Response(s.ImportSerializer(self.get_tenant_object(PmsImport, id)).data)


class ImportResumeView(PmsSettingsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_imports_resume",
        request=None,
        responses={200: s.ImportSerializer},
        summary="Resume a failed or stalled import from its cursor",
        description="Permission pms:manage. The run continues from the saved cursor; pages already applied are "
        "not applied again. A running import is asked to run again (harmless: only one runner moves the cursor). "
        "Completed: 409 PMS_IMPORT_COMPLETED; disconnected: 409 PMS_CONNECTION_DISCONNECTED.",
    )
    def post(self, request, id):
        run = services.import_resume(
            organization=self.organization, user=request.user, run=self.get_tenant_object(PmsImport, id)
        )
        return Response(s.ImportSerializer(run).data)


class ReviewListView(PmsSettingsView):
    @extend_schema(
        tags=TAGS,
        operation_id="pms_reviews_list",
        parameters=[s.ReviewListQuerySerializer],
        responses={200: s.ReviewPageSerializer},
        summary="Changes from the PMS held for review, newest first",
        description="Permission pms:manage. A live change whose content differs from what was applied at the same "
        "revision is held here (pms_sync.review_required) and nothing is applied. {items, total, limit, offset}; "
        "filter by status (open, applied, kept) and kind (patient, appointment). The held content itself is not "
        "listed.",
    )
    def get(self, request):
        query = self.parse_query(s.ReviewListQuerySerializer).validated_data
        rows = selectors.reviews_of(organization=self.organization, status=query.get("status"), kind=query.get("kind"))
        limit, offset = query["limit"], query["offset"]
        items = list(rows[offset : offset + limit])
        return offset_page(s.ReviewSerializer(items, many=True).data, rows.count(), limit=limit, offset=offset)


class ReviewResolveView(PmsSettingsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="pms_reviews_resolve",
        request=s.ResolveSerializer,
        responses={200: s.ReviewSerializer},
        summary="Resolve a held change: apply the incoming content or keep the current one",
        description="Permission pms:manage. apply_incoming applies the held content to the CRM record (its events "
        "are recorded) and makes it the content of that revision; keep_current leaves the record as it is. "
        "Already resolved: 409 PMS_REVIEW_RESOLVED; a newer revision applied since: apply_incoming is 409 "
        "PMS_REVIEW_STALE. Another practice's id answers 404.",
    )
    def post(self, request, id):
        review = self.get_tenant_object(PmsSyncReview, id)
        action = self.parse_body(s.ResolveSerializer).validated_data["action"]
        review = services.review_resolve(
            organization=self.organization, user=request.user, review=review, action=action
        )
        return Response(s.ReviewSerializer(review).data)
