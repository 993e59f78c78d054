from django.contrib import admin

from apps.conversations.models import ChannelConnection
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
