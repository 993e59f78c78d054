"""The back office of native lead ads: connections, submissions, and the intake (parked bodies wait here for an
operator: replay one after its page is connected, or leave it to expire)."""

from django.contrib import admin

from apps.leadads import intake
from apps.leadads.models import (
    DataDeletionRequest,
    LeadAdConnection,
    LeadAdSubmission,
    LeadIntake,
)


@admin.register(LeadAdConnection)
class LeadAdConnectionAdmin(admin.ModelAdmin):
    list_display = ("name", "platform", "external_id", "organization", "health", "created_at")
    list_filter = ("platform", "health")
    search_fields = ("name", "external_id")
    raw_id_fields = ("organization", "lead_source", "default_treatment", "location", "created_by")
    exclude = ("routing_token_digest", "page_token_encrypted", "google_key_digest")


@admin.register(LeadAdSubmission)
class LeadAdSubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "platform", "organization", "status", "reason", "created_at")
    list_filter = ("platform", "status")
    raw_id_fields = ("organization", "connection", "intake", "patient", "resolved_by")
    exclude = ("fields",)


@admin.register(LeadIntake)
class LeadIntakeAdmin(admin.ModelAdmin):
    list_display = ("id", "platform", "status", "deliveries", "attempts", "unrouted_keys", "created_at")
    list_filter = ("platform", "status")
    exclude = ("raw_encrypted",)
    raw_id_fields = ("connection",)
    actions = ["replay"]

    @admin.action(description="Replay the selected parked or failed bodies (three fresh attempts)")
    def replay(self, request, queryset):
        done = sum(intake.replay(intake_id=row.id) for row in queryset)
        self.message_user(request, f"{done} body(ies) queued again.")


@admin.register(DataDeletionRequest)
class DataDeletionRequestAdmin(admin.ModelAdmin):
    list_display = ("confirmation_code", "region", "status", "connections_erased", "submissions_erased", "created_at")
    exclude = ("person_digest",)
