"""Provider callbacks (public, /webhooks/*). Each one: the body cap (middleware, before anything is read), the
provider's signature over the body as received, then parsing, then every item stored (or parked) in one
transaction before the acknowledgement; processing happens in Celery (apps.conversations.inbound)."""

import contextlib
import hashlib
import logging
import time

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from redis.exceptions import RedisError
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from apps.conversations import inbound, selectors, services
from apps.conversations.errors import CallbackNotStored, CallbackSignatureInvalid
from apps.conversations.models import ChannelConnection, Health, Kind
from apps.conversations.providers import (
    MAX_EVENT_ID_BYTES,
    InboundText,
    Item,
    MalformedCallback,
    ResendEmail,
    SignatureRefused,
    TelnyxMessaging,
    TwilioSms,
    WhatsAppCloud,
)
from apps.core.crypto import constant_time_equals
from apps.core.errors import ApiError, NotFound, RateLimited, UnsupportedMediaType, ValidationFailed
from apps.core.limits import take_token
from apps.core.views import BaseApiView
from apps.core.wire import Camelized

logger = logging.getLogger("apps.conversations")

KIB = 1024
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
# Twilio expects TwiML back; an empty <Response/> replies nothing to the sender.
EMPTY_TWIML = b'<?xml version="1.0" encoding="UTF-8"?><Response></Response>'
MAX_CHALLENGE_CHARS = 256


class RawForm(BaseParser):
    """The views read the raw bytes themselves (signatures cover them); these only tell the schema the type."""

    media_type = FORM


class RawJson(BaseParser):
    media_type = JSON


def field_error(name: str, problem: str) -> ValidationFailed:
    """400 naming the provider's own field as the provider spells it (not camelCased like our fields)."""
    return ValidationFailed(f"{name}: {problem}", details={"fields": Camelized({name: [problem]})})


def routing(kind: str, items: list[Item], connection: ChannelConnection, own: dict) -> dict:
    """How a token route's items are routed: to the token's practice's connections (`own`); the rest parked for that
    practice, except numbers another practice has connected, which are parked for the operators."""
    unrouted = {item.recipient for item in items} - set(own)
    elsewhere = selectors.connections_by_address(kind=kind, addresses=unrouted) if unrouted else {}
    return {
        "connections": own,
        "attribute_to_id": connection.organization_id,
        "owned_elsewhere": frozenset(elsewhere),
    }


class CallbackView(BaseApiView):
    public = True
    error_statuses = ("401",)  # CALLBACK_SIGNATURE_INVALID; 503 is CALLBACK_NOT_STORED with Retry-After

    def require_media_type(self, request, expected: str) -> str:
        content_type = request.META.get("CONTENT_TYPE", "")
        if content_type.split(";")[0].strip().lower() != expected:
            raise UnsupportedMediaType(f"The provider posts {expected}.")
        return content_type

    @staticmethod
    def parsed(parse, *args):
        try:
            return parse(*args)
        except MalformedCallback as error:
            raise field_error(error.field_name, error.problem) from None

    @staticmethod
    def verified(verify, *args) -> None:
        try:
            verify(*args)
        except SignatureRefused as refusal:
            raise CallbackSignatureInvalid(str(refusal)) from None

    @staticmethod
    def credentials(connection: ChannelConnection) -> dict:
        try:
            return services.connection_credentials(connection)
        except ValueError:  # encrypted with a key this deployment no longer has: ours to fix, the provider retries
            logger.error("channel connection %s: credentials cannot be decrypted", connection.id)
            with contextlib.suppress(DatabaseError):  # the 503 stands either way
                services.connection_record_health(
                    connection=connection, health=Health.UNHEALTHY, reason="credentials cannot be decrypted"
                )
            raise CallbackNotStored() from None

    @staticmethod
    def store(**arguments) -> inbound.Received:
        try:
            return inbound.receive(**arguments)
        except DatabaseError:
            logger.exception("%s callback not stored", arguments["kind"])
            raise CallbackNotStored() from None

    @staticmethod
    def routed_token(kind: str, token: str) -> ChannelConnection:
        connection = selectors.connection_for_callback(kind=kind, token=token)
        if connection is None:
            raise NotFound("No channel connection answers at this address.")
        return connection


# --- SMS provider (Twilio) ----------------------------------------------------------------------------------------


