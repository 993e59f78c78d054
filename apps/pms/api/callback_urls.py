"""The connected PMS's callbacks, mounted under /webhooks/pms/ near the top of config/urls.py."""

from django.urls import path

from apps.pms.api import callbacks

urlpatterns = [
    path("<str:provider>/<str:token>", callbacks.PmsCallbackView.as_view(), name="webhooks-pms"),
]
