"""Connecting the practice's payment account: the settings routes and the platform's OAuth return."""

import logging

from django.conf import settings
from django.contrib.auth import get_user
from django.db import DatabaseError
from django.http import HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.core.browser_pages import wants_html
from apps.core.errors import ServiceUnavailable
from apps.core.limits import MinuteWindowLimit
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView
from apps.deposits import connecting, provider
from apps.deposits.api.views import FirstRenderer
from apps.deposits.errors import ConnectStateInvalid
from apps.deposits.models import AccountStatus

logger = logging.getLogger("apps.deposits")

SETTINGS_TAGS = ["settings", "payments"]


class SubscriptionSerializer(serializers.Serializer):
    plan = serializers.CharField()
    status = serializers.CharField()
    current_period_end = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "PracticeSubscription"


class PaymentSettingsSerializer(serializers.Serializer):
    connected = serializers.BooleanField()
    account_status = serializers.ChoiceField(choices=AccountStatus.choices, allow_null=True)
    charges_enabled = serializers.BooleanField()
    payouts_enabled = serializers.BooleanField()
    connected_at = serializers.DateTimeField(allow_null=True)
    disconnected_at = serializers.DateTimeField(allow_null=True)
    subscription = SubscriptionSerializer(allow_null=True, help_text="The practice's own plan with the platform.")

    class Meta:
        ref_name = "PaymentSettings"


class ConnectStartSerializer(serializers.Serializer):
    authorize_url = serializers.URLField(help_text="Send the person here; the platform returns them to the callback.")
    expires_in = serializers.IntegerField(help_text="Seconds the attempt stays valid (600).")

    class Meta:
        ref_name = "PaymentConnectStart"


class PaymentSettingsView(BaseApiView):
    scope_area = "settings"
    permission = "settings:read"
    renderer_classes = [CamelCaseJSONRenderer]

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="settings_payments_read",
        responses={200: PaymentSettingsSerializer},
        summary="The practice's payment account connection and its own subscription",
        description="Permission settings:read. Whether a payment account is connected (deposits can be paid), its "
        "charge and payout flags, and the practice's subscription (plan, status) from the billing callback.",
    )
    def get(self, request):
        return Response(PaymentSettingsSerializer(connecting.payment_settings(organization=self.organization)).data)


class ConnectStartView(BaseApiView):
    scope_area = "settings"
    permission = "settings:update"
    renderer_classes = [CamelCaseJSONRenderer]
    error_statuses = ("409",)

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="settings_payments_connect",
        request=None,
        responses={200: ConnectStartSerializer},
        summary="Start connecting the practice's payment account: the platform's OAuth authorize URL",
        description="Permission settings:update. A single-use state (stored hashed, valid 10 minutes, bound to the "
        "practice and the caller) is put in the URL; the platform returns to GET "
        "/webhooks/payments-connect/oauth/callback. 409 PAYMENTS_NOT_CONFIGURED when the service has no platform "
        "client id.",
    )
    def post(self, request):
        url = connecting.connect_start(organization=self.organization, user=request.user)
        expires = int(connecting.STATE_TTL.total_seconds())
        return Response(ConnectStartSerializer({"authorize_url": url, "expires_in": expires}).data)


PUBLIC_SCREEN = MinuteWindowLimit("deposits.connect", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)


class ConnectCallbackView(BaseApiView):
    public = True
    rate_limits = (PUBLIC_SCREEN,)
    renderer_classes = [CamelCaseJSONRenderer]
    content_negotiation_class = FirstRenderer  # a browser (Accept text/html) is redirected, never refused
    error_statuses = ("409",)

    @extend_schema(
        tags=["payments"],
        operation_id="webhooks_payments_connect_oauth_callback",
        summary="The payment platform's OAuth return: exchanges the code, connects the practice's account",
        description="Public; the single-use state is the boundary. Unknown, expired or already used states, a "
        "state started by another person than the signed-in browser's, a refusal (error=access_denied) or an "
        "account connected to another practice answer 400 (CONNECT_STATE_INVALID or ACCOUNT_IN_USE) and change "
        "nothing. The code is exchanged at the platform (POST /oauth/token); a platform outage answers 503 and the "
        "person starts again. A browser is sent to the app's payment settings; an API client gets the settings. "
        "Limit: 300 requests per minute per client address.",
        parameters=[
            OpenApiParameter("code", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter("state", OpenApiTypes.STR, OpenApiParameter.QUERY, required=True),
            OpenApiParameter("error", OpenApiTypes.STR, OpenApiParameter.QUERY),
        ],
        responses={
            200: PaymentSettingsSerializer,
            302: OpenApiResponse(description="A browser: sent to the app's payment settings."),
            503: OpenApiResponse(description="The platform could not be reached; Retry-After."),
        },
        auth=[],
    )
    def get(self, request):
        query = request.query_params
        # The browser's own session (the route takes no credential, so DRF's request.user is anonymous).
        user = get_user(request._request)
        signed_in = user.pk if user.is_authenticated else None
        try:
            claimed = connecting.claim_state(query.get("state", ""), signed_in_user_id=signed_in)
            if query.get("error"):
                raise ConnectStateInvalid("The connection was not authorised at the payment platform.")
            account = connecting.connect_finish(claimed=claimed, code=query.get("code", ""))
        except provider.ProviderRefused as refusal:
            raise ConnectStateInvalid(
                "The payment platform refused the authorization code.", details={"providerCode": refusal.code}
            ) from None
        except DatabaseError:
            logger.exception("payment account connection not stored")
            raise ServiceUnavailable("The connection could not be stored; start again shortly.") from None
        if wants_html(request):
            return HttpResponseRedirect(f"{settings.SVC_APP_URL}/settings/payments?connected=1")
        data = connecting.payment_settings(organization=account.organization_id)
        return Response(PaymentSettingsSerializer(data).data)
