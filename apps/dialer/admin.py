from django.contrib import admin

from apps.dialer.models import (
    Call,
    DialerConnection,
    PhoneNumber,
    PortingOrder,
    TelephonyEvent,
)


@admin.register(DialerConnection)
class DialerConnectionAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "status", "created_at")
    list_filter = ("status",)
    exclude = ("api_key_encrypted", "routing_token")


@admin.register(PhoneNumber)
class PhoneNumberAdmin(admin.ModelAdmin):
    list_display = ("phone_number", "organization", "status", "source", "created_at")
    list_filter = ("status", "source")


@admin.register(PortingOrder)
class PortingOrderAdmin(admin.ModelAdmin):
    list_display = ("provider_order_id", "organization", "status", "updated_at")


@admin.register(Call)
class CallAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "direction", "status", "started_at")
    list_filter = ("direction", "status")
    exclude = ("from_number", "to_number")


@admin.register(TelephonyEvent)
class TelephonyEventAdmin(admin.ModelAdmin):
    list_display = ("event_type", "organization", "state", "attempts", "created_at")
    list_filter = ("state",)
    exclude = ("payload",)
