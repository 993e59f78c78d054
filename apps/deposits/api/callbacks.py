"""The payment platform's callbacks (public): POST /webhooks/payments-connect (deposit payments, refunds,
connected-account events) and POST /auth/payments-billing/webhook (the practice's own subscription). Each: the 1 MiB
body cap (middleware, 413 before anything is read), the Stripe-Signature over the raw body, then parsing, then the
event claimed by its id and applied in one transaction before the 200."""

import json
import logging

from django.conf import settings
from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from apps.core.errors import UnsupportedMediaType, ValidationFailed
from apps.core.fields import UNSTORABLE_PROBLEM, has_unstorable_text
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView
from apps.deposits import billing, payments, signatures
from apps.deposits.api import serializers as s
from apps.deposits.errors import CallbackNotStored, CallbackSignatureInvalid

logger = logging.getLogger("apps.deposits")

MIB = 1024 * 1024
MAX_EVENT_ID = 255
SIGNATURE = OpenApiParameter("Stripe-Signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)


class RawJson(BaseParser):
    """The views read the raw bytes themselves (the signature covers them); this only tells the schema the type."""

    media_type = "application/json"


def _event(raw: bytes) -> dict:
    if not raw:
        raise ValidationFailed.for_field("body", "a JSON event object is required")
    try:
        event = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ValidationFailed.for_field("body", "is not valid JSON") from None
    if not isinstance(event, dict):
        raise ValidationFailed.for_field("body", "must be a JSON object")
    if has_unstorable_text(event):  # PostgreSQL would refuse it: a 503 the platform would retry for days
        raise ValidationFailed.for_field("body", UNSTORABLE_PROBLEM)
    event_id, event_type = event.get("id"), event.get("type")
    if not isinstance(event_id, str) or not event_id or len(event_id) > MAX_EVENT_ID:
        raise ValidationFailed.for_field("id", f"must be the event id (1 to {MAX_EVENT_ID} characters)")
    if not isinstance(event_type, str) or not event_type or len(event_type) > 100:
        raise ValidationFailed.for_field("type", "must be the event type")
    data = event.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("object"), dict):
        raise ValidationFailed.for_field("data.object", "must be an object")
    return event


class SignedCallbackView(BaseApiView):
    public = True
    max_body_bytes = MIB
    parser_classes = [RawJson]
    renderer_classes = [CamelCaseJSONRenderer]
    error_statuses = ("415",)
    secret_setting = ""

    def verified_event(self, request) -> dict:
        content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise UnsupportedMediaType("The payment platform posts application/json.")
        raw = request.body
        try:
            signatures.verify(getattr(settings, self.secret_setting), raw, request.headers.get("Stripe-Signature"))
        except signatures.SignatureRefused as refusal:
            raise CallbackSignatureInvalid(str(refusal)) from None
        return _event(raw)

    @staticmethod
    def stored(receive, event: dict) -> bool:
        try:
            return receive(event=event)
        except DatabaseError:
            logger.exception("payment callback %s not stored", event.get("type"))
            raise CallbackNotStored() from None


COMMON = (
    "Public; verified before parsing: `Stripe-Signature: t=<unix>,v1=<hex>` where v1 is the HMAC-SHA256, keyed "
    "with this endpoint's signing secret, of the timestamp, a full stop and the raw body; several v1 values may be "
    "sent (any one matching passes); the timestamp must be within 300 seconds. A missing, stale or wrong signature "
    "answers 400 CALLBACK_SIGNATURE_INVALID and changes nothing; bodies over 1 MiB answer 413 before they are read; "
    "a body that is not an event object, or whose strings carry NUL or unpaired surrogate characters, 400. "
    "Each event is applied once, by its id: a replay answers 200 with "
    "duplicate true and changes nothing. An event that could not be stored answers 503 CALLBACK_NOT_STORED with "
    "Retry-After (the platform retries). Unknown event types are acknowledged and ignored. "
)


class PaymentsConnectWebhookView(SignedCallbackView):
    secret_setting = "SVC_PAYMENTS_WEBHOOK_SECRET"

    @extend_schema(
        tags=["payments"],
        operation_id="webhooks_payments_connect",
        summary="The payment platform's connect events: deposit payments, refunds, connected-account changes",
        description=COMMON
        + "Events are applied in any order by reconciling the deposit request with the object's state: "
        "checkout.session.completed (payment_status paid), checkout.session.async_payment_succeeded and "
        "payment_intent.succeeded mark it paid; charge.refunded records the cumulative refunded amount (refunded "
        "when it covers the amount; a refund arriving before its payment is kept and applied when the payment "
        "is linked); account.updated keeps the account's charge and payout flags; "
        "account.application.deauthorized disconnects the practice's account. Payment events count only from "
        "the practice's own connected account and with the request's amount and currency. Each status change "
        "emits deposit_request.status_changed (no provider ids) and writes deposit_paid / deposit_refunded on the "
        "patient's timeline.",
        parameters=[SIGNATURE],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: s.CallbackReceivedSerializer,
            503: OpenApiResponse(description="Not stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request):
        event = self.verified_event(request)
        applied = self.stored(payments.receive, event)
        return Response({"received": True, "duplicate": not applied})


class PaymentsBillingWebhookView(SignedCallbackView):
    secret_setting = "SVC_PAYMENTS_BILLING_WEBHOOK_SECRET"

    @extend_schema(
        tags=["billing"],
        operation_id="payments_billing_webhook",
        summary="The payment platform's billing callback: the practice's own subscription (plan, status)",
        description=COMMON
        + "customer.subscription.created, .updated and .deleted (and .paused, .resumed, .trial_will_end) set the "
        "practice's subscription: plan (the first item's price lookup key, else its id), status and current period "
        "end. The practice is named by the subscription's metadata.organization_id (set when the platform "
        "subscribed it) and recognised afterwards by the customer id. An older event than the one applied changes "
        "nothing. Never emits a webhook event (no commercial billing events exist).",
        parameters=[SIGNATURE],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: s.CallbackReceivedSerializer,
            503: OpenApiResponse(description="Not stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request):
        event = self.verified_event(request)
        applied = self.stored(billing.receive, event)
        return Response({"received": True, "duplicate": not applied})
