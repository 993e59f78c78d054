"""Read-mostly admin pages of the clinical hub: ids, states and times only, never clinical content (a document's
display name stays encrypted and out of the pages; its file is served only through the access-checked route)."""

from django.contrib import admin

from apps.clinical.models import AppointmentVisit, Chair, ClinicalDocument, PractitionerLink


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PractitionerLink)
class PractitionerLinkAdmin(ReadOnlyAdmin):
    list_display = ("practitioner", "user", "organization", "created_at")
    raw_id_fields = ("practitioner", "user")


@admin.register(Chair)
class ChairAdmin(admin.ModelAdmin):
    list_display = ("name", "location", "organization", "active", "position")
    list_filter = ("active",)
    raw_id_fields = ("location",)


@admin.register(AppointmentVisit)
class AppointmentVisitAdmin(ReadOnlyAdmin):
    list_display = ("appointment_id", "chair", "organization", "arrived_at", "seated_at", "completed_at")
    list_filter = ("chair__active",)
    raw_id_fields = ("appointment", "chair")


@admin.register(ClinicalDocument)
class ClinicalDocumentAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "category", "content_type", "size", "created_at")
    list_filter = ("category", "content_type")
    exclude = ("name_encrypted", "storage_name", "sha256")
    raw_id_fields = ("patient", "uploaded_by")
