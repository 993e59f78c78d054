"""Back office for automations: rules and their runs (read-mostly)."""

from django.contrib import admin

from apps.automations.models import AutomationRule, AutomationRun


@admin.register(AutomationRule)
class AutomationRuleAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "enabled", "trigger_type", "event_type", "next_run_at", "created_at")
    list_filter = ("enabled", "trigger_type")
    readonly_fields = ("created_by",)


@admin.register(AutomationRun)
class AutomationRunAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "rule", "status", "event_type", "tick_at", "depth", "created_at")
    list_filter = ("status", "trigger_type")
    readonly_fields = ("rule",)
