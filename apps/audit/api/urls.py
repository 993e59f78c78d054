from django.urls import path

from apps.audit.api import views

urlpatterns = [
    path("audit-log", views.AuditLogView.as_view()),
    path("audit-log/export", views.AuditExportView.as_view()),
    path("audit-log/<uuid_param:id>", views.AuditEntryView.as_view()),
    path("compliance/retention", views.RetentionView.as_view()),
]
