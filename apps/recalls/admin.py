"""Back office for recalls and the waitlist: read-mostly lists, no notes (waitlist notes are encrypted and stay out)."""

from django.contrib import admin

from apps.recalls.models import Recall, RecallReminder, RecallType, WaitlistEntry, WaitlistOffer


@admin.register(RecallType)
class RecallTypeAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "interval_months", "appointment_type", "archived_at")
    list_filter = ("appointment_type",)


@admin.register(Recall)
class RecallAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "recall_type", "due_date", "status", "next_reminder_at")
    list_filter = ("status",)
    readonly_fields = ("patient", "recall_type", "appointment", "previous", "created_by")


@admin.register(RecallReminder)
class RecallReminderAdmin(admin.ModelAdmin):
    list_display = ("recall", "organization", "due_date", "offset_days", "outcome", "skipped_reason", "created_at")
    list_filter = ("outcome",)
    readonly_fields = ("recall", "message_id")


@admin.register(WaitlistEntry)
class WaitlistEntryAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "appointment_type", "priority", "status", "created_at")
    list_filter = ("status", "appointment_type")
    exclude = ("notes_encrypted",)
    readonly_fields = ("patient", "appointment", "booked_appointment", "created_by")


@admin.register(WaitlistOffer)
class WaitlistOfferAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "starts_at", "expires_at", "status", "closed_reason")
    list_filter = ("status",)
    readonly_fields = ("entry", "patient", "practitioner", "location", "appointment", "decided_by")
