"""Back office for the audit log: read-only. No add, change or delete permission for anyone (superusers included):
entries are append-only, and the database refuses UPDATE and DELETE anyway (migration 0001)."""

from django.contrib import admin

from apps.audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "source", "action", "subject_type", "subject_id", "route", "status_code")
    list_filter = ("source", "credential_kind", "method", "action")
    search_fields = ("=organization_id", "=user_id", "=subject_id", "route")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    show_full_result_count = False  # no COUNT(*) over the whole log on every page

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in AuditEntry._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
