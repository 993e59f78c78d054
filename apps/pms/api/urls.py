from django.urls import path

from apps.pms.api import views

urlpatterns = [
    path("settings/pms/connections", views.ConnectionListView.as_view()),
    path("settings/pms/connections/<uuid_param:id>", views.ConnectionItemView.as_view()),
    path("settings/pms/connections/<uuid_param:id>/rotate", views.ConnectionRotateView.as_view()),
    path("settings/pms/connections/<uuid_param:id>/imports", views.ConnectionImportView.as_view()),
    path("settings/pms/imports", views.ImportListView.as_view()),
    path("settings/pms/imports/<uuid_param:id>", views.ImportItemView.as_view()),
    path("settings/pms/imports/<uuid_param:id>/resume", views.ImportResumeView.as_view()),
    path("settings/pms/reviews", views.ReviewListView.as_view()),
    path("settings/pms/reviews/<uuid_param:id>/resolve", views.ReviewResolveView.as_view()),
]
