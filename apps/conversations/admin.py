from django.contrib import admin
from django.utils import timezone

from apps.conversations.models import ChannelConnection, ParkedCallback, SandboxDelivery
from apps.core.admin import TenantAdmin


@admin.register(ChannelConnection)
class ChannelConnectionAdmin(TenantAdmin):
    """Credentials are never shown: they are encrypted at rest and only the callback verifiers read them."""

    list_display = ("name", "kind", "address", "organization", "status", "health", "health_changed_at")
    list_filter = ("kind", "status", "health")
    search_fields = ("name", "address", "organization__name")
    exclude = ("credentials_encrypted",)
    readonly_fields = (
        "organization",
        "kind",
        "address",
        "routing_token",
        "credential_keys",
        "health",
        "health_reason",
        "health_changed_at",
        "disconnected_at",
    )


@admin.register(ParkedCallback)
class ParkedCallbackAdmin(admin.ModelAdmin):
    """Operators' side of the ingest-review queue: callbacks no route could attribute (organization empty) are
    given to a practice here (set the organization; the practice then replays it into a connection) or dismissed."""

    list_display = ("created_at", "kind", "receiving_address", "organization", "reason", "state")
    list_filter = ("kind", "state", ("organization", admin.EmptyFieldListFilter))
    search_fields = ("receiving_address", "organization__name")
    readonly_fields = (
        "kind",
        "receiving_address",
        "reason",
        "items",
        "state",
        "decided_by",
        "decided_at",
        "replayed_into",
        "created_at",
    )
    actions = ["dismiss"]

    @admin.action(description="Dismiss the selected parked callbacks")
    def dismiss(self, request, queryset):
        count = queryset.filter(state=ParkedCallback.State.PARKED).update(
            state=ParkedCallback.State.DISMISSED, decided_by=request.user, decided_at=timezone.now()
        )
        self.message_user(request, f"{count} dismissed.")


@admin.register(SandboxDelivery)
class SandboxDeliveryAdmin(TenantAdmin):
    """What the sandbox transport would have sent to a provider (make run): read only."""

    list_display = ("created_at", "provider", "organization", "url")
    list_filter = ("provider",)
    readonly_fields = ("organization", "message", "provider", "method", "url", "request", "created_at")
