"""The telephony provider's callbacks (public; tag voice): POST /webhooks/telephony/{token} (call, recording,
number-order and number-porting events) and POST /webhooks/telephony/{token}/failover-probe. The acknowledging path
is apps.dialer.inbound's: bounded body, token, signature, one receipt statement, 200."""

import logging
import time

from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from apps.core.crypto import Ed25519SignatureRefused, verify_telnyx_signature
from apps.core.errors import NotFound, UnsupportedMediaType, ValidationFailed
from apps.core.views import BaseApiView
from apps.core.wire import Camelized
from apps.dialer import inbound, probe, selectors
from apps.dialer.api import serializers as s
from apps.dialer.errors import CallbackNotStored, CallbackSignatureInvalid

logger = logging.getLogger("apps.dialer")

TAGS = ["voice"]
MAX_BODY_BYTES = 256 * 1024


class RawJson(BaseParser):
    """The view reads the raw bytes itself (the signature covers them); this only tells the schema the type."""

    media_type = "application/json"


def _connection(token: str) -> selectors.CallbackConnection:
    try:
        connection = selectors.connection_for_callback(token)
    except DatabaseError:
        logger.warning("telephony callback: the connection lookup failed")
        raise CallbackNotStored() from None
    if connection is None:
        raise NotFound("No telephony connection answers at this address.")
    return connection


class TelephonyCallbackView(BaseApiView):
    public = True
    max_body_bytes = MAX_BODY_BYTES
    parser_classes = [RawJson]
    error_statuses = ("401", "413", "415")

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_telephony",
        summary="Call, recording and number-porting events of the practice's telephony account (Telnyx)",
        description="Public; the routing token picks the connection and grants nothing by itself. Bodies over "
        "256 KiB answer 413 before they are read. `telnyx-signature-ed25519` (base64 Ed25519 signature) over "
        "`telnyx-timestamp|raw body` must verify with the connection's public key, and the timestamp must be within "
        "five minutes (missing, stale or wrong: 401 CALLBACK_SIGNATURE_INVALID, nothing stored); only then is the "
        "JSON read: `data.id` (the event id, at most 128 characters), `data.event_type` and `data.payload` "
        "(otherwise 400). Each event id is received once per connection: a retry answers 200 with duplicate true "
        "and changes nothing. A call event for a number that is not one of this connection's (or a porting event "
        "for a porting order it does not have) is parked for review (GET /dialer/parked-events) before the 200 "
        "(parked true); when the event can be neither stored nor parked the answer is 503 CALLBACK_NOT_STORED with "
        "Retry-After. After the 200 a worker applies it: call.initiated / call.answered / call.hangup keep the "
        "call log (an inbound call never answered is missed, and gets a follow-up call task), "
        "call.machine.detection.ended records who answered, call.recording.saved copies the recording into the "
        'practice\'s storage (client_state base64 "voicemail" marks a voicemail), number_order.complete '
        "activates ordered numbers, porting_order.* moves porting orders (ported: the numbers become active), "
        "portout.status_changed records a port-out (ported: the number is gone). Other types are acknowledged "
        "and ignored. Unknown or disconnected tokens answer 404.",
        parameters=[
            OpenApiParameter("telnyx-signature-ed25519", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("telnyx-timestamp", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
        ],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={200: s.ReceivedSerializer},
        auth=[],
    )
    def post(self, request, token):
        connection = _connection(token)
        content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise UnsupportedMediaType("The telephony provider posts application/json.")
        raw = request.body
        try:
            verify_telnyx_signature(
                connection.public_key,
                request.headers.get("telnyx-signature-ed25519", ""),
                request.headers.get("telnyx-timestamp", ""),
                raw,
                now=time.time(),
            )
        except Ed25519SignatureRefused as refusal:
            raise CallbackSignatureInvalid(str(refusal)) from None
        try:
            event = inbound.parse_event(raw)
        except inbound.MalformedCallback as error:
            raise ValidationFailed(
                f"{error.field_name}: {error.problem}",
                details={"fields": Camelized({error.field_name: [error.problem]})},
            ) from None
        try:
            received = inbound.receive(connection=connection, event=event)
        except DatabaseError:
            logger.exception("telephony callback %s not stored", event.event_type)
            raise CallbackNotStored() from None
        return Response(Camelized({"received": True, "duplicate": received.duplicate, "parked": received.parked}))


class FailoverProbeView(BaseApiView):
    public = True
    max_body_bytes = 64 * 1024

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_telephony_failover_probe",
        summary="Liveness for the telephony provider's failover service: database and media storage",
        description="Public; the routing token picks the connection (unknown or disconnected: 404). 200 "
        '{"status": "ok"} only when a database query (the token\'s lookup) and the media storage check (a probe '
        "object written, read back and deleted through the storage API) both answer; otherwise 503 "
        '{"status": "unavailable", "dependency": "database"} or {"status": "unavailable", "dependency": "r2"} '
        "(the media storage). Any body is ignored.",
        request=None,
        responses={
            200: s.ProbeSerializer,
            503: OpenApiResponse(s.ProbeSerializer, description="A dependency did not answer."),
        },
        auth=[],
    )
    def post(self, request, token):
        try:
            connection = selectors.connection_for_callback(token)
        except DatabaseError:
            logger.warning("failover probe: the database did not answer")
            return Response({"status": "unavailable", "dependency": "database"}, status=503)
        if connection is None:
            raise NotFound("No telephony connection answers at this address.")
        if not probe.storage_answers():
            return Response({"status": "unavailable", "dependency": "r2"}, status=503)
        return Response({"status": "ok"})
