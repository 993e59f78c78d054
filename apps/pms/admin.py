"""Back office for the connected PMS: read-mostly lists (no credentials, no patient content)."""

from django.contrib import admin

from apps.pms.models import PmsConnection, PmsImport, PmsPatientLink, PmsReceipt, PmsSyncReview


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PmsConnection)
class PmsConnectionAdmin(ReadOnly):
    list_display = ("name", "organization", "provider", "status", "health", "health_reason", "created_at")
    list_filter = ("status", "health", "provider")
    search_fields = ("name",)
    exclude = ("api_key_encrypted", "signing_secret_encrypted", "previous_secret_encrypted", "routing_token")


@admin.register(PmsImport)
class PmsImportAdmin(ReadOnly):
    list_display = ("id", "organization", "connection", "state", "phase", "pages", "patients_created", "created_at")
    list_filter = ("state", "phase")


@admin.register(PmsPatientLink)
class PmsPatientLinkAdmin(ReadOnly):
    list_display = ("provider_patient_id", "organization", "patient_id", "revision", "sync_state", "last_synced_at")
    list_filter = ("sync_state",)
    search_fields = ("provider_patient_id",)


@admin.register(PmsReceipt)
class PmsReceiptAdmin(ReadOnly):
    list_display = ("delivery_id", "organization", "connection", "state", "reason", "events", "created_at")
    list_filter = ("state", "reason")
    exclude = ("payload",)


@admin.register(PmsSyncReview)
class PmsSyncReviewAdmin(ReadOnly):
    list_display = ("kind", "provider_item_id", "revision", "organization", "status", "created_at")
    list_filter = ("status", "kind")
    exclude = ("incoming_encrypted",)
