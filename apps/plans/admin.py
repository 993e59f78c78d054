"""The back office's view of treatment plans: read-only. No clinical text anywhere (titles and notes stay encrypted
and are not shown); procedures, fees and templates are practice settings, shown but changed through the API."""

from django.contrib import admin

from apps.plans.models import Fee, PlanItem, Procedure, TreatmentPlan, TreatmentTemplate


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Procedure)
class ProcedureAdmin(ReadOnlyAdmin):
    list_display = ("code", "name", "category", "default_fee", "currency", "organization", "archived_at")
    list_filter = ("category",)
    search_fields = ("code", "name")


@admin.register(Fee)
class FeeAdmin(ReadOnlyAdmin):
    list_display = ("procedure", "price_list", "amount", "currency", "organization", "updated_at")


@admin.register(TreatmentPlan)
class TreatmentPlanAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "patient_id", "status", "currency", "created_at", "status_changed_at")
    list_filter = ("status",)
    exclude = ("content_encrypted",)


@admin.register(PlanItem)
class PlanItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "plan_id", "procedure", "tooth", "status", "fee", "quantity", "phase")
    list_filter = ("status",)


@admin.register(TreatmentTemplate)
class TreatmentTemplateAdmin(ReadOnlyAdmin):
    list_display = ("name", "organization", "created_at")
