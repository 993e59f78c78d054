"""Back office for websites and their form discoveries. Site keys are public by design (they sit in the practice's
pages), so they are shown; they are changed through the practice's regenerate-key route, not here."""

from django.contrib import admin

from apps.core.admin import TenantAdmin, TenantInline
from apps.sites.models import FormDiscovery, Website, WebsiteForm


class WebsiteFormInline(TenantInline):
    model = WebsiteForm
    extra = 0
    raw_id_fields = ("form",)
    readonly_fields = ("organization", "form", "created_at")
    fields = ("form", "organization", "created_at")

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Website)
class WebsiteAdmin(TenantAdmin):
    list_display = ("name", "organization", "status", "site_key", "created_at", "archived_at")
    list_filter = ("status",)
    search_fields = ("name", "site_key", "organization__name", "id")
    readonly_fields = ("organization", "site_key", "status", "archived_at", "created_by")
    inlines = (WebsiteFormInline,)


@admin.register(FormDiscovery)
class FormDiscoveryAdmin(TenantAdmin):
    list_display = ("form_key", "page_url", "website", "status", "times_seen", "first_seen_at", "last_seen_at")
    list_filter = ("status",)
    search_fields = ("form_key", "page_url", "website__name", "website__id")
    raw_id_fields = ("organization", "website", "linked_form")
    readonly_fields = ("page_digest", "first_seen_at", "last_seen_at", "times_seen")

    def has_add_permission(self, request):
        return False
