from rest_framework import serializers

from apps.core.serializers import StrictSerializer
from apps.events.catalogue import EVENT_TYPES
from apps.webhooks.models import MAX_ENDPOINTS, WebhookDelivery
from apps.webhooks.sender import MAX_URL_BYTES


def _url_bytes(value: str) -> str:
    if len(value.encode("utf-8")) > MAX_URL_BYTES:
        raise serializers.ValidationError(f"must be at most {MAX_URL_BYTES} UTF-8 bytes")
    return value


class EndpointSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_TYPES))
    status = serializers.ChoiceField(choices=["enabled", "disabled", "paused", "archived"])
    enabled = serializers.BooleanField()
    paused = serializers.BooleanField()
    paused_reason = serializers.CharField(help_text="manual, or consecutive_failures after 20 in a row; blank.")
    verified_at = serializers.DateTimeField(allow_null=True)
    consecutive_failures = serializers.IntegerField(min_value=0)
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Until then deliveries carry a second v1= signature with the previous secret."
    )
    subscription_key = serializers.CharField(allow_null=True)
    archived_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WebhookEndpoint"


class EndpointCreatedSerializer(EndpointSerializer):
    signing_secret = serializers.CharField(help_text="Shown once: store it now to verify signatures.")

    class Meta:
        ref_name = "WebhookEndpointCreated"


class EndpointListSerializer(serializers.Serializer):
    items = EndpointSerializer(many=True)
    limit = serializers.IntegerField(help_text=f"At most {MAX_ENDPOINTS} non-archived endpoints per practice.")

    class Meta:
        ref_name = "WebhookEndpointList"


class EndpointWriteSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=200)
    url = serializers.CharField(
        min_length=1,
        max_length=MAX_URL_BYTES,
        validators=[_url_bytes],
        help_text="https on port 443, a public DNS name; at most 2048 UTF-8 bytes.",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES), min_length=1, max_length=len(EVENT_TYPES)
    )

    class Meta:
        ref_name = "WebhookEndpointWrite"


class EndpointListQuerySerializer(StrictSerializer):
    include_archived = serializers.ChoiceField(choices=["true", "false"], required=False)


class SecretRotatedSerializer(serializers.Serializer):
    signing_secret = serializers.CharField(help_text="Shown once.")
    previous_secret_expires_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WebhookSecretRotated"


class DeliverySerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The physical delivery id (X-Service-Delivery-Id).")
    endpoint_id = serializers.UUIDField()
    logical_id = serializers.UUIDField(help_text="The envelope id, the same across retries and replays.")
    event_type = serializers.CharField()
    kind = serializers.ChoiceField(choices=WebhookDelivery.Kind.choices)
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices)
    attempts = serializers.IntegerField()
    publications = serializers.IntegerField()
    response_status = serializers.IntegerField(allow_null=True)
    response_snippet = serializers.CharField(help_text="The start of the receiver's answer (bounded).")
    last_error = serializers.CharField()
    next_attempt_at = serializers.DateTimeField()
    last_published_at = serializers.DateTimeField(allow_null=True)
    deadline_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WebhookDelivery"


class DeliveryListQuerySerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices, required=False)
    event_type = serializers.CharField(max_length=64, required=False)
    kind = serializers.ChoiceField(choices=WebhookDelivery.Kind.choices, required=False)
    limit = serializers.IntegerField(min_value=1, max_value=100, required=False)
    cursor = serializers.CharField(max_length=500, required=False)


class SubscriptionWriteSerializer(EndpointWriteSerializer):
    subscription_key = serializers.CharField(
        min_length=1, max_length=200, help_text="The caller's idempotency key for this subscription."
    )

    class Meta:
        ref_name = "WebhookSubscriptionWrite"
