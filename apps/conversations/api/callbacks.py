"""Provider callbacks (public, /webhooks/*): verified with the connection's own credentials over the body as
received, stored durably, acknowledged, then processed in Celery."""

import logging

from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser

from apps.conversations import inbound, selectors
from apps.conversations.errors import CallbackNotStored, CallbackSignatureInvalid
from apps.conversations.models import Kind
from apps.conversations.providers import MalformedCallback, TwilioSms
from apps.conversations.services import connection_credentials
from apps.core.errors import NotFound, UnsupportedMediaType, ValidationFailed
from apps.core.views import BaseApiView

logger = logging.getLogger("apps.conversations")

SMS_BODY_BYTES = 64 * 1024
FORM = "application/x-www-form-urlencoded"
# Twilio expects TwiML back; an empty <Response/> replies nothing to the sender.
EMPTY_TWIML = b'<?xml version="1.0" encoding="UTF-8"?><Response></Response>'


class RawForm(BaseParser):
    """The view reads the raw bytes itself (the signature covers them); this only tells the schema the media type."""

    media_type = FORM


class SmsInboundView(BaseApiView):
    public = True
    max_body_bytes = SMS_BODY_BYTES
    parser_classes = [RawForm]

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_sms_inbound",
        summary="Inbound SMS from the SMS provider (Twilio Programmable Messaging)",
        description=(
            "Public; the routing token picks the channel connection and grants nothing by itself. The form-encoded "
            "body is verified before it is used: `X-Twilio-Signature` must be the base64 HMAC-SHA1, keyed with the "
            "connection's auth token, of the full callback URL followed by every POST parameter's name and value "
            "sorted by name. MessageSid, From and To are required. The message's receipt (SHA-256 of MessageSid, "
            "per connection) is claimed first: a retried callback answers 200 again and stores nothing. The raw "
            "callback is stored before the 200 (an empty TwiML `<Response/>`), then a worker matches the sender "
            "to the practice's patients (or opens an enquiry), stores the message in the patient's conversation "
            "and applies STOP/START keywords. Unknown or disconnected tokens answer 404; bodies over 64 KiB 413 "
            "before parsing; a callback that could not be stored 503 CALLBACK_NOT_STORED with Retry-After."
        ),
        parameters=[OpenApiParameter("X-Twilio-Signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)],
        request={FORM: OpenApiTypes.OBJECT},
        responses={
            (200, "text/xml"): OpenApiResponse(OpenApiTypes.STR, description="Received (or a duplicate)."),
            401: OpenApiResponse(description="Missing or wrong signature."),
            413: OpenApiResponse(description="Body over 64 KiB."),
            415: OpenApiResponse(description="Not form-encoded."),
            503: OpenApiResponse(description="Not stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request, token):
        connection = selectors.connection_for_callback(kind=Kind.SMS, token=token)
        if connection is None:
            raise NotFound("No channel connection answers at this address.")
        content_type = request.META.get("CONTENT_TYPE", "")
        if content_type.split(";")[0].strip().lower() != FORM:
            raise UnsupportedMediaType("The SMS provider posts application/x-www-form-urlencoded.")
        raw = request.body
        try:
            params = TwilioSms.form(raw)
        except MalformedCallback as error:
            raise ValidationFailed.for_field(error.field_name, error.problem) from None
        try:
            auth_token = connection_credentials(connection)["auth_token"]
        except ValueError:  # encrypted with a key this deployment no longer has: ours to fix, the provider retries
            logger.error("SMS connection %s: credentials cannot be decrypted", connection.id)
            raise CallbackNotStored() from None
        header = request.headers.get(TwilioSms.signature_header, "")
        if not TwilioSms.verify(auth_token, request.build_absolute_uri(), params, header):
            raise CallbackSignatureInvalid()
        try:
            message = TwilioSms.inbound(params)
        except MalformedCallback as error:
            raise ValidationFailed.for_field(error.field_name, error.problem) from None
        try:
            inbound.inbound_receive(connection=connection, inbound=message, content_type=content_type, raw=raw)
        except DatabaseError:
            logger.exception("inbound SMS not stored")
            raise CallbackNotStored() from None
        return HttpResponse(EMPTY_TWIML, content_type="text/xml")
