"""Back office for agreements: platform staff write new versions as drafts and publish them (the "Publish now"
action, or a publication time set on the draft). Publishing makes the version current for its kind, so it is pending
again for every practice until an owner accepts it. A published version's text is frozen (read-only here, never
deleted); acceptances are read-only records."""

from django.contrib import admin, messages

from apps.agreements import services
from apps.agreements.errors import AgreementAlreadyPublished
from apps.agreements.models import Agreement, AgreementAcceptance

AGREEMENT_FIELDS = ("kind", "version", "title", "body", "published_at", "effective_at", "requires_acceptance")


@admin.register(Agreement)
class AgreementAdmin(admin.ModelAdmin):
    list_display = ("kind", "version", "title", "published_at", "effective_at", "requires_acceptance")
    list_filter = ("kind", "requires_acceptance")
    ordering = ("kind", "-published_at", "-created_at")
    fields = AGREEMENT_FIELDS
    actions = ("publish_now",)

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.published_at is not None:
            return AGREEMENT_FIELDS
        return ()

    def has_delete_permission(self, request, obj=None):
        return obj is None or obj.published_at is None

    @admin.action(description="Publish now (pending again for every practice)")
    def publish_now(self, request, queryset):
        published = 0
        for agreement in queryset:
            try:
                services.agreement_publish(agreement=agreement)
                published += 1
            except AgreementAlreadyPublished:
                self.message_user(request, f"{agreement} was already published.", level=messages.WARNING)
        if published:
            self.message_user(request, f"Published {published} version(s).", level=messages.SUCCESS)


@admin.register(AgreementAcceptance)
class AgreementAcceptanceAdmin(admin.ModelAdmin):
    list_display = ("agreement", "organization", "accepted_by_name", "accepted_at", "address_block")
    list_filter = ("agreement__kind",)
    readonly_fields = ("organization", "agreement", "accepted_by", "accepted_by_name", "accepted_at", "address_block")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
