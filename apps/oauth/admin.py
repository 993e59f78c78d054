"""Back office: connections (tokens never shown) with a disconnect action. DOT's own token, grant and ID-token
pages are removed: they would list token rows; its Application page stays (secrets are hashed there)."""

from django.contrib import admin, messages
from oauth2_provider.models import get_access_token_model, get_grant_model, get_id_token_model, get_refresh_token_model

from apps.core.admin import TenantAdmin
from apps.oauth import connections
from apps.oauth.models import ClientProfile, Connection

for model in (get_access_token_model(), get_refresh_token_model(), get_grant_model(), get_id_token_model()):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(Connection)
class ConnectionAdmin(TenantAdmin):
    list_display = ("application", "user", "organization", "scopes", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__email", "organization__name", "application__name", "application__client_id")
    fields = ("application", "user", "organization", "scopes", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    list_select_related = ("application", "user", "organization")
    actions = ("disconnect",)

    def has_add_permission(self, request):
        return False  # connections are made by a person's consent

    @admin.action(description="Disconnect (revoke every token, archive its webhook endpoints)")
    def disconnect(self, request, queryset):
        count = 0
        for connection in queryset.filter(revoked_at__isnull=True).select_related("organization"):
            connections.disconnect(connection)
            count += 1
        self.message_user(request, f"Disconnected {count} connection(s).", messages.SUCCESS)


@admin.register(ClientProfile)
class ClientProfileAdmin(admin.ModelAdmin):
    list_display = ("application", "approved_at")
    raw_id_fields = ("application",)
