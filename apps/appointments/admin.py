from django.contrib import admin

from apps.appointments.models import Appointment, WorkingHours
from apps.core.admin import TenantAdmin


@admin.register(Appointment)
class AppointmentAdmin(TenantAdmin):
    list_display = ("id", "organization", "starts_at", "ends_at", "status", "appointment_type", "practitioner")
    list_filter = ("status", "appointment_type")
    date_hierarchy = "starts_at"
    raw_id_fields = ("organization", "patient", "practitioner", "location", "treatment", "journey", "created_by")
    # Status moves through the API, which keeps the no-double-booking rule and records events.
    readonly_fields = ("status", "status_changed_at")


@admin.register(WorkingHours)
class WorkingHoursAdmin(TenantAdmin):
    list_display = ("practitioner", "weekday", "start_time", "end_time", "location", "organization")
    list_filter = ("weekday",)
    raw_id_fields = ("organization", "practitioner", "location")
