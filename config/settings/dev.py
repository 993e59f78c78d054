"""Local development: `make run`. Errors stay JSON even here (core.middleware.JsonErrorMiddleware)."""

import os

from .base import *  # noqa: F403
from .base import env_bool

DEBUG = env_bool("DEBUG", False)
EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"

# The platform's provider accounts on a development machine: fixed local values, so `manage.py simulate_inbound`
# can sign messaging-platform and e-mail callbacks exactly as the providers would (environment values win).
SVC_MESSAGING_APP_SECRET = SVC_MESSAGING_APP_SECRET or "dev-messaging-app-secret"  # noqa: F405
SVC_MESSAGING_APP_VERIFY_TOKEN = SVC_MESSAGING_APP_VERIFY_TOKEN or "dev-verify-token"  # noqa: F405
SVC_EMAIL_WEBHOOK_SECRETS = SVC_EMAIL_WEBHOOK_SECRETS or ["whsec_ZGV2LWUtbWFpbC1zaWduaW5nLXNlY3JldA=="]  # noqa: F405
# No messaging platform to ask on a development machine (the sandbox transport): numbers connect unchecked unless a
# Graph URL is given in the environment.
SVC_MESSAGING_APP_GRAPH_URL = os.environ.get("SVC_MESSAGING_APP_GRAPH_URL", "")

# make run: outbound messages are recorded in the sandbox (visible in the inbox), never sent.
SVC_OUTBOUND_TRANSPORT = os.environ.get("SVC_OUTBOUND_TRANSPORT", "sandbox")
# The short-video platform app on a development machine (simulate_inbound short_video signs with the secret).
SVC_SHORT_VIDEO_CLIENT_KEY = SVC_SHORT_VIDEO_CLIENT_KEY or "dev-short-video-client-key"  # noqa: F405
SVC_SHORT_VIDEO_CLIENT_SECRET = SVC_SHORT_VIDEO_CLIENT_SECRET or "dev-short-video-client-secret"  # noqa: F405

# make run: payments in the sandbox (a local checkout page, no provider), with fixed local callback secrets.
SVC_PAYMENTS_TRANSPORT = os.environ.get("SVC_PAYMENTS_TRANSPORT", "sandbox")
SVC_PAYMENTS_WEBHOOK_SECRET = SVC_PAYMENTS_WEBHOOK_SECRET or "whsec_dev_payments_connect"  # noqa: F405
SVC_PAYMENTS_BILLING_WEBHOOK_SECRET = SVC_PAYMENTS_BILLING_WEBHOOK_SECRET or "whsec_dev_payments_billing"  # noqa: F405
SVC_REPUTATION_TRANSPORT = os.environ.get("SVC_REPUTATION_TRANSPORT", "sandbox")
# Native lead ads on a development machine: no lead API (the sandbox), fixed app secrets and verify token so
# `manage.py simulate_lead_ad` signs exactly as the platforms would (environment values win).
SVC_LEAD_ADS_TRANSPORT = os.environ.get("SVC_LEAD_ADS_TRANSPORT", "sandbox")
SVC_LEAD_ADS_META_APP_SECRET = SVC_LEAD_ADS_META_APP_SECRET or "dev-lead-ads-meta-app-secret"  # noqa: F405
SVC_LEAD_ADS_META_VERIFY_TOKEN = SVC_LEAD_ADS_META_VERIFY_TOKEN or "dev-lead-ads-verify-token"  # noqa: F405
SVC_LEAD_ADS_SHORT_VIDEO_SECRET = SVC_LEAD_ADS_SHORT_VIDEO_SECRET or "dev-lead-ads-short-video-secret"  # noqa: F405
# make run: the dialer in the sandbox (no telephony provider; `manage.py simulate_telephony` plays its callbacks).
SVC_TELEPHONY_TRANSPORT = os.environ.get("SVC_TELEPHONY_TRANSPORT", "sandbox")
# make run: AI Voice in the sandbox (deterministic transcripts and summaries marked sandbox; no provider).
SVC_AI_VOICE_TRANSPORT = os.environ.get("SVC_AI_VOICE_TRANSPORT", "sandbox")
# make run: the connected PMS's import reads generated pages (no PMS to reach); `manage.py simulate_pms` plays its
# signed live changes.
SVC_PMS_TRANSPORT = os.environ.get("SVC_PMS_TRANSPORT", "sandbox")
