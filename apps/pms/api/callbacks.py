"""The connected PMS's change callbacks (public; tag pms): POST /webhooks/pms/{provider}/{token}. The acknowledging
path is apps.pms.inbound's: bounded body, provider, token, signature, one receipt statement, 200."""

import logging
import time

from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from apps.core.errors import NotFound, UnsupportedMediaType
from apps.core.views import BaseApiView
from apps.pms import inbound, services
from apps.pms import provider as adapter
from apps.pms.api import serializers as s
from apps.pms.errors import PmsCallbackNotStored, PmsSignatureInvalid, PmsTimestampOutOfRange

logger = logging.getLogger("apps.pms")

MAX_BODY_BYTES = 1024 * 1024


class RawJson(BaseParser):
    """The view reads the raw bytes itself (the signature covers them); this only tells the schema the type."""

    media_type = "application/json"


class PmsCallbackView(BaseApiView):
    public = True
    max_body_bytes = MAX_BODY_BYTES
    parser_classes = [RawJson]
    error_statuses = ("401", "413", "415")

    @extend_schema(
        tags=["pms"],
        operation_id="webhooks_pms",
        summary="Patient and appointment changes from the connected PMS (signed)",
        description="Public; provider is pmsconnect (the connector contract of docs/pms.md) and the routing token "
        "picks the connection, granting nothing by itself. In order: bodies over 1 MiB answer 413 before they are "
        "read; an unknown provider or an unknown or disconnected token answers 404; then X-Service-Delivery-Id "
        "(at most 200 characters), X-Service-Timestamp (Unix seconds, within five minutes: otherwise 401 "
        "PMS_TIMESTAMP_OUT_OF_RANGE) and X-Service-Signature (v1=<hex HMAC-SHA256> over "
        '"<timestamp>.<delivery id>.<raw body>" with the connection\'s signing secret, or the previous one for 24 '
        "hours after a rotation; otherwise 401 PMS_SIGNATURE_INVALID), nothing stored on a refusal. Body "
        '{"events": [{"kind": "patient" | "appointment", "id", "revision" (integer), "updatedAt", "data"}]}, 1 '
        "to 100 events. One receipt per delivery id: a retry answers 200 with duplicate true. A body that is not "
        "JSON, not this shape, has an item that cannot be read or has more than 100 events settles terminally: "
        "200 with state rejected and the reason (malformed_json, malformed_shape, malformed_<field>_invalid, "
        "no_events, too_many_events); it is never processed and must not be resent. After the 200 a worker "
        "applies the events in order: a newer revision applies (its events keep one logical id per item and "
        "revision), an unchanged replay or a revision-only bump changes nothing, different content at the same "
        "revision is held for review (GET /settings/pms/reviews), an older revision is ignored.",
        parameters=[
            OpenApiParameter("X-Service-Delivery-Id", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("X-Service-Timestamp", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("X-Service-Signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
        ],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={200: s.ReceivedSerializer},
        auth=[],
    )
    def post(self, request, provider, token):
        try:
            connection = inbound.connection_for_callback(provider, token)
        except DatabaseError:
            logger.warning("PMS callback: the connection lookup failed")
            raise PmsCallbackNotStored() from None
        if connection is None:
            raise NotFound("No PMS connection answers at this address.")
        content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise UnsupportedMediaType("The PMS posts application/json.")
        raw = request.body
        try:
            delivery_id = adapter.verify(raw, request.headers, services.callback_secrets(connection), now=time.time())
        except adapter.SignatureRefused as refused:
            error = PmsTimestampOutOfRange if refused.code == "PMS_TIMESTAMP_OUT_OF_RANGE" else PmsSignatureInvalid
            raise error(str(refused)) from None
        try:
            received = inbound.receive(connection=connection, delivery_id=delivery_id, raw=raw)
        except DatabaseError:
            logger.exception("PMS callback not stored")
            raise PmsCallbackNotStored() from None
        return Response(
            {
                "received": True,
                "duplicate": received.duplicate,
                "state": received.state,
                "reason": received.reason or None,
            }
        )
