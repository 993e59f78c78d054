from django.contrib import admin

from apps.core.admin import TenantAdmin
from apps.events.models import Event


@admin.register(Event)
class EventAdmin(TenantAdmin):
    list_display = ("type", "subject_type", "subject_id", "organization", "actor_type", "created_at")
    list_filter = ("type",)
    search_fields = ("id", "subject_id", "organization__name")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in Event._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # the outbox is append-only
