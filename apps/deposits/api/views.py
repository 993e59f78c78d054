"""Deposits routes: thin views that parse, call one selector or service, and render. The staff routes (tag deposits),
the patient's link (/l/{token}, tag payments) and, in callbacks.py, the payment platform's callbacks."""

import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from apps.core.browser_pages import wants_html
from apps.core.errors import NotFound, ServiceUnavailable
from apps.core.limits import MinuteWindowLimit
from apps.core.pagination import offset_page
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.deposits import pages, provider, selectors, services
from apps.deposits.api import serializers as s
from apps.deposits.errors import CheckoutRefused

logger = logging.getLogger("apps.deposits")

TAGS = ["deposits"]
PAYMENT_TAGS = ["payments"]


class DepositsView(BaseApiView):
    scope_area = "deposits"
    renderer_classes = [CamelCaseJSONRenderer]

    def deposit(self, id):
        deposit = selectors.deposit_get(organization=self.organization, deposit_id=id)
        if deposit is None:
            raise NotFound("No such deposit request.")
        return deposit

    @staticmethod
    def one(deposit, *, status: int = 200) -> Response:
        return Response(s.DepositRequestSerializer(deposit).data, status=status)


class DepositListView(DepositsView):
    permission = {"GET": "deposit:read", "POST": "deposit:create"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="deposits_list",
        parameters=[s.DepositListQuerySerializer],
        responses={200: s.DepositPageSerializer},
        summary="List deposit requests, newest first (filters: patient, journey, status)",
        description="Permission deposit:read. Offset paging; filters are ANDed.",
    )
    def get(self, request):
        query = self.parse_query(s.DepositListQuerySerializer).validated_data
        rows, total = selectors.deposit_page(
            organization=self.organization,
            limit=query["limit"],
            offset=query["offset"],
            patient_id=query.get("patient_id"),
            journey_id=query.get("journey_id"),
            status=query.get("status"),
        )
        items = s.DepositRequestSerializer(rows, many=True).data
        return offset_page(items, total, limit=query["limit"], offset=query["offset"])

    @extend_schema(
        tags=TAGS,
        operation_id="deposits_create",
        request=s.DepositCreateSerializer,
        responses={201: s.DepositRequestSerializer},
        summary="Create a draft deposit request for a patient (amount in minor units, currency, reason)",
        description="Permission deposit:create. amount is a positive integer in the currency's minor unit (at most "
        "100,000,000); currency one of the supported ISO 4217 codes (case-insensitive, stored lower case); "
        "journeyId, when given, a journey of the same patient (400 otherwise). A merged patient answers 409 "
        "PATIENT_MERGED. Emits deposit_request.created (ids, status, amount and currency; never the reason).",
    )
    def post(self, request):
        body = self.parse_body(s.DepositCreateSerializer)
        deposit = services.deposit_create(organization=self.organization, user=request.user, data=body.validated_data)
        return self.one(deposit, status=201)


class DepositView(DepositsView):
    permission = {"GET": "deposit:read", "PATCH": "deposit:update"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="deposits_read",
        responses={200: s.DepositRequestSerializer},
        summary="Read one deposit request",
        description="Permission deposit:read. Another practice's id answers 404. patientLink is the patient's "
        "current link while the request is sent.",
    )
    def get(self, request, id):
        return self.one(self.deposit(id))

    @extend_schema(
        tags=TAGS,
        operation_id="deposits_update",
        request=s.DepositUpdateSerializer,
        responses={200: s.DepositRequestSerializer},
        summary="Change a draft's amount, currency, reason or journey",
        description="Permission deposit:update. Only drafts change (a sent request stays as the patient saw it): "
        "any other status answers 409 DEPOSIT_TRANSITION_NOT_ALLOWED. No event (the catalogue has none for it).",
    )
    def patch(self, request, id):
        deposit = self.deposit(id)
        body = self.parse_body(s.DepositUpdateSerializer, partial=True)
        deposit = services.deposit_update(
            organization=self.organization, user=request.user, deposit_id=deposit.id, data=body.validated_data
        )
        return self.one(deposit)


class DepositSendView(DepositsView):
    permission = "deposit:create"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="deposits_send",
        request=s.DepositSendSerializer,
        responses={200: s.DepositRequestSerializer},
        summary="Send a draft (or expired) deposit request: a new signed, expiring patient link",
        description="Permission deposit:create (whoever may ask for a deposit may send it). draft or expired → "
        "sent; patientLink is a signed link (practice, request, expiry; HMAC) valid validDays (default 14). A "
        "request sent again gets a new link and its earlier one stops. Any other status answers 409 "
        "DEPOSIT_TRANSITION_NOT_ALLOWED. Emits deposit_request.status_changed (never the link). The body is "
        "optional.",
    )
    def post(self, request, id):
        deposit = self.deposit(id)
        valid_days = None
        if int(request.META.get("CONTENT_LENGTH") or 0):
            valid_days = self.parse_body(s.DepositSendSerializer).validated_data.get("valid_days")
        deposit = services.deposit_send(
            organization=self.organization, user=request.user, deposit_id=deposit.id, valid_days=valid_days
        )
        return self.one(deposit)