class SmsCallbackView(CallbackView):
    max_body_bytes = 64 * KIB
    parser_classes = [RawForm]
    parse_item = None  # TwilioSms.inbound or TwilioSms.status

    def post(self, request, token):
        connection = self.routed_token(Kind.SMS, token)
        self.require_media_type(request, FORM)
        params = self.parsed(TwilioSms.form, request.body)
        auth_token = self.credentials(connection)["auth_token"]
        header = request.headers.get(TwilioSms.signature_header, "")
        self.verified(TwilioSms.verify, auth_token, request.build_absolute_uri(), params, header)
        item = self.parsed(type(self).parse_item, params)  # None: a status that says nothing about our messages
        # The number the provider says it reached must be this connection's, or the body is parked for the
        # practice to review (a number of its provider account that it has not connected here).
        items = [item] if item is not None else []
        self.store(kind=Kind.SMS, items=items, **routing(Kind.SMS, items, connection, {connection.address: connection}))
        return HttpResponse(EMPTY_TWIML, content_type="text/xml")


TWILIO_SIGNATURE = OpenApiParameter("X-Twilio-Signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)
TWILIO_VERIFICATION = (
    "Public; the routing token picks the channel connection and grants nothing by itself. The form-encoded body is "
    "verified before it is used: `X-Twilio-Signature` must be the base64 HMAC-SHA1, keyed with the connection's "
    "auth token, of the full callback URL followed by every POST parameter's name and value sorted by name. "
)


class SmsInboundView(SmsCallbackView):
    parse_item = TwilioSms.inbound

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_sms_inbound",
        summary="Inbound SMS from the SMS provider (Twilio Programmable Messaging)",
        description=TWILIO_VERIFICATION
        + "MessageSid, From and To are required. The message's receipt (SHA-256 of MessageSid, per connection) is "
        "claimed first: a retried callback answers 200 again and stores nothing. The callback is stored before the "
        "200 (an empty TwiML `<Response/>`), then a worker matches the sender to the practice's patients (or opens "
        "an enquiry), stores the message and its media in the patient's conversation and applies STOP/START "
        "keywords. A `To` that is not the connection's number is parked in the practice's ingest-review queue. "
        "Unknown or disconnected tokens answer 404; bodies over 64 KiB 413 before parsing; a callback that could "
        "not be stored or parked 503 CALLBACK_NOT_STORED with Retry-After.",
        parameters=[TWILIO_SIGNATURE],
        request={FORM: OpenApiTypes.OBJECT},
        responses={
            (200, "text/xml"): OpenApiResponse(OpenApiTypes.STR, description="Received or a duplicate."),
        },
        auth=[],
    )
    def post(self, request, token):
        return super().post(request, token)


class SmsStatusView(SmsCallbackView):
    parse_item = TwilioSms.status

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_sms_status",
        summary="Delivery status of an SMS we sent (Twilio status callback)",
        description=TWILIO_VERIFICATION
        + "MessageSid, MessageStatus (accepted, scheduled, queued, sending, sent, delivered, read, undelivered, "
        "failed, canceled) and From are required. A worker moves the message's status forward only (a late "
        "`sent` after `delivered` changes nothing; a failure counts only before delivery) and emits "
        "message.status_changed. Statuses of messages this service did not send change nothing.",
        parameters=[TWILIO_SIGNATURE],
        request={FORM: OpenApiTypes.OBJECT},
        responses={(200, "text/xml"): OpenApiResponse(OpenApiTypes.STR, description="Received.")},
        auth=[],
    )
    def post(self, request, token):
        return super().post(request, token)


# --- messaging platform (WhatsApp Business Cloud API) -------------------------------------------------------------


