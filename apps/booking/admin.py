from django.contrib import admin

from apps.booking.models import BookingHold, BookingPage
from apps.core.admin import TenantAdmin


@admin.register(BookingPage)
class BookingPageAdmin(TenantAdmin):
    list_display = ("name", "organization", "active", "horizon_days", "slot_minutes", "archived_at")
    list_filter = ("active",)
    raw_id_fields = ("organization",)
    # The token is rotated through the API (the old one must stop working at once); never typed in here.
    readonly_fields = ("token",)
    exclude = ("treatments", "locations", "practitioners")


@admin.register(BookingHold)
class BookingHoldAdmin(TenantAdmin):
    list_display = ("id", "organization", "practitioner", "starts_at", "status", "expires_at")
    list_filter = ("status",)
    raw_id_fields = ("organization", "page", "practitioner", "location", "treatment", "appointment")
    # Holds are written by the public booking routes, which keep the no-overlap rule.
    readonly_fields = ("key", "uid", "status", "starts_at", "ends_at", "expires_at", "completed_at")