class DepositCancelView(DepositsView):
    permission = "deposit:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="deposits_cancel",
        request=None,
        responses={200: s.DepositRequestSerializer},
        summary="Cancel a draft, sent or expired deposit request (its link stops at once)",
        description="Permission deposit:update. Paid and refunded requests answer 409 "
        "DEPOSIT_TRANSITION_NOT_ALLOWED (refunds are made at the payment platform and arrive by its callback). "
        "Emits deposit_request.status_changed.",
    )
    def post(self, request, id):
        deposit = self.deposit(id)
        deposit = services.deposit_cancel(organization=self.organization, user=request.user, deposit_id=deposit.id)
        return self.one(deposit)


# --- the patient's link (public) -------------------------------------------------------------------------------------

PUBLIC_SCREEN = MinuteWindowLimit("deposits.link", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)


class FirstRenderer(BaseContentNegotiation):
    """The pages are HTML responses made by the view; whatever DRF renders is the JSON envelope (a browser gets a
    page for it through apps.core.browser_pages)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


NOT_VALID = (
    "A token that does not verify, has expired, is not the request's current link, or whose request is no longer "
    "sent (cancelled, expired): an HTML page for browsers, the ApiError envelope otherwise."
)
NOT_VALID_RESPONSES = {
    (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_VALID),
    (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_VALID),
}


class PatientLinkView(BaseApiView):
    public = True
    rate_limits = (PUBLIC_SCREEN,)
    renderer_classes = [CamelCaseJSONRenderer]
    content_negotiation_class = FirstRenderer

    @staticmethod
    def not_valid(request):
        if wants_html(request):
            return pages.not_found_page(request)
        raise NotFound("No such deposit link.")


class DepositLinkView(PatientLinkView):
    http_method_names = ["get", "head"]

    @extend_schema(
        tags=PAYMENT_TAGS,
        operation_id="deposit_link_page",
        summary="The deposit page a patient opens from their link: practice, amount, reason, a pay button",
        description="Public: the signed, expiring token is the boundary. A server-rendered page (no JavaScript) "
        "whose button posts to /l/{token}/checkout; a paid request shows the thank-you. Limit: 300 requests per "
        "minute per client address.",
        responses={(200, "text/html"): OpenApiTypes.STR, **NOT_VALID_RESPONSES},
        auth=[],
    )
    def get(self, request, token):
        deposit = services.deposit_for_link(token)
        if deposit is None:
            return self.not_valid(request)
        return pages.deposit_page(request, deposit=deposit, token=token)


class DepositCheckoutView(PatientLinkView):
    http_method_names = ["post"]
    max_body_bytes = 16 * 1024
    error_statuses = ("409",)

    @extend_schema(
        tags=PAYMENT_TAGS,
        operation_id="deposit_link_checkout",
        summary="Start the payment platform's checkout for the deposit (the page's button)",
        description="Public: the signed token is the boundary; any body is ignored. Opens a checkout session on "
        "the practice's connected account (idempotent per link: pressing again opens the same session). A browser "
        "(Accept text/html) is redirected there (303); an API client gets checkoutUrl. A paid request answers 409 "
        "DEPOSIT_TRANSITION_NOT_ALLOWED, a practice without a connected account 409 PAYMENTS_NOT_CONNECTED, a "
        "refusal by the platform 409 PAYMENT_CHECKOUT_REFUSED, an unreachable platform (or a checkout that could "
        "not be stored) 503 with Retry-After. "
        "Limit: 300 requests per minute per client address.",
        request=None,
        responses={
            200: s.CheckoutSerializer,
            303: OpenApiResponse(description="A browser: redirected to the checkout page."),
            **NOT_VALID_RESPONSES,
        },
        auth=[],
    )
    def post(self, request, token):
        deposit = services.deposit_for_link(token)
        if deposit is None:
            return self.not_valid(request)
        try:
            checkout = services.checkout_start(deposit=deposit, token=token)
        except provider.ProviderRefused as refusal:
            raise CheckoutRefused(details={"providerCode": refusal.code}) from None
        except DatabaseError:
            logger.exception("deposit checkout not stored")
            raise ServiceUnavailable("The checkout could not be started; retry shortly.") from None
        if wants_html(request):
            return HttpResponseRedirect(checkout.url, status=303)
        return Response(s.CheckoutSerializer({"checkout_url": checkout.url}).data)
