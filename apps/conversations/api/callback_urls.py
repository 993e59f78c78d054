"""Provider callbacks, mounted under /webhooks/ first in config/urls.py: every callback resolves after one prefix
test instead of walking the whole API's routes (twice a request: the body cap resolves the route before Django)."""

from django.urls import path

from apps.conversations.api import callbacks, short_video

urlpatterns = [
    path("sms/<str:token>", callbacks.SmsInboundView.as_view(), name="webhooks-sms"),
    path("sms/<str:token>/status", callbacks.SmsStatusView.as_view(), name="webhooks-sms-status"),
    path("messaging-app", callbacks.MessagingAppView.as_view(), name="webhooks-messaging-app"),
    path("email-provider", callbacks.EmailProviderView.as_view(), name="webhooks-email-provider"),
    path(
        "telephony-messaging/<str:token>",
        callbacks.TelephonyMessagingView.as_view(),
        name="webhooks-telephony-messaging",
    ),
    path("short-video", short_video.ShortVideoWebhookView.as_view(), name="webhooks-short-video"),
    path(
        "short-video/oauth/callback",
        short_video.ShortVideoOAuthCallbackView.as_view(),
        name="webhooks-short-video-oauth-callback",
    ),
]
