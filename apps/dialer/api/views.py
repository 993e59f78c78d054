"""Dialer routes: telephony connections (tag dialer-connections), numbers, porting orders and parked events
(tag dialer), the call log, recordings and click-to-call (tag dialer).

Access: connections are practice settings (settings:read to read, settings:update to change; OAuth scope area
settings). Everything else is in the dialer scope area (an OAuth token needs the `dialer` scope; MCP agents never see
these routes). Reading numbers and porting orders, the call log and click-to-call need dialer:use (owners, managers,
front desk, telesales); ordering, releasing and porting numbers and deciding parked events need settings:update
(owners, managers). A voicemail is heard with dialer:use; a recorded call needs dialer:recording (owners, managers).
Another practice's id in a path answers 404, in a body or query 400."""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.core.access import access_backend
from apps.core.errors import PermissionDenied
from apps.core.limits import TokenBucketLimit
from apps.core.pagination import NewestFirstCursorPagination, offset_page
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.dialer import provider, recordings, selectors, services
from apps.dialer.api import serializers as s
from apps.dialer.models import (
    Call,
    DialerConnection,
    PhoneNumber,
    PortingOrder,
    RecordingKind,
    TelephonyEvent,
)

TAGS = ["dialer"]
CONNECTION_TAGS = ["dialer-connections"]


def _organization_key(request, view) -> str:
    return str(view.organization.id)


# Spec Limits: phone number orders, per organization, 60 burst then 18 an hour (releases are never limited).
NUMBER_ORDER_BUCKET = TokenBucketLimit(
    "dialer.number-order", setting="SVC_DIALER_NUMBER_ORDER_BUCKET", key=_organization_key
)

PROVIDER_ERRORS = (
    "A provider refusal answers 409 DIALER_PROVIDER_REFUSED (details.providerCode); an unreachable provider 503 "
    "DIALER_PROVIDER_UNAVAILABLE with Retry-After. With no active connection: 409 DIALER_NOT_CONNECTED; with several "
    "and no connectionId: 400."
)


class DialerView(BaseApiView):
    scope_area = "dialer"
    error_statuses = ("409",)


class ConnectionView(BaseApiView):
    scope_area = "settings"
    error_statuses = ("409",)

    def connection(self, id) -> DialerConnection:
        return self.get_tenant_object(DialerConnection, id)


# --- connections ------------------------------------------------------------------------------------------------------


class ConnectionListView(ConnectionView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=CONNECTION_TAGS,
        operation_id="dialer_connections_list",
        parameters=[s.OffsetQuerySerializer],
        responses={200: s.ConnectionPageSerializer},
        summary="The practice's telephony connections, newest first",
        description="Permission settings:read. {items, total, limit, offset}. The API key is never returned "
        "(apiKeySet says it is stored); webhookUrl carries the routing token.",
    )
    def get(self, request):
        query = self.parse_query(s.OffsetQuerySerializer).validated_data
        connections = selectors.connections_of(organization=self.organization)
        rows = connections[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.ConnectionSerializer(rows, many=True).data,
            connections.count(),
            limit=query["limit"],
            offset=query["offset"],
        )

    @extend_schema(
        tags=CONNECTION_TAGS,
        operation_id="dialer_connections_create",
        request=s.ConnectionWriteSerializer,
        responses={201: s.ConnectionSerializer},
        summary="Connect the practice's telephony account (Telnyx)",
        description="Permission settings:update. name; apiKey (the account's API key: encrypted at rest, never "
        "shown again, not even to its author); publicKey (the account's Ed25519 public key, base64 of 32 bytes: "
        "callbacks are verified with it); callControlAppId (the provider's Call Control application id, needed "
        "to place calls and to attach ordered numbers); recordCalls (record click-to-call calls from the answer); "
        "missedCallAssigneeId (a member who gets the follow-up task of each missed call and voicemail; "
        "unassigned when null). Answers the connection with webhookUrl (give it to the provider: its routing token "
        "picks the connection and grants nothing without the account's signature) and failoverProbeUrl.",
    )
    def post(self, request):
        data = self.parse_body(s.ConnectionWriteSerializer).validated_data
        connection = services.connection_create(organization=self.organization, actor=request.user, data=dict(data))
        return Response(s.ConnectionSerializer(connection).data, status=201)


