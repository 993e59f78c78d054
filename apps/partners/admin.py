from django.contrib import admin

from apps.core.admin import TenantAdmin
from apps.partners.models import PracticeLink


@admin.register(PracticeLink)
class PracticeLinkAdmin(TenantAdmin):
    """Which agency created which practice. Unlinking (unlinked_at) ends the agency's reach into the practice."""

    list_display = ("practice", "organization", "owner_email", "created_at", "unlinked_at")
    list_filter = ("unlinked_at",)
    search_fields = ("practice__name", "organization__name", "owner_email")
    raw_id_fields = ("organization", "practice", "created_by")
    readonly_fields = ("owner_email", "requested_name", "requested_country", "created_at", "updated_at")
    list_select_related = ("organization", "practice")
