"""Back office for data transfer: read-mostly lists (counts and statuses; no file contents, no values)."""

from django.contrib import admin

from apps.transfer.models import DataExport, PatientImport, PracticeArchive


@admin.register(PatientImport)
class PatientImportAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "format", "status", "rows_total", "rows_done", "created", "updated")
    list_filter = ("status", "format")
    readonly_fields = ("created_by", "storage_name", "columns", "mapping")


@admin.register(DataExport)
class DataExportAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "purpose", "status", "rows_total", "rows_done", "ready_at")
    list_filter = ("status", "purpose")
    readonly_fields = ("requested_by", "storage_name")


@admin.register(PracticeArchive)
class PracticeArchiveAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "status", "closes_at", "closed_at")
    list_filter = ("status",)
    readonly_fields = ("requested_by", "cancelled_by", "export", "closing_report")