class ConnectionDetailView(ConnectionView):
    permission = {"GET": "settings:read", "PATCH": "settings:update", "DELETE": "settings:update"}

    @extend_schema(
        tags=CONNECTION_TAGS,
        operation_id="dialer_connections_read",
        responses={200: s.ConnectionSerializer},
        summary="Read one telephony connection",
        description="Permission settings:read. Never the API key. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.ConnectionSerializer(self.connection(id)).data)

    @extend_schema(
        tags=CONNECTION_TAGS,
        operation_id="dialer_connections_update",
        request=s.ConnectionUpdateSerializer,
        responses={200: s.ConnectionSerializer},
        summary="Change a connection: name, keys, Call Control application, recording, missed-call assignee",
        description="Permission settings:update. Any subset of the create fields; apiKey replaces the stored key "
        "(never shown); rotateToken true issues a new routing token (the old webhookUrl answers 404 at once).",
    )
    def patch(self, request, id):
        connection = self.connection(id)
        data = self.parse_body(s.ConnectionUpdateSerializer, partial=True).validated_data
        connection = services.connection_update(
            organization=self.organization, actor=request.user, connection=connection, data=dict(data)
        )
        return Response(s.ConnectionSerializer(connection).data)

    @extend_schema(
        tags=CONNECTION_TAGS,
        operation_id="dialer_connections_disconnect",
        responses={204: None},
        summary="Disconnect a telephony connection",
        description="Permission settings:update. Its webhook URL answers 404 from now on; numbers, calls and "
        "recordings stay in the log. Idempotent.",
    )
    def delete(self, request, id):
        services.connection_disconnect(
            organization=self.organization, actor=request.user, connection=self.connection(id)
        )
        return Response(status=204)


# --- numbers ----------------------------------------------------------------------------------------------------------


class NumberListView(DialerView):
    permission = {"GET": "dialer:use", "POST": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_numbers_list",
        parameters=[s.NumberListQuerySerializer],
        responses={200: s.NumberPageSerializer},
        summary="The practice's phone numbers, newest first",
        description="Permission dialer:use. {items, total, limit, offset}; connectionId and status filter. "
        "Statuses: pending (ordered, the provider completes it), active, released, ported_out, failed.",
    )
    def get(self, request):
        query = self.parse_query(s.NumberListQuerySerializer).validated_data
        connection = query.get("connection_id")
        numbers = selectors.numbers_of(
            organization=self.organization,
            connection_id=connection.id if connection else None,
            status=query.get("status"),
        )
        rows = numbers[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.NumberSerializer(rows, many=True).data, numbers.count(), limit=query["limit"], offset=query["offset"]
        )

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_numbers_order",
        request=s.NumberOrderSerializer,
        responses={201: s.NumberSerializer},
        summary="Order a phone number (from a search) on the practice's telephony account",
        description="Permission settings:update. phoneNumber (E.164, from GET /dialer/numbers/search); "
        "connectionId when the practice has several connections. The provider's number order attaches it to the "
        "connection's Call Control application: active at once, or pending until the provider completes the order "
        "(number_order.complete). A number the practice already has: 409 DIALER_NUMBER_ALREADY_CONNECTED. "
        "Limited per practice: 60 at once, then 18 an hour (429 with Retry-After, taken after validation). "
        + PROVIDER_ERRORS,
    )
    def post(self, request):
        data = self.parse_body(s.NumberOrderSerializer).validated_data
        connection = selectors.connection_for_use(organization=self.organization, connection=data.get("connection_id"))
        NUMBER_ORDER_BUCKET.check(request, self)
        number = services.number_order(
            organization=self.organization,
            actor=request.user,
            connection=connection,
            phone_number=data["phone_number"],
        )
        return Response(s.NumberSerializer(number).data, status=201)


