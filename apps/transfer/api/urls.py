from django.urls import path

from apps.transfer.api import views

urlpatterns = [
    path("transfer/core-imports", views.ImportListView.as_view()),
    path("transfer/core-imports/<uuid_param:id>", views.ImportDetailView.as_view()),
    path("transfer/core-imports/<uuid_param:id>/problems", views.ImportProblemsView.as_view()),
    path("transfer/core-imports/<uuid_param:id>/problems/csv", views.ImportProblemsCsvView.as_view()),
    path("transfer/core-imports/<uuid_param:id>/dry-run", views.ImportDryRunView.as_view()),
    path("transfer/core-imports/<uuid_param:id>/start", views.ImportStartView.as_view()),
    path("transfer/core-imports/<uuid_param:id>/resume", views.ImportResumeView.as_view()),
    path("transfer/core-exports", views.ExportListView.as_view()),
    path("transfer/core-exports/<uuid_param:id>", views.ExportDetailView.as_view()),
    path("transfer/core-exports/<uuid_param:id>/download", views.ExportDownloadView.as_view()),
    path("practice-archive", views.PracticeArchiveView.as_view()),
    path("practice-archive/cancel", views.PracticeArchiveCancelView.as_view()),
]
