from django.contrib import admin

from apps.widget.models import Visitor, WidgetConnection


@admin.register(WidgetConnection)
class WidgetConnectionAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "active", "created_at")
    list_filter = ("active",)
    search_fields = ("name",)
    raw_id_fields = ("organization", "channel")
    readonly_fields = ("embed_key",)


@admin.register(Visitor)
class VisitorAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "widget", "created_at", "last_seen_at")
    raw_id_fields = ("organization", "widget", "patient")
    exclude = ("token_hash",)
