from django.contrib import admin, messages

from apps.core.admin import TenantAdmin
from apps.webhooks import services
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TenantAdmin):
    """Signing secrets are never shown (they are encrypted at rest and were shown once to the practice)."""

    list_display = (
        "name",
        "url",
        "organization",
        "enabled",
        "paused",
        "verified_at",
        "consecutive_failures",
        "archived_at",
    )
    list_filter = ("enabled", "paused", "archived_at")
    search_fields = ("name", "url", "organization__name")
    exclude = ("secret_encrypted", "previous_secret_encrypted")
    readonly_fields = (
        "organization",
        "verified_at",
        "consecutive_failures",
        "previous_secret_expires_at",
        "subscription_key",
        "connection_id",
        "created_by",
        "lease_until",
        "archived_at",
    )


@admin.action(description="Replay the selected deliveries")
def replay(modeladmin, request, queryset):
    for delivery in queryset.select_related("endpoint", "organization"):
        if delivery.endpoint.archived_at is None:
            services.delivery_replay(organization=delivery.organization, delivery=delivery)
    messages.success(request, "Replays queued.")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(TenantAdmin):
    list_display = (
        "event_type",
        "endpoint",
        "status",
        "kind",
        "attempts",
        "response_status",
        "next_attempt_at",
        "created_at",
    )
    list_filter = ("status", "kind", "event_type")
    search_fields = ("id", "logical_id", "endpoint__name", "endpoint__id")
    raw_id_fields = ("organization", "endpoint", "event")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    actions = (replay,)

    def has_add_permission(self, request):
        return False
