from django.contrib import admin

from apps.core.admin import TenantAdmin, TenantInline
from apps.patients.models import (
    Activity,
    LeadSource,
    Location,
    MarketingConsent,
    Patient,
    PatientTag,
    Practitioner,
    PriceList,
    SavedView,
    Tag,
)


@admin.register(Location, LeadSource, PriceList)
class ReferenceRecordAdmin(TenantAdmin):
    list_display = ("name", "organization", "archived_at", "created_at")
    list_filter = ("archived_at",)
    search_fields = ("name", "organization__name")
    raw_id_fields = ("organization",)


@admin.register(Practitioner)
class PractitionerAdmin(ReferenceRecordAdmin):
    list_display = ("name", "kind", "organization", "archived_at", "created_at")
    list_filter = ("kind", "archived_at")


@admin.register(Tag)
class TagAdmin(TenantAdmin):
    list_display = ("name", "color", "organization", "created_at")
    search_fields = ("name", "organization__name")
    raw_id_fields = ("organization",)


class PatientTagInline(TenantInline):
    model = PatientTag
    extra = 0
    raw_id_fields = ("tag", "organization")


class ActivityInline(TenantInline):
    model = Activity
    extra = 0
    fields = ("kind", "summary", "actor", "created_at")
    readonly_fields = fields
    can_delete = False
    ordering = ("-created_at",)

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Patient)
class PatientAdmin(TenantAdmin):
    """Staff support view. Personal fields are shown because support needs them; every change made here is a
    direct edit (no events), so prefer the API for anything a practice would see in its history."""

    list_display = ("__str__", "status", "organization", "archived_at", "merged_into", "created_at")
    list_filter = ("status",)
    search_fields = ("id", "email", "last_name", "organization__name")
    raw_id_fields = (
        "organization",
        "location",
        "lead_source",
        "referred_by_patient",
        "default_price_list",
        "dentist_practitioner",
        "hygienist_practitioner",
        "merged_into",
    )
    readonly_fields = ("search_document", "created_at", "updated_at", "archived_at", "merged_at")
    inlines = (PatientTagInline, ActivityInline)
    show_full_result_count = False


@admin.register(MarketingConsent)
class MarketingConsentAdmin(TenantAdmin):
    list_display = ("patient", "channel", "status", "source", "recorded_at", "organization")
    list_filter = ("channel", "status")
    raw_id_fields = ("organization", "patient", "recorded_by")

    def has_change_permission(self, request, obj=None):
        return False  # consent evidence is append-only


@admin.register(SavedView)
class SavedViewAdmin(TenantAdmin):
    list_display = ("name", "owner", "shared", "organization", "created_at")
    list_filter = ("shared",)
    raw_id_fields = ("organization", "owner")
