from django.contrib import admin
from django.urls import include, path

from apps.core.health import ReadinessView, RuntimeHealthView
from apps.core.openapi import OpenApiSchemaView, SwaggerUiView

urlpatterns = [
    path("webhooks/", include("apps.conversations.api.callback_urls")),  # first: the hottest public routes
    path("webhooks/", include("apps.dialer.api.callback_urls")),  # /webhooks/telephony/{token}[/failover-probe]
    path("webhooks/lead-ads/", include("apps.leadads.api.callback_urls")),
    path("webhooks/pms/", include("apps.pms.api.callback_urls")),  # /webhooks/pms/{provider}/{token}
    path("health/runtime", RuntimeHealthView.as_view()),
    path("health", ReadinessView.as_view()),
    path("openapi.json", OpenApiSchemaView.as_view(), name="openapi"),
    path("docs", SwaggerUiView.as_view(url_name="openapi"), name="docs"),
    path("admin/", admin.site.urls),
    path("", include("apps.accounts.api.urls")),
    path("", include("apps.accounts.api.profile_urls")),
    path("", include("apps.patients.api.urls")),
    path("", include("apps.journeys.api.urls")),
    path("", include("apps.webhooks.api.urls")),
    path("", include("apps.partners.api.urls")),
    path("", include("apps.tasks.api.urls")),
    path("", include("apps.today.api.urls")),
    path("", include("apps.appointments.api.urls")),
    path("", include("apps.assist.urls")),  # /conversations/{id}/assist/…: before the conversations app's routes
    path("", include("apps.conversations.api.urls")),
    path("", include("apps.notifications.api.urls")),
    path("", include("apps.capture.api.urls")),
    path("", include("apps.campaigns.api.urls")),  # /templates/…, /campaigns/…, /marketing/unsubscribe/{token}
    path("", include("apps.sites.api.urls")),  # /site/{siteKey}/…, /form-page/{token}, /settings/sites
    path("", include("apps.booking.api.urls")),  # /booking/…, /settings/booking-pages
    path("", include("apps.widget.api.urls")),  # /widget-connections, /widget/{embedKey}/…
    path("", include("apps.dialer.api.urls")),  # /dialer/…, /calls/…
    path("", include("apps.voice.api.urls")),  # /settings/ai-voice, /calls/{id}/transcript, /calls/{id}/summary
    path("", include("apps.referrals.api.urls")),  # /referral-programmes, /patients/{id}/referral-token, /referral/…
    path("", include("apps.reputation.api.urls")),  # /reputation/…, /r/{token}
    path("", include("apps.leadads.api.urls")),  # /lead-ads/…, /leads
    # The clinical workspace (issue 23): the hub, clinical records, treatment plans, recalls and the waitlist.
    path("", include("apps.pms.api.urls")),  # /settings/pms/…
    path("", include("apps.clinical.api.urls")),  # /day-list, /book, /patient-record/{id}, /pms-inbox/…, /clinical/…
    path("", include("apps.records.api.urls")),  # /clinical/notes…, /clinical/medical-history…
    path("", include("apps.plans.api.urls")),  # /clinical/treatment-plans…, /clinical/treatment-templates…
    path("", include("apps.recalls.api.urls")),  # /clinical/recalls…, /clinical/waitlist…
    path("", include("apps.audit.api.urls")),  # /audit-log…, /compliance/…
    path("", include("apps.reports.api.urls")),  # /reports/…, /report-subscriptions…
    path("", include("apps.automations.api.urls")),  # /automations…
    path("", include("apps.transfer.api.urls")),  # /transfer/core-…, /practice-archive…
    path("", include("apps.agreements.api.urls")),  # /agreements…
    path("", include("apps.bootstrap.api.urls")),  # /bootstrap
    path("", include("apps.deposits.api.urls")),  # /deposits/…, /l/{token}, payment callbacks, /settings/payments
    path("", include("apps.teamchat.api.urls")),  # /team-chat/…
    path("", include("apps.support.api.urls")),  # /support/…
    path("", include("apps.oauth.urls")),
    path("", include("apps.oauth.api.urls")),
    path("", include("apps.mcp.urls")),
]

handler400 = "apps.core.errors.handler400"
handler403 = "apps.core.errors.handler403"
handler404 = "apps.core.errors.handler404"
handler500 = "apps.core.errors.handler500"
