from django.contrib import admin

from apps.reports.models import ReportSubscription


@admin.register(ReportSubscription)
class ReportSubscriptionAdmin(admin.ModelAdmin):
    list_display = ("report_key", "frequency", "organization", "user", "enabled", "next_due_at", "last_sent_at")
    list_filter = ("frequency", "enabled")
    raw_id_fields = ("organization", "user")
    readonly_fields = ("last_sent_at", "last_period_end", "created_at", "updated_at")