class MessagingAppView(CallbackView):
    max_body_bytes = 1024 * KIB
    parser_classes = [RawJson]

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_messaging_app_handshake",
        summary="Subscription handshake of the messaging platform",
        description="Public. The platform checks the callback URL with `hub.mode=subscribe`, `hub.verify_token` "
        "and `hub.challenge`; when the verify token is the platform's configured one the challenge is echoed as "
        "text/plain, otherwise 403.",
        parameters=[
            OpenApiParameter("hub.mode", OpenApiTypes.STR, required=True),
            OpenApiParameter("hub.verify_token", OpenApiTypes.STR, required=True),
            OpenApiParameter("hub.challenge", OpenApiTypes.STR, required=True),
        ],
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="The challenge."),
        },
        auth=[],
    )
    def get(self, request):
        mode, token = request.GET.get("hub.mode", ""), request.GET.get("hub.verify_token", "")
        challenge = request.GET.get("hub.challenge", "")
        for name, value in (("hub.mode", mode), ("hub.verify_token", token), ("hub.challenge", challenge)):
            if not value:
                raise field_error(name, "is required")
        if len(challenge) > MAX_CHALLENGE_CHARS:
            raise field_error("hub.challenge", f"is longer than {MAX_CHALLENGE_CHARS} characters")
        expected = settings.SVC_MESSAGING_APP_VERIFY_TOKEN
        if mode != "subscribe" or not expected or not constant_time_equals(expected, token):
            raise HandshakeRefused()
        response = HttpResponse(challenge, content_type="text/plain; charset=utf-8")
        response["X-Content-Type-Options"] = "nosniff"
        return response

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_messaging_app",
        summary="Inbound messages and statuses from the messaging platform (WhatsApp Business Cloud API)",
        description="Public; one URL for every connected number. `X-Hub-Signature-256` must be `sha256=` and the "
        "hex HMAC-SHA256 of the body as received, keyed with the platform's app secret; only then is the JSON "
        "read. One body may carry messages and statuses of several numbers (at most 100 items): each goes to the "
        "connection whose phone number id is `metadata.phone_number_id`; items for a number not connected here "
        "are parked for operator review before the 200. Each message claims its receipt (SHA-256 of the wamid, "
        "per connection) first, so a redelivery stores nothing twice. Text, button replies and media (image, "
        "audio, video, document, sticker: copied to the practice's storage afterwards) become inbox messages; "
        "statuses (sent, delivered, read, failed) move our messages forward. Template review decisions "
        "(`message_template_status_update`) set the approval status of the practices' templates of that name and "
        "language, for the practices with a number in that business account (learnt from these signed callbacks). "
        "Over 1 MiB: 413.",
        parameters=[OpenApiParameter("X-Hub-Signature-256", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)],
        request={JSON: OpenApiTypes.OBJECT},
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="Received.")},
        auth=[],
    )
    def post(self, request):
        self.require_media_type(request, JSON)
        if not settings.SVC_MESSAGING_APP_SECRET:
            raise CallbackNotStored("The messaging platform is not configured on this deployment.")
        header = request.headers.get(WhatsAppCloud.signature_header, "")
        self.verified(WhatsAppCloud.verify, settings.SVC_MESSAGING_APP_SECRET, request.body, header)
        body = self.parsed(WhatsAppCloud.parse, request.body)
        items = body.items
        services.business_accounts_seen(body.accounts)
        services.template_statuses_received(body.templates)
        received = self.store(
            kind=Kind.MESSAGING_APP,
            items=items,
            connections=selectors.connections_by_address(
                kind=Kind.MESSAGING_APP, addresses={item.recipient for item in items}
            ),
        )
        return Response(_acknowledgement(received))


class HandshakeRefused(ApiError):
    status_code = 403
    code = "HANDSHAKE_REFUSED"
    message = "The verify token is not this platform's."


def _acknowledgement(received: inbound.Received) -> dict:
    return {"stored": received.stored, "duplicates": received.duplicates, "parked": bool(received.parked)}


# --- e-mail provider (Resend, Svix signing) -----------------------------------------------------------------------


class EmailProviderView(CallbackView):
    max_body_bytes = 256 * KIB
    parser_classes = [RawJson]

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_email_provider",
        summary="Inbound e-mail and delivery events from the e-mail provider (Resend)",
        description="Public; one URL for every practice. Signed with Svix (Standard Webhooks): `svix-id` (the "
        "event id, at most 512 bytes), `svix-timestamp` (within five minutes of now) and `svix-signature` (one "
        "or more space-separated `v1,<base64 HMAC-SHA256>` of `id.timestamp.body`, keyed with the platform's "
        "`whsec_` secret); `webhook-*` header names are accepted too. Each event id has a five-attempt, 24-hour "
        "receipt: a delivery after it was stored, after five attempts or after 24 hours answers 200 and changes "
        "nothing. `email.received` becomes an inbox message of the connection whose address is a recipient (the "
        "text is read from the provider's API while processing); it counts against the platform-wide inbound "
        "limit of 2,000 a minute and the receiving address's fair-use quota (429 RATE_LIMITED with Retry-After, "
        "so the provider retries; a refusal uses none of the five attempts). `email.bounced` (permanent) and "
        "`email.complained` block the address for e-mail and "
        "withdraw the e-mail consent of the patients behind it; sent/delivered/delayed/failed/bounced move our "
        "messages' status. Events for addresses not connected here are parked for operator review.",
        parameters=[
            OpenApiParameter("svix-id", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("svix-timestamp", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("svix-signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
        ],
        request={JSON: OpenApiTypes.OBJECT},
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="Received, or a settled event."),
        },
        auth=[],
    )
    def post(self, request):
        self.require_media_type(request, JSON)
        event_id, timestamp, signature = ResendEmail.headers(request.headers)
        if len(event_id.encode()) > MAX_EVENT_ID_BYTES:
            raise field_error("svix-id", f"is longer than {MAX_EVENT_ID_BYTES} bytes")
        secrets = settings.SVC_EMAIL_WEBHOOK_SECRETS
        if not secrets:
            raise CallbackNotStored("The e-mail provider is not configured on this deployment.")
        self.verified(ResendEmail.verify, secrets, event_id, timestamp, signature, request.body, time.time())
        items = self.parsed(ResendEmail.items, request.body)
        _take_inbound_email_tokens(items)  # before the receipt: a refusal here uses none of the five attempts
        try:
            attempt = services.email_event_attempt(event_id)
        except DatabaseError:
            raise CallbackNotStored() from None
        if not attempt:
            return Response({"stored": 0, "duplicates": len(items), "parked": False})
        connections = selectors.connections_by_address(kind=Kind.EMAIL, addresses={item.recipient for item in items})
        if connections:  # co-recipients that are not ours are nobody's business here; park only the unroutable
            items = [item for item in items if item.recipient in connections]
        received = self.store(kind=Kind.EMAIL, items=items, connections=connections, email_event_id=event_id)
        return Response(_acknowledgement(received))


