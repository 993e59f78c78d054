from django.urls import path

from apps.patients.api import views
from apps.patients.api.reference import LEAD_SOURCES, LOCATIONS, PRACTITIONERS, PRICE_LISTS

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
    path("patients/<uuid_param:id>/notes", views.PatientNoteView.as_view()),
    path("patients/<uuid_param:id>/marketing-consent", views.MarketingConsentView.as_view()),
    path("tags", views.TagListView.as_view()),
    path("tags/<uuid_param:id>", views.TagView.as_view()),
    path("saved-views", views.SavedViewListView.as_view()),
    path("saved-views/<uuid_param:id>", views.SavedViewView.as_view()),
    *[
        route
        for prefix, (collection, item) in (
            ("settings/locations", LOCATIONS),
            ("settings/lead-sources", LEAD_SOURCES),
            ("settings/price-lists", PRICE_LISTS),
            ("settings/practitioners", PRACTITIONERS),
        )
        for route in (path(prefix, collection.as_view()), path(f"{prefix}/<uuid_param:id>", item.as_view()))
    ],
]
