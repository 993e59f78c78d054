from django.urls import path

from apps.patients.api import views

urlpatterns = [
    path("patients", views.PatientListView.as_view()),
    path("patients/export", views.PatientExportView.as_view()),
    path("patients/bulk/tags", views.BulkTagsView.as_view()),
    path("patients/bulk/location", views.BulkLocationView.as_view()),
    path("patients/bulk/archive", views.BulkArchiveView.as_view()),
    path("patients/<uuid_param:id>", views.PatientView.as_view()),
    path("patients/<uuid_param:id>/archive", views.PatientArchiveView.as_view()),
    path("patients/<uuid_param:id>/unarchive", views.PatientUnarchiveView.as_view()),
    path("patients/<uuid_param:id>/merge", views.PatientMergeView.as_view()),
    path("patients/<uuid_param:id>/contact-attempts", views.PatientContactAttemptView.as_view()),
    path("patients/<uuid_param:id>/timeline", views.PatientTimelineView.as_view()),
    path("patients/<uuid_param:id>/marketing-consent", views.MarketingConsentView.as_view()),
    path("tags", views.TagListView.as_view()),
    path("tags/<uuid_param:id>", views.TagView.as_view()),
    path("saved-views", views.SavedViewListView.as_view()),
    path("saved-views/<uuid_param:id>", views.SavedViewView.as_view()),
]
