"""pytest settings: real PostgreSQL and Redis. Each xdist worker gets its own Redis database."""

import os
import tempfile
from pathlib import Path

from .base import *  # noqa: F403
from .base import CACHES, CHANNEL_LAYERS, DATABASES, REDIS_URL, STORAGES, SVC_SMS_API_URL, channel_layer_host

DEBUG = os.environ.get("DEBUG") == "1"  # the e2e webhook worker runs with DEBUG=1 to reach a loopback receiver
SVC_WEBHOOKS_ALLOW_LOOPBACK = os.environ.get("SVC_WEBHOOKS_ALLOW_LOOPBACK") == "1"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; production keeps PBKDF2
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
# TEST_REDIS_DB_BASE / TEST_DB_SUFFIX let several checkouts run their suites side by side on one machine.
_redis_db = int(os.environ.get("TEST_REDIS_DB_BASE", "1")) + int(_worker.removeprefix("gw") or 0) % 8
TEST_REDIS_URL = REDIS_URL.rsplit("/", 1)[0] + f"/{_redis_db}"
CACHES["default"]["LOCATION"] = TEST_REDIS_URL
CHANNEL_LAYERS["default"]["CONFIG"]["hosts"] = [channel_layer_host(TEST_REDIS_URL)]
CELERY_BROKER_URL = TEST_REDIS_URL
# The e2e worker test starts a real worker with CELERY_TASK_ALWAYS_EAGER=0 in its environment.
CELERY_TASK_ALWAYS_EAGER = os.environ.get("CELERY_TASK_ALWAYS_EAGER", "1") == "1"
CELERY_TASK_EAGER_PROPAGATES = True
DATABASES["default"]["CONN_MAX_AGE"] = 0
# Tests run one connection per xdist worker inside transactions: no pool (pytest-django creates and drops the DB).
# A server process started by a test of the pool itself (tests/e2e/test_db_failover.py) keeps it: SVC_TEST_DB_POOL=1.
if os.environ.get("SVC_TEST_DB_POOL") != "1":
    DATABASES["default"]["OPTIONS"].pop("pool", None)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
DATABASES["default"]["TEST"] = {"NAME": "test_practice_crm" + os.environ.get("TEST_DB_SUFFIX", "")}
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
# Uploaded pictures never land in the checkout: a temporary folder (tests that upload use their own tmp_path).
MEDIA_ROOT = Path(tempfile.gettempdir()) / "practice-crm-test-media"
STORAGES["default"] = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
# The platform's provider accounts in tests (tests/conversations sign with these).
SVC_MESSAGING_APP_SECRET = "test-messaging-app-secret"
SVC_MESSAGING_APP_VERIFY_TOKEN = "test-verify-token"
SVC_EMAIL_WEBHOOK_SECRETS = ["whsec_dGVzdC1lLW1haWwtc2lnbmluZy1zZWNyZXQ="]
SVC_INBOUND_EMAIL_DOMAIN = "inbound.practice.example"
# No messaging platform outside tests/conversations (whose `graph` fixture serves one locally): never the internet.
SVC_MESSAGING_APP_GRAPH_URL = ""

# Outbound messages are recorded, not sent; tests of the provider calls point the API URLs at local servers.
SVC_OUTBOUND_TRANSPORT = os.environ.get("SVC_OUTBOUND_TRANSPORT", "sandbox")  # the e2e worker test: provider
SVC_SMS_API_URL = os.environ.get("SVC_SMS_API_URL", SVC_SMS_API_URL)
# The short-video platform app (tests/conversations/test_short_video.py signs with the secret).
SVC_SHORT_VIDEO_CLIENT_KEY = "test-short-video-client-key"
SVC_SHORT_VIDEO_CLIENT_SECRET = "test-short-video-client-secret"

# Payments (apps.deposits): the sandbox unless a test points the API at a local server; fixed signing secrets.
SVC_PAYMENTS_TRANSPORT = "sandbox"
SVC_PAYMENTS_SECRET_KEY = "sk_test_platform"
SVC_PAYMENTS_CLIENT_ID = "ca_test_platform"
SVC_PAYMENTS_WEBHOOK_SECRET = "whsec_test_payments_connect"
SVC_PAYMENTS_BILLING_WEBHOOK_SECRET = "whsec_test_payments_billing"
SVC_REPUTATION_TRANSPORT = "sandbox"
# Native lead ads (apps.leadads): the sandbox unless a test points the Graph URL at a local server; fixed secrets.
SVC_LEAD_ADS_TRANSPORT = "sandbox"
SVC_LEAD_ADS_META_APP_SECRET = "test-lead-ads-meta-app-secret"
SVC_LEAD_ADS_META_VERIFY_TOKEN = "test-lead-ads-verify-token"
SVC_LEAD_ADS_SHORT_VIDEO_SECRET = "test-lead-ads-short-video-secret"
SVC_LEAD_ADS_PEER_URL = ""
# The dialer (apps.dialer): the sandbox unless a test points the telephony API at a local server.
SVC_TELEPHONY_TRANSPORT = "sandbox"
