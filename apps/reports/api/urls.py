from django.urls import path

from apps.reports.api import views

urlpatterns = [
    path("reports", views.ReportCatalogueView.as_view()),
    path("reports/<str:key>", views.ReportView.as_view()),
    path("reports/<str:key>/export", views.ReportExportView.as_view()),
    path("report-subscriptions", views.SubscriptionListView.as_view()),
    path("report-subscriptions/<uuid_param:id>", views.SubscriptionDetailView.as_view()),
]