def _take_inbound_email_tokens(items: list[Item]) -> None:
    """Platform-wide inbound e-mail (2,000 a minute) and each receiving address's fair-use quota, before anything is
    stored: one flooded inbox cannot use up the platform's share (keyed by the address's SHA-256; the sender is not
    authenticated, so it is not what a quota may hang on). Redis unavailable: fail open (the mail is stored)."""
    for address in {item.recipient for item in items if isinstance(item, InboundText)}:
        key = hashlib.sha256(address.encode()).hexdigest()[:32]
        try:
            for name, setting in (
                ("inbound-email:platform", "SVC_INBOUND_EMAIL_BUCKET"),
                (f"inbound-email:address:{key}", "SVC_INBOUND_EMAIL_ADDRESS_BUCKET"),
            ):
                burst, per_second = getattr(settings, setting)
                allowed, retry_after = take_token(name, burst=burst, per_second=per_second)
                if not allowed:
                    raise RateLimited(retry_after, "Inbound e-mail is over its limit; retry later.")
        except RedisError:
            logger.warning("inbound e-mail limits unavailable; failing open")
            return


# --- telephony texting (Telnyx Messaging) -------------------------------------------------------------------------


class TelephonyMessagingView(CallbackView):
    max_body_bytes = 256 * KIB
    parser_classes = [RawJson]

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_telephony_messaging",
        summary="Inbound texts and delivery events of texting-enabled telephony numbers (Telnyx Messaging)",
        description="Public; the routing token picks the connection whose telephony account signs the body and "
        "grants nothing by itself. `telnyx-signature-ed25519` (base64 Ed25519 signature) over "
        "`telnyx-timestamp|body` must verify with the account's public key, and the timestamp must be within "
        "five minutes. `message.received` is an inbound text: the receiving number (`data.payload.to[0]`) "
        "resolves the practice's connection; a number of the account that the practice has not connected is "
        "parked in its ingest-review queue. `message.sent` and `message.finalized` move our messages' status. "
        "Each message claims its receipt (SHA-256 of the message id, per connection) first. Over 256 KiB: 413.",
        parameters=[
            OpenApiParameter("telnyx-signature-ed25519", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("telnyx-timestamp", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
        ],
        request={JSON: OpenApiTypes.OBJECT},
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="Received.")},
        auth=[],
    )
    def post(self, request, token):
        connection = self.routed_token(Kind.TELEPHONY_MESSAGING, token)
        self.require_media_type(request, JSON)
        public_key = self.credentials(connection)["public_key"]
        signature = request.headers.get("telnyx-signature-ed25519", "")
        timestamp = request.headers.get("telnyx-timestamp", "")
        self.verified(TelnyxMessaging.verify, public_key, signature, timestamp, request.body, time.time())
        items = self.parsed(TelnyxMessaging.items, request.body)
        # The receiving number resolves the practice: only the token's practice's numbers are delivered to.
        own = selectors.connections_by_address(
            kind=Kind.TELEPHONY_MESSAGING,
            addresses={item.recipient for item in items},
            organization=connection.organization_id,
        )
        received = self.store(
            kind=Kind.TELEPHONY_MESSAGING, items=items, **routing(Kind.TELEPHONY_MESSAGING, items, connection, own)
        )
        return Response(_acknowledgement(received))
