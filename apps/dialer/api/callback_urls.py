"""The telephony provider's callbacks, mounted under /webhooks/ near the top of config/urls.py (hot public routes
resolve after one prefix test)."""

from django.urls import path

from apps.dialer.api import callbacks

urlpatterns = [
    path("telephony/<str:token>", callbacks.TelephonyCallbackView.as_view(), name="webhooks-telephony"),
    path(
        "telephony/<str:token>/failover-probe",
        callbacks.FailoverProbeView.as_view(),
        name="webhooks-telephony-failover-probe",
    ),
]
