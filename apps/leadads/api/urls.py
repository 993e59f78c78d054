from django.urls import path

from apps.leadads.api import views

urlpatterns = [
    path("lead-ads/connections", views.ConnectionListView.as_view()),
    path("lead-ads/connections/<uuid_param:id>", views.ConnectionItemView.as_view()),
    path("lead-ads/submissions", views.SubmissionListView.as_view()),
    path("lead-ads/submissions/<uuid_param:id>", views.SubmissionItemView.as_view()),
    path("lead-ads/submissions/<uuid_param:id>/resolve", views.SubmissionResolveView.as_view()),
    path("leads", views.LeadPushView.as_view()),
]
