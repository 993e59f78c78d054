"""Back office for lead capture. Tokens and signing secrets are never shown (encrypted at rest, shown once to the
practice); submissions show their state and field names, not the values a lead typed."""

from django.contrib import admin, messages

from apps.capture import services
from apps.capture.models import AttributionTouch, CaptureForm, CaptureSubmission, IntakeReviewItem
from apps.core.admin import TenantAdmin


@admin.register(CaptureForm)
class CaptureFormAdmin(TenantAdmin):
    list_display = ("name", "organization", "kind", "delivery_mode", "status", "mapping_confirmed_at", "created_at")
    list_filter = ("status", "kind", "delivery_mode")
    search_fields = ("name", "organization__name", "id")
    exclude = ("token_digest", "token_encrypted", "secret_encrypted", "previous_secret_encrypted")
    readonly_fields = (
        "organization",
        "delivery_mode",
        "status",
        "previous_secret_expires_at",
        "mapping_confirmed_at",
        "archived_at",
        "created_by",
    )
    raw_id_fields = ("default_treatment", "lead_source", "location")


@admin.action(description="Process the selected stored submissions now")
def process_now(modeladmin, request, queryset):
    done = 0
    for submission in queryset.filter(status=CaptureSubmission.Status.RECEIVED):
        if services.submission_process(submission_id=submission.id, organization_id=submission.organization_id):
            done += 1
    messages.success(request, f"{done} submission(s) processed.")


@admin.register(CaptureSubmission)
class CaptureSubmissionAdmin(TenantAdmin):
    list_display = ("id", "form", "status", "attempts", "patient_created", "problem", "created_at", "processed_at")
    list_filter = ("status",)
    search_fields = ("id", "delivery_id", "form__name", "form__id")
    exclude = ("fields",)
    readonly_fields = (
        "organization",
        "form",
        "delivery_id",
        "content_digest",
        "status",
        "field_names",
        "patient",
        "journey_id",
        "patient_created",
        "problem",
        "attempts",
        "processed_at",
    )
    actions = [process_now]

    @admin.display(description="Field names")
    def field_names(self, obj) -> str:
        return ", ".join(sorted(obj.fields or {}))


@admin.register(AttributionTouch)
class AttributionTouchAdmin(TenantAdmin):
    list_display = ("patient", "utm_source", "utm_medium", "utm_campaign", "click_id_type", "occurred_at")
    list_filter = ("utm_source", "click_id_type")
    raw_id_fields = ("organization", "patient", "form", "submission")


@admin.register(IntakeReviewItem)
class IntakeReviewItemAdmin(TenantAdmin):
    list_display = ("patient", "reasons", "status", "form", "created_at", "resolved_at")
    list_filter = ("status",)
    raw_id_fields = ("organization", "patient", "form", "submission", "resolved_by")
