from django.contrib import admin

from apps.core.admin import TenantAdmin
from apps.tasks.models import Task


@admin.register(Task)
class TaskAdmin(TenantAdmin):
    list_display = ("id", "organization", "status", "priority", "due_at", "created_at")
    list_filter = ("status", "priority")
    raw_id_fields = ("organization", "assignee", "created_by", "patient")