class NumberSearchView(DialerView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_numbers_search",
        parameters=[s.NumberSearchQuerySerializer],
        responses={200: s.AvailableNumbersSerializer},
        summary="Search numbers the provider can sell (country, area code, locality, digits)",
        description="Permission settings:update. countryCode (ISO alpha-2) required; areaCode, locality, contains "
        "(digits) narrow it; limit 1 to 50 (default 10). Voice-capable numbers only. " + PROVIDER_ERRORS,
    )
    def get(self, request):
        query = self.parse_query(s.NumberSearchQuerySerializer).validated_data
        connection = selectors.connection_for_use(organization=self.organization, connection=query.get("connection_id"))
        found = services.numbers_search(
            organization=self.organization,
            connection=connection,
            query=provider.SearchQuery(
                country_code=query["country_code"],
                area_code=query.get("area_code", ""),
                locality=query.get("locality", ""),
                contains=query.get("contains", ""),
                limit=query["limit"],
            ),
        )
        return Response({"items": s.AvailableNumberSerializer(found, many=True).data})


class NumberDetailView(DialerView):
    permission = {"GET": "dialer:use", "DELETE": "settings:update"}

    def number(self, id) -> PhoneNumber:
        queryset = PhoneNumber.objects.for_org(self.organization).select_related("connection")
        return self.get_tenant_object(PhoneNumber, id, queryset=queryset)

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_numbers_read",
        responses={200: s.NumberSerializer},
        summary="Read one phone number",
        description="Permission dialer:use. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.NumberSerializer(self.number(id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_numbers_release",
        responses={200: s.NumberSerializer},
        summary="Release a phone number from the practice's telephony account",
        description="Permission settings:update. Never rate limited. The provider releases it (a number it no "
        "longer has counts as released) and it becomes released here; its calls keep their log. A number that is "
        "not active or pending: 409 DIALER_NUMBER_NOT_RELEASABLE. " + PROVIDER_ERRORS,
    )
    def delete(self, request, id):
        number = services.number_release(organization=self.organization, actor=request.user, number=self.number(id))
        return Response(s.NumberSerializer(number).data)


# --- porting ----------------------------------------------------------------------------------------------------------


class PortingOrderListView(DialerView):
    permission = {"GET": "dialer:use", "POST": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_porting_orders_list",
        parameters=[s.OffsetQuerySerializer],
        responses={200: s.PortingOrderPageSerializer},
        summary="The practice's porting orders, newest first",
        description="Permission dialer:use. {items, total, limit, offset}. status is the provider's (draft, "
        "in-process, submitted, exception, foc-date-confirmed, cancel-pending, ported, cancelled), kept current by "
        "porting_order.* events.",
    )
    def get(self, request):
        query = self.parse_query(s.OffsetQuerySerializer).validated_data
        orders = selectors.porting_orders_of(organization=self.organization)
        rows = orders[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.PortingOrderSerializer(rows, many=True).data, orders.count(), limit=query["limit"], offset=query["offset"]
        )

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_porting_orders_create",
        request=s.PortingOrderCreateSerializer,
        responses={201: s.PortingOrdersCreatedSerializer},
        summary="Ask the provider to port numbers in from another carrier",
        description="Permission settings:update. phoneNumbers: 1 to 50 E.164 numbers (repeats dropped). The "
        "provider may split the request into one order per losing carrier: {items} holds each. Orders start as "
        "draft (completed with the provider: documents, authorisation); porting_order.status_changed events move "
        "them on, and when one is ported its numbers become active numbers of the connection. Numbers the practice "
        "already has: 409 DIALER_NUMBER_ALREADY_CONNECTED. " + PROVIDER_ERRORS,
    )
    def post(self, request):
        data = self.parse_body(s.PortingOrderCreateSerializer).validated_data
        connection = selectors.connection_for_use(organization=self.organization, connection=data.get("connection_id"))
        orders = services.porting_order_create(
            organization=self.organization,
            actor=request.user,
            connection=connection,
            phone_numbers=data["phone_numbers"],
        )
        return Response({"items": s.PortingOrderSerializer(orders, many=True).data}, status=201)


