"""The ad platforms' callbacks, mounted under /webhooks/lead-ads/ in config/urls.py."""

from django.urls import path

from apps.leadads.api import callbacks

urlpatterns = [
    path("meta-platform", callbacks.MetaPlatformView.as_view(), name="webhooks-lead-ads-meta-platform"),
    path("meta-platform/deauthorize", callbacks.DeauthorizeView.as_view()),
    path("meta-platform/data-deletion", callbacks.DataDeletionView.as_view()),
    path("meta-platform/data-deletion/<str:code>", callbacks.DataDeletionTrackerView.as_view()),
    path("search-ads/<str:routing_token>", callbacks.SearchAdsView.as_view()),
    path("short-video", callbacks.ShortVideoView.as_view()),
]
