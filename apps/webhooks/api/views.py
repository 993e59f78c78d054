"""Webhook endpoint management (settings) and delivery inspection and replay."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.core.credentials import OAUTH
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.views import BaseApiView
from apps.webhooks import selectors, services
from apps.webhooks.api import serializers as s
from apps.webhooks.errors import OAuthConnectionRequired
from apps.webhooks.models import MAX_ENDPOINTS, WebhookDelivery, WebhookEndpoint

TAGS = ["outbound-webhooks"]


class QueuedSerializer(serializers.Serializer):
    delivery_id = serializers.UUIDField()
    status = serializers.CharField()

    class Meta:
        ref_name = "WebhookDeliveryQueued"


class WebhookView(BaseApiView):
    scope_area = "webhooks"
    error_statuses = ("409",)

    def endpoint(self, id, *, include_archived: bool = True) -> WebhookEndpoint:
        queryset = selectors.endpoints_of(organization=self.organization, include_archived=include_archived)
        return self.get_tenant_object(WebhookEndpoint, id, queryset=queryset)

    def delivery(self, id, delivery_id) -> WebhookDelivery:
        queryset = selectors.deliveries_of(organization=self.organization, endpoint=self.endpoint(id))
        return self.get_tenant_object(WebhookDelivery, delivery_id, queryset=queryset.select_related("endpoint"))


def _queued(delivery: WebhookDelivery) -> Response:
    return Response({"delivery_id": delivery.id, "status": delivery.status}, status=202)


class EndpointListView(WebhookView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="webhook_endpoints_list",
        parameters=[s.EndpointListQuerySerializer],
        responses={200: s.EndpointListSerializer},
        summary="The practice's webhook endpoints",
        description="Permission settings:read. Every non-archived endpoint (at most 20 per practice) with its "
        "status, events and verification.",
    )
    def get(self, request):
        query = self.parse_query(s.EndpointListQuerySerializer).validated_data
        endpoints = selectors.endpoints_of(
            organization=self.organization, include_archived=query.get("include_archived") == "true"
        )
        return Response({"items": s.EndpointSerializer(endpoints, many=True).data, "limit": MAX_ENDPOINTS})

    @extend_schema(
        tags=TAGS,
        request=s.EndpointWriteSerializer,
        responses={201: s.EndpointCreatedSerializer},
        summary="Add an endpoint (starts disabled and unverified; the signing secret is shown once)",
        description="Permission settings:update. An https URL on port 443 with a DNS name whose every address is "
        "globally routable (no IP literals, no userinfo), a name and the event types. The endpoint starts disabled "
        "and unverified: a successful test delivery verifies it, then enable it. signingSecret (whsec_…) is in this "
        "response alone. At most 20 non-archived endpoints per practice.",
    )
    def post(self, request):
        data = self.parse_body(s.EndpointWriteSerializer).validated_data
        created = services.endpoint_create(organization=self.organization, user=request.user, **data)
        body = s.EndpointSerializer(created.endpoint).data | {"signing_secret": created.signing_secret}
        return Response(body, status=201)


class EndpointView(WebhookView):
    permission = {"GET": "settings:read", "PATCH": "settings:update", "DELETE": "settings:update"}

    @extend_schema(
        tags=TAGS,
        responses={200: s.EndpointSerializer},
        summary="Read an endpoint",
        description="Permission settings:read. One endpoint; the signing secret is never shown again.",
    )
    def get(self, request, id):
        return Response(s.EndpointSerializer(self.endpoint(id)).data)

    @extend_schema(
        tags=TAGS,
        request=s.EndpointWriteSerializer(partial=True),
        responses={200: s.EndpointSerializer},
        summary="Change name, url or events (a new url disables the endpoint until a test succeeds again)",
        description="Permission settings:update. Changes name, url or events. A new url disables the endpoint and "
        "clears its verification until a test delivery succeeds again.",
    )
    def patch(self, request, id):
        endpoint = self.endpoint(id)
        data = self.parse_body(s.EndpointWriteSerializer, partial=True).validated_data
        endpoint = services.endpoint_update(organization=self.organization, endpoint=endpoint, data=data)
        return Response(s.EndpointSerializer(endpoint).data)

    @extend_schema(
        tags=TAGS,
        responses={200: s.EndpointSerializer},
        summary="Delete (archive) an endpoint; frees one of the 20 slots; queued deliveries fail",
        description="Permission settings:update. The endpoint is archived (frees one of the 20 slots) and its queued "
        "deliveries fail.",
    )
    def delete(self, request, id):
        endpoint = services.endpoint_archive(organization=self.organization, endpoint=self.endpoint(id))
        return Response(s.EndpointSerializer(endpoint).data)


class EndpointActionView(WebhookView):
    permission = "settings:update"
    action = ""

    def post(self, request, id):
        endpoint = self.endpoint(id, include_archived=False)
        act = getattr(services, f"endpoint_{self.action}")
        return Response(s.EndpointSerializer(act(organization=self.organization, endpoint=endpoint)).data)


class EnableView(EndpointActionView):
    action = "enable"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.EndpointSerializer},
        summary="Enable a verified endpoint (also resumes a paused one)",
        description="Permission settings:update. Only a verified endpoint (a test delivery succeeded) can be "
        "enabled; a paused endpoint resumes.",
    )
    def post(self, request, id):
        return super().post(request, id)


class PauseView(EndpointActionView):
    action = "pause"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.EndpointSerializer},
        summary="Pause an endpoint: real events stop being sent until it is enabled again",
        description="Permission settings:update. Real events stop being sent until the endpoint is enabled again; "
        "test deliveries still work.",
    )
    def post(self, request, id):
        return super().post(request, id)


class TestView(WebhookView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={202: QueuedSerializer},
        summary="Queue a test delivery now (works while disabled or paused; success verifies the endpoint)",
        description="Permission settings:update. Queues a test delivery ahead of ordinary ones, also while the "
        "endpoint is disabled or paused; a 2xx answer sets verifiedAt.",
    )
    def post(self, request, id):
        delivery = services.endpoint_test(
            organization=self.organization, endpoint=self.endpoint(id, include_archived=False)
        )
        return _queued(delivery)


class RotateSecretView(WebhookView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.SecretRotatedSerializer},
        summary="Rotate the signing secret (new one shown once; the previous stays valid 24 hours)",
        description="Permission settings:update. The new secret is in this response alone; for 24 hours both secrets "
        "sign (X-Service-Signature carries two comma-separated v1= values).",
    )
    def post(self, request, id):
        endpoint, secret = services.secret_rotate(
            organization=self.organization, endpoint=self.endpoint(id, include_archived=False)
        )
        return Response({"signing_secret": secret, "previous_secret_expires_at": endpoint.previous_secret_expires_at})


class RevokePreviousSecretView(WebhookView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.EndpointSerializer},
        summary="End the rotation overlap now: only the current secret signs",
        description="Permission settings:update. Ends the 24-hour rotation overlap at once: signatures carry one "
        "value again.",
    )
    def post(self, request, id):
        endpoint = services.secret_revoke_previous(
            organization=self.organization, endpoint=self.endpoint(id, include_archived=False)
        )
        return Response(s.EndpointSerializer(endpoint).data)


class DeliveryPagination(NewestFirstCursorPagination):
    pass


class DeliveryListView(WebhookView):
    permission = "settings:read"
    pagination_class = DeliveryPagination

    @extend_schema(
        tags=TAGS,
        parameters=[s.DeliveryListQuerySerializer],
        responses={200: s.DeliverySerializer(many=True)},
        summary="An endpoint's deliveries, newest first (kept 30 days after they finish)",
        description="Permission settings:read. Delivery records newest first, {items, nextCursor} paging until null; "
        "filters status, eventType, kind. Finished records are kept 30 days.",
    )
    def get(self, request, id):
        endpoint = self.endpoint(id)
        query = self.parse_query(s.DeliveryListQuerySerializer).validated_data
        deliveries = selectors.deliveries_of(organization=self.organization, endpoint=endpoint, filters=query)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(deliveries, request, view=self)
        return Response(paginator.get_paginated_response_data(s.DeliverySerializer(page, many=True).data))


class DeliveryView(WebhookView):
    permission = "settings:read"

    @extend_schema(
        tags=TAGS,
        responses={200: s.DeliverySerializer},
        summary="Read one delivery",
        description="Permission settings:read. One delivery: its logical (envelope) id, kind, status, attempts, the "
        "receiver's status and the start of its answer, the next attempt and the deadline.",
    )
    def get(self, request, id, delivery_id):
        return Response(s.DeliverySerializer(self.delivery(id, delivery_id)).data)


class ReplayView(WebhookView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={202: QueuedSerializer},
        summary="Replay a delivery: a new physical delivery with the same logical id and payload",
        description="Permission settings:update. Queues a new physical delivery (new X-Service-Delivery-Id) with the "
        "same logical event id and payload; receivers dedupe on the envelope id.",
    )
    def post(self, request, id, delivery_id):
        replay = services.delivery_replay(organization=self.organization, delivery=self.delivery(id, delivery_id))
        return _queued(replay)


class SubscriptionView(WebhookView):
    """Managed subscriptions for integrations connected through OAuth."""

    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        request=s.SubscriptionWriteSerializer,
        responses={201: s.EndpointCreatedSerializer, 200: s.EndpointCreatedSerializer},
        summary="Subscribe idempotently (OAuth connections only); verified by an X-Hook-Secret probe",
        description="A probe POST carries X-Hook-Secret; the endpoint is enabled only when the receiver answers 2xx "
        "echoing it (else 409 WEBHOOK_VERIFICATION_FAILED and the endpoint is archived). Repeating with the same "
        "subscriptionKey returns the same endpoint and signingSecret with 200, even at the 20-endpoint cap; name and "
        "events changes apply; a different url, or a key of another connection, is 409 WEBHOOK_SUBSCRIPTION_CONFLICT; "
        "a paused endpoint stays paused (409 WEBHOOK_ENDPOINT_PAUSED). API keys and sessions get 403 "
        "OAUTH_CONNECTION_REQUIRED.",
    )
    def post(self, request):
        if request.auth.kind != OAUTH or request.auth.connection_id is None:
            raise OAuthConnectionRequired()
        data = self.parse_body(s.SubscriptionWriteSerializer).validated_data
        result = services.subscription_upsert(
            organization=self.organization, user=request.user, credential=request.auth, **data
        )
        if result.failure is not None:
            raise result.failure
        body = s.EndpointSerializer(result.endpoint).data | {"signing_secret": result.signing_secret}
        return Response(body, status=201 if result.created else 200)
