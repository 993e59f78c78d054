from django.urls import path

from apps.reputation.api import views

urlpatterns = [
    path("reputation/settings", views.SettingsView.as_view()),
    path("reputation/sources", views.SourceListView.as_view()),
    path("reputation/sources/<uuid_param:id>", views.SourceView.as_view()),
    path("reputation/sources/<uuid_param:id>/sync", views.SourceSyncView.as_view()),
    path("reputation/reviews", views.ReviewListView.as_view()),
    path("reputation/reviews/<uuid_param:id>", views.ReviewView.as_view()),
    path("reputation/reviews/<uuid_param:id>/reply", views.ReviewReplyView.as_view()),
    path("reputation/requests", views.RequestListView.as_view()),
    path("reputation/requests/<uuid_param:id>", views.RequestView.as_view()),
    path("reputation/feedback", views.FeedbackListView.as_view()),
    path("reputation/feedback/<uuid_param:id>", views.FeedbackView.as_view()),
    path("r/<str:token>", views.PublicPageView.as_view()),
    path("r/<str:token>/rating", views.PublicRatingView.as_view()),
    path("r/<str:token>/reviewed", views.PublicReviewedView.as_view()),
    path("r/<str:token>/page/rating", views.PageRatingView.as_view()),
    path("r/<str:token>/page/reviewed", views.PageReviewedView.as_view()),
]