class PortingOrderDetailView(DialerView):
    permission = "dialer:use"

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_porting_orders_read",
        responses={200: s.PortingOrderSerializer},
        summary="Read one porting order",
        description="Permission dialer:use. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.PortingOrderSerializer(self.get_tenant_object(PortingOrder, id)).data)


# --- parked events ----------------------------------------------------------------------------------------------------


class ParkedListView(DialerView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_parked_events_list",
        parameters=[s.ParkedListQuerySerializer],
        responses={200: s.ParkedEventPageSerializer},
        summary="Signed telephony events parked for review (a number or porting order not connected here)",
        description="Permission settings:update. {items, total, limit, offset}, newest first; connectionId "
        "filters. Each holds the provider's body as received (verified). Replay one once its number (or porting "
        "order) is connected, or dismiss it.",
    )
    def get(self, request):
        query = self.parse_query(s.ParkedListQuerySerializer).validated_data
        connection = query.get("connection_id")
        events = selectors.parked_events_of(
            organization=self.organization, connection_id=connection.id if connection else None
        )
        rows = events[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.ParkedEventSerializer(rows, many=True).data, events.count(), limit=query["limit"], offset=query["offset"]
        )


class ParkedDecisionView(DialerView):
    permission = "settings:update"
    action = ""

    def decide(self, request, id):
        event = self.get_tenant_object(TelephonyEvent, id)
        decide = services.parked_replay if self.action == "replay" else services.parked_dismiss
        event = decide(organization=self.organization, actor=request.user, event=event)
        return Response(s.ParkedEventSerializer(event).data)


class ParkedReplayView(ParkedDecisionView):
    action = "replay"

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_parked_events_replay",
        request=None,
        responses={200: s.ParkedEventSerializer},
        summary="Apply a parked event now that its number (or porting order) is connected",
        description="Permission settings:update. The event waits for a worker again (state received) and is "
        "applied like any other. Still not connected: 409 DIALER_EVENT_STILL_UNROUTED; already decided: 409 "
        "DIALER_EVENT_ALREADY_DECIDED. Another practice's id answers 404.",
    )
    def post(self, request, id):
        return self.decide(request, id)


class ParkedDismissView(ParkedDecisionView):
    action = "dismiss"

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_parked_events_dismiss",
        request=None,
        responses={200: s.ParkedEventSerializer},
        summary="Dismiss a parked event",
        description="Permission settings:update. Its body is dropped. Already decided: 409 "
        "DIALER_EVENT_ALREADY_DECIDED. Another practice's id answers 404.",
    )
    def post(self, request, id):
        return self.decide(request, id)


# --- calls ------------------------------------------------------------------------------------------------------------


class CallPagination(NewestFirstCursorPagination):
    ordering = ("-started_at", "-id")


