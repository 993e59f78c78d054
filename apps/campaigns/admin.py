from django.contrib import admin

from apps.campaigns.models import Campaign, MessageTemplate
from apps.core.admin import TenantAdmin


@admin.register(MessageTemplate)
class MessageTemplateAdmin(TenantAdmin):
    list_display = ("name", "channel", "category", "approval_status", "organization", "updated_at")
    list_filter = ("channel", "category", "approval_status")
    search_fields = ("name", "provider_template_name", "organization__name")
    raw_id_fields = ("organization", "created_by", "approval_changed_by")
    readonly_fields = ("variables",)


@admin.register(Campaign)
class CampaignAdmin(TenantAdmin):
    """Read in the back office; a campaign is moved through its routes (launch, pause, resume, cancel)."""

    list_display = ("name", "status", "organization", "launched_at", "completed_at", "created_at")
    list_filter = ("status",)
    search_fields = ("name", "organization__name")
    raw_id_fields = ("organization", "connection", "template", "saved_view", "launched_by", "created_by")
    readonly_fields = [field.name for field in Campaign._meta.fields]
