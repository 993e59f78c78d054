from django.contrib import admin

from apps.journeys.models import Journey, Pipeline, Stage, Treatment


@admin.register(Treatment)
class TreatmentAdmin(admin.ModelAdmin):
    list_display = ("name", "category", "default_value", "currency", "active", "is_builtin", "organization")
    list_filter = ("active", "is_builtin")
    search_fields = ("name", "category")
    raw_id_fields = ("organization",)


class StageInline(admin.TabularInline):
    model = Stage
    fields = ("name", "kind", "position", "archived_at")
    readonly_fields = ("kind",)
    extra = 0
    ordering = ("position",)

    def has_add_permission(self, request, obj=None):
        return False  # stages are added through the API, which keeps the pipeline's rules

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Pipeline)
class PipelineAdmin(admin.ModelAdmin):
    list_display = ("name", "is_default", "organization", "created_at")
    list_filter = ("is_default",)
    search_fields = ("name",)
    raw_id_fields = ("organization",)
    inlines = [StageInline]


@admin.register(Journey)
class JourneyAdmin(admin.ModelAdmin):
    list_display = ("id", "patient", "treatment", "stage", "status", "estimated_value", "organization", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("organization", "patient", "treatment", "pipeline", "stage", "assignee", "last_open_stage")
    readonly_fields = ("status", "stage", "pipeline", "stage_entered_at", "won_at", "lost_at", "reopened_at")