class CallListView(DialerView):
    permission = "dialer:use"
    pagination_class = CallPagination

    @extend_schema(
        tags=TAGS,
        operation_id="calls_list",
        parameters=[s.CallListQuerySerializer],
        responses={200: s.CallSerializer(many=True)},
        summary="The call log: inbound, outbound, missed and voicemail calls, newest first",
        description="Permission dialer:use; OAuth scope dialer. {items, nextCursor} paging until null; filters "
        "patientId, direction (inbound, outbound), status (initiated, answered, completed, missed, no_answer, "
        "voicemail, failed), numberId. Calls are matched to the practice's patients by the other party's number "
        "(mobile or other phone, any spelling of it). recording is the newest recording or voicemail (its state: "
        "pending while it is copied from the provider, stored, unavailable).",
    )
    def get(self, request):
        query = self.parse_query(s.CallListQuerySerializer).validated_data
        patient, number = query.get("patient_id"), query.get("number_id")
        calls = selectors.calls_of(
            organization=self.organization,
            patient_id=patient.id if patient else None,
            direction=query.get("direction"),
            status=query.get("status"),
            number_id=number.id if number else None,
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(calls, request, view=self)
        return Response(paginator.get_paginated_response_data(s.CallSerializer(page, many=True).data))


class CallDetailView(DialerView):
    permission = "dialer:use"

    @extend_schema(
        tags=TAGS,
        operation_id="calls_read",
        responses={200: s.CallSerializer},
        summary="Read one call",
        description="Permission dialer:use. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.CallSerializer(self.get_tenant_object(Call, id)).data)


class RecordingView(DialerView):
    permission = "dialer:use"
    error_statuses = ("409", "410")

    def perform_content_negotiation(self, request, force=False):
        # The bytes are answered whatever Accept says (an audio element asks for audio/*); errors stay JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        tags=TAGS,
        operation_id="calls_recording",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="The audio (Content-Type as stored: audio/mpeg or audio/wav), Content-Disposition "
                "attachment, X-Content-Type-Options nosniff, Cache-Control private, no-store.",
            ),
            403: OpenApiResponse(
                ApiErrorSerializer, description="PERMISSION_DENIED: a recorded call needs dialer:recording."
            ),
            404: OpenApiResponse(
                ApiErrorSerializer,
                description="NOT_FOUND: no such call (another practice's included), no recording, or the stored "
                "file is missing.",
            ),
            409: OpenApiResponse(ApiErrorSerializer, description="RECORDING_NOT_READY: still being copied."),
            410: OpenApiResponse(ApiErrorSerializer, description="RECORDING_UNAVAILABLE: the copy failed for good."),
        },
        summary="Listen to a call's recording or voicemail",
        description="Permission dialer:use for a voicemail; a recorded call also needs dialer:recording (owners "
        "and managers). The newest recording of the call, served only through this route (never a storage URL). "
        "Pending: 409 RECORDING_NOT_READY; unavailable: 410 RECORDING_UNAVAILABLE; an unreachable store: 503 "
        "RECORDING_STORAGE_UNAVAILABLE with Retry-After.",
    )
    def get(self, request, id):
        call = self.get_tenant_object(Call, id)
        recording = selectors.call_recording(call)
        needs = "dialer:recording" if recording is not None and recording.kind == RecordingKind.CALL else None
        if needs and not access_backend().role_has_permission(self.membership.role, needs):
            raise PermissionDenied(details={"permission": needs})
        download = recordings.open_download(recording)
        response = FileResponse(
            download.handle, content_type=download.content_type, as_attachment=True, filename=download.filename
        )
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, no-store"
        return response


class CallPlaceView(DialerView):
    permission = "dialer:use"

    @extend_schema(
        tags=TAGS,
        operation_id="dialer_calls_place",
        request=s.CallPlaceSerializer,
        responses={201: s.CallSerializer},
        summary="Click-to-call: place an outbound call through the provider and log it",
        description="Permission dialer:use. to (E.164) or patientId (then the patient's mobile, else other phone); "
        "fromNumberId (an active number of the practice; default its first). The call is logged (status "
        "initiated, the caller as userId, matched to the patient by number when patientId is not sent) and "
        "placed with the provider's POST /v2/calls on the number's connection (recorded from the answer when the "
        "connection records calls); the provider's call events then move it on. No active number: 409 "
        "DIALER_NO_NUMBER; a connection without callControlAppId: 409 DIALER_NOT_CONFIGURED; a provider refusal or "
        "outage leaves the call failed in the log and answers 409 DIALER_PROVIDER_REFUSED or 503 "
        "DIALER_PROVIDER_UNAVAILABLE.",
    )
    def post(self, request):
        data = self.parse_body(s.CallPlaceSerializer).validated_data
        number = data.get("from_number")
        if number is not None:
            number = PhoneNumber.objects.for_org(self.organization).select_related("connection").get(id=number.id)
        call = services.call_place(
            organization=self.organization,
            actor=request.user,
            number=number,
            to_number=data["to"],
            patient=data.get("patient"),
        )
        return Response(s.CallSerializer(call).data, status=201)
