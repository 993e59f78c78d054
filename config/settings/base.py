"""Settings shared by every environment. Everything that differs between machines comes from the environment."""

import os
from pathlib import Path

import dj_database_url

from apps.core.scopes import OAUTH_AREAS  # plain modules: no Django import, safe in settings
from apps.core.uuids import UUID_PATTERN

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


SECRET_KEY = env("SECRET_KEY", "dev-only-insecure-secret-key-change-me")
DEBUG = False
ALLOWED_HOSTS = [h for h in (env("ALLOWED_HOSTS", "*") or "").split(",") if h]

# The regional identity of this deployment (spec "What the service does" 1).
SVC_REGION = env("SVC_REGION", "eu")
if SVC_REGION not in {"eu", "us"}:
    raise RuntimeError("SVC_REGION must be 'eu' or 'us'")
# The URL people and integrators reach this service at; by default the local server on PORT (`make run PORT=9000`).
SVC_BASE_URL = (env("SVC_BASE_URL", f"http://localhost:{env('PORT', '8787')}") or "").rstrip("/")
# The web app people open links in (invitation e-mails); the API's own URL by default.
SVC_APP_URL = (env("SVC_APP_URL", SVC_BASE_URL) or "").rstrip("/")
SVC_TOTP_ISSUER = env("SVC_TOTP_ISSUER", "Practice CRM")
# Every region's base URL ("eu=https://eu.example.com,us=https://us.example.com"); this one's by default. The
# global developer front door ({developer_url}/oauth/*) routes OAuth requests to them.
SVC_REGION_BASE_URLS = {
    region.strip(): url.strip().rstrip("/")
    for region, _, url in (
        item.partition("=") for item in (env("SVC_REGION_BASE_URLS", "") or "").split(",") if "=" in item
    )
} or {SVC_REGION: SVC_BASE_URL}
SVC_DEVELOPER_URL = (env("SVC_DEVELOPER_URL", SVC_BASE_URL) or "").rstrip("/")
SVC_MCP_URL = f"{SVC_BASE_URL}/mcp"
SVC_MCP_REPLY_LIMIT = 16 * 1024 * 1024  # an MCP reply larger than this comes in parts
SVC_OAUTH_ISSUER = f"{SVC_BASE_URL}/auth"
# Exact redirect URIs of AI-assistant clients that may register dynamically (besides loopback addresses).
SVC_OAUTH_REDIRECT_ALLOW_LIST = [
    uri.strip()
    for uri in (
        env(
            "SVC_OAUTH_REDIRECT_ALLOW_LIST",
            "https://claude.ai/api/mcp/auth_callback,https://claude.com/api/mcp/auth_callback,"
            "https://chatgpt.com/connector_platform_oauth_redirect,https://chat.openai.com/aip/oauth/callback",
        )
        or ""
    ).split(",")
    if uri.strip()
]
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "Practice CRM <no-reply@localhost>")
# Outbound e-mail to people (invitations, password resets): SMTP in production, from the environment.
EMAIL_HOST = env("EMAIL_HOST", "localhost") or "localhost"
EMAIL_PORT = int(env("EMAIL_PORT", "25") or 25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", "") or ""
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", "") or ""
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 10
# A password reset link works once and for an hour (Django's PasswordResetTokenGenerator).
PASSWORD_RESET_TIMEOUT = 3600
# Installed mobile builds below this version get 426 on GET /auth/me.
SVC_MOBILE_MIN_VERSION = env("SVC_MOBILE_MIN_VERSION", "1.0.0")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_otp",
    "channels",
    "apps.core",
    "apps.accounts",
    "apps.events",
    "apps.patients",
    "apps.journeys",
    "apps.webhooks",
    "apps.partners",
    "apps.tasks",
    "apps.today",
    "apps.appointments",
    "apps.conversations",
    "apps.capture",
    "apps.sites",
    "apps.campaigns",
    "apps.teamchat",
    "apps.support",
    "apps.notifications",
    "apps.assist",
    "apps.deposits",
    "apps.booking",
    "apps.referrals",
    "apps.reputation",
    "apps.widget",
    "apps.dialer",
    "apps.voice",
    "apps.leadads",
    "apps.pms",
    "apps.clinical",
    "apps.records",
    "apps.plans",
    "apps.recalls",
    "apps.audit",
    "apps.reports",
    "apps.automations",
    "apps.transfer",
    "apps.agreements",
    "apps.bootstrap",
    "oauth2_provider",
    "apps.oauth",
    "apps.mcp",
]

MIDDLEWARE = [
    "apps.core.middleware.JsonErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.core.middleware.BodySizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: after the session user is known. Under ASGI the chain runs synchronously down to the last synchronous-
    # only middleware, then hands back to the event loop; any async-capable middleware below it would cost two more
    # thread hand-offs per request (MiddlewareMixin runs process_request/process_response through sync_to_async).
    "apps.core.middleware.BrowserSessionSurfaceMiddleware",
    # After it: every authenticated API write answered 2xx is recorded, in the write's own transaction (docs/audit.md).
    "apps.audit.middleware.AuditMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/practice_crm"),
        conn_max_age=60,
        conn_health_checks=True,
    )
}
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 3
# Typo-tolerant patient search: a query matches when its trigrams resemble a stretch of the search document
# this much. pg_trgm's default of 0.6 misses a single typo in a short name; 0.3 lets common trigrams (".com",
# frequent name parts) match thousands of rows. 0.4 keeps one typo per word and stays selective (docs/benchmarks.md).
SVC_SEARCH_WORD_SIMILARITY = 0.4
# JIT off: the API's queries are short OLTP reads whose cost estimates (aggregates over a practice's rows) cross
# jit_above_cost, and compiling then takes longer than the query (bench crm: 183 of 419 ms of one Today query).
DATABASES["default"]["OPTIONS"]["options"] = (
    f"-c pg_trgm.word_similarity_threshold={SVC_SEARCH_WORD_SIMILARITY} -c jit=off"
)
# Under ASGI every request runs in its own thread context, so persistent connections (CONN_MAX_AGE) are never
# reused: a connection pool (psycopg_pool, Django's built-in support) saves a new backend per request.
# A pooled connection the server dropped (restart, failover, idle kill) would fail the next request that takes it
# (503): the pool checks each connection as it is lent (psycopg_pool.ConnectionPool.check_connection, one empty
# round trip) and replaces a dead one, so a failover costs no request. Django hands the pool that `check` when
# CONN_HEALTH_CHECKS is on; it passes check= itself, so a "check" key in the pool options would be a TypeError.
if env_bool("SVC_DB_POOL", True):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 2, "max_size": 20, "timeout": 10}
# The hot reads (apps.core.statements.prepared_cursor) are prepared on a connection's first run and reused: psycopg
# prepares only on server-binding cursors, so Django's own (client-binding) cursors are unaffected by the threshold.
# Their plans do not depend on the values (a practice's index range, a key's digest), so they are planned once:
# left to choose, PostgreSQL kept replanning the patient page for every call (its generic plan's estimate is the
# average practice's), 1.9 ms a call against 0.85 ms generic. The setting touches only prepared statements and the
# cached statements of the patients triggers (migration 0005), keyed by practice or by their transition tables.
SVC_DB_PREPARED_READS = env_bool("SVC_DB_PREPARED_READS", True)
if SVC_DB_PREPARED_READS:
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = 0
    DATABASES["default"]["OPTIONS"]["options"] += " -c plan_cache_mode=force_generic_plan"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "svc",
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
    }
}

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = 60 * 60 * 24 * 14
CSRF_FAILURE_VIEW = "apps.core.errors.csrf_failure"
# The Referrer-Policy header SecurityMiddleware adds. It must keep the origin on same-origin requests: under a
# no-referrer policy a browser's form post (OAuth sign-in and consent, the hosted form) carries "Origin: null",
# which the CSRF check refuses. same-origin also keeps URLs (the hosted form's token) off other sites.
SECURE_REFERRER_POLICY = "same-origin"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env("SVC_MEDIA_ROOT", str(BASE_DIR / "media")))

# Uploaded pictures (avatars, practice logos: apps.accounts.media) go through Django's storage API, to the storage
# named SVC_MEDIA_STORAGE_ALIAS. SVC_MEDIA_STORAGE=s3 keeps them in an S3-compatible bucket (AWS S3, MinIO, R2, …;
# credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the instance role, read by boto3); anything else
# keeps them below MEDIA_ROOT. They are served only through the API, never by URL: the bucket stays private.
SVC_MEDIA_STORAGE = (env("SVC_MEDIA_STORAGE", "filesystem") or "filesystem").strip().lower()
SVC_MEDIA_STORAGE_ALIAS = env("SVC_MEDIA_STORAGE_ALIAS", "default")
if SVC_MEDIA_STORAGE == "s3":
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env("AWS_STORAGE_BUCKET_NAME"),
            "region_name": env("AWS_S3_REGION_NAME"),
            "endpoint_url": env("AWS_S3_ENDPOINT_URL"),
            "addressing_style": env("AWS_S3_ADDRESSING_STYLE"),
            "location": env("AWS_LOCATION", ""),
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
    if not _default_storage["OPTIONS"]["bucket_name"]:
        raise RuntimeError("SVC_MEDIA_STORAGE=s3 needs AWS_STORAGE_BUCKET_NAME")
elif SVC_MEDIA_STORAGE == "filesystem":
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
else:
    raise RuntimeError("SVC_MEDIA_STORAGE must be 'filesystem' or 's3'")
STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Largest body any surface accepts; each view may declare a smaller cap (core.middleware).
SVC_MAX_BODY_BYTES = 6 * 1024 * 1024
SVC_DEFAULT_JSON_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = SVC_MAX_BODY_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.mcp.dispatch.InternalIdentityAuthentication",  # MCP tool calls, in-process only
        "apps.accounts.authentication.ApiKeyAuthentication",
        "apps.oauth.authentication.OAuthTokenAuthentication",
        "apps.accounts.authentication.SessionCookieAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.permissions.DeclaredAccess"],
    "DEFAULT_RENDERER_CLASSES": ["apps.core.renderers.CamelCaseJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.core.parsers.CamelCaseStrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "apps.core.schema.ServiceAutoSchema",
    "EXCEPTION_HANDLER": "apps.core.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
}

# Free-form JSON objects keep their keys exactly as the client sent them.
JSON_CAMEL_CASE = {
    "RENDERER_CLASS": "rest_framework.renderers.JSONRenderer",
    "JSON_UNDERSCOREIZE": {
        "no_underscore_before_number": True,
        "ignore_fields": ("custom_fields", "data", "submitted_fields"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Practice CRM API",
    "DESCRIPTION": (
        "Multi-tenant CRM and practice platform for dental practices. Every error is an ApiError "
        "`{code, message, details}`. Send `X-Organization-ID` when the caller belongs to several practices."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "CAMELIZE_NAMES": False,
    # The credentials clients send (the MCP server's in-process identity is not one).
    "AUTHENTICATION_WHITELIST": [
        "apps.accounts.authentication.ApiKeyAuthentication",
        "apps.oauth.authentication.OAuthTokenAuthentication",
        "apps.accounts.authentication.SessionCookieAuthentication",
    ],
    "PATH_CONVERTER_OVERRIDES": {"uuid_param": {"type": "string", "format": "uuid", "pattern": UUID_PATTERN}},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "drf_spectacular.contrib.djangorestframework_camel_case.camelize_serializer_fields",
        "apps.oauth.openapi.add_oauth_paths",  # after camelizing: OAuth's wire names are snake_case by RFC
    ],
    "ENUM_NAME_OVERRIDES": {
        "AiVoiceJobStatusEnum": "apps.voice.models.JobStatus",
        "AiVoiceErrorCodeEnum": "apps.voice.models.ErrorCode",
        "LeadAdPlatformEnum": "apps.leadads.models.Platform",
        "LeadAdHealthEnum": "apps.leadads.models.Health",
        "MemberRoleEnum": "apps.accounts.roles.ROLE_CHOICES",
        "WorkspaceEnum": "apps.accounts.roles.WORKSPACE_CHOICES",
        "PatientStatusEnum": "apps.patients.models.Status",
        "AppointmentStatusEnum": "apps.appointments.models.AppointmentStatus",
        "AppointmentSettableStatusEnum": "apps.appointments.api.serializers.SETTABLE_STATUSES",
        "ContactMethodEnum": "apps.patients.models.ContactMethod",
        "ConsentChannelEnum": "apps.patients.models.MarketingConsent.Channel",
        "ChannelKindEnum": "apps.conversations.models.Kind",
        "ProviderChannelKindEnum": "apps.conversations.models.PROVIDER_KIND_CHOICES",
        "ConsentStatusEnum": "apps.patients.models.MarketingConsent.State",
        "CaptureFormStatusEnum": "apps.capture.models.CaptureForm.Status",
        "CaptureFormKindEnum": "apps.capture.models.CaptureForm.Kind",
        "CaptureDeliveryModeEnum": "apps.capture.models.CaptureForm.Mode",
        "CaptureSubmissionStatusEnum": "apps.capture.models.CaptureSubmission.Status",
        "IntakeReviewStatusEnum": "apps.capture.models.IntakeReviewItem.Status",
        "IntakeReviewReasonEnum": "apps.capture.models.IntakeReviewItem.Reason",
        "WebsiteStatusEnum": "apps.sites.models.Website.Status",
        "FormDiscoveryStatusEnum": "apps.sites.models.FormDiscovery.Status",
        "NotificationKindEnum": "apps.notifications.models.Kind",
        "DepositStatusEnum": "apps.deposits.models.DepositStatus",
        "PaymentAccountStatusEnum": "apps.deposits.models.AccountStatus",
        "ReferralStatusEnum": "apps.referrals.models.ReferralStatus",
        "ReferralPublicStatusEnum": "apps.referrals.renderers.PublicStatus",
    },
    "TAGS": [
        {"name": "auth", "description": "Sign-in, sign-up, sessions, API keys and the bootstrap identity."},
        {"name": "user", "description": "The signed-in person's own account (browser session only)."},
        {"name": "organization", "description": "Practices the caller belongs to (browser session only)."},
        {"name": "health", "description": "Liveness and readiness probes."},
        {
            "name": "patients",
            "description": "Patients and leads: list, search, export, bulk operations, archive, "
            "merge, erasure, tags and the timeline.",
        },
        {"name": "marketing-consent", "description": "Per-channel marketing consent with evidence."},
        {"name": "saved-views", "description": "Named patient list configurations, private or shared."},
        {"name": "settings", "description": "Practice settings: locations, lead sources, price lists, practitioners."},
        {
            "name": "outbound-webhooks",
            "description": "Signed outbound webhooks: endpoints, secrets, tests, deliveries and replays.",
        },
        {
            "name": "oauth",
            "description": "OAuth 2.0 authorization server: token, revoke, introspect, register, discovery.",
        },
        {
            "name": "capture",
            "description": "Lead capture: POST /capture/{token} (public or signed), capture forms and their "
            "lifecycle, practice websites and form discovery.",
        },
        {"name": "site", "description": "Public website surfaces: form configuration and form-discovery reports."},
        {"name": "intake-review", "description": "Captured leads that need a person before they are worked."},
        {
            "name": "templates",
            "description": "Message templates per channel with variables, validated on save; preview, provider "
            "approval of messaging-app templates, and sending one to a patient.",
        },
        {
            "name": "campaigns",
            "description": "Campaigns: a template sent on a channel connection to an audience frozen at launch, "
            "paced hourly and daily in the background; recipients, totals, test sends and the opt-out link.",
        },
        {
            "name": "Team chat",
            "description": "Chat between the members of one practice: channels (public or private), direct "
            "threads, mentions, unread counts, live over /today/ws. Person to person: browser session only (API keys "
            "and OAuth tokens get 403 BROWSER_SESSION_REQUIRED).",
        },
        {
            "name": "support",
            "description": "The signed-in person's chat with the platform's support staff (browser session only).",
        },
        {
            "name": "notifications",
            "description": "Your own feed in the practice: assigned conversations, mentions, tasks due, new leads; "
            "read marks and per-kind switches; new ones pushed over /today/ws.",
        },
        {
            "name": "deposits",
            "description": "Deposit requests for patients: draft, send (a signed, expiring patient link), cancel; "
            "paid, expired and refunded (partial refunds tracked) as the payment platform reports them.",
        },
        {
            "name": "payments",
            "description": "The patient's deposit page and checkout (/l/{token}), the payment platform's connect "
            "callbacks and OAuth return, and the practice's payment account connection.",
        },
        {
            "name": "billing",
            "description": "The practice's own subscription with the platform (the signed billing callback).",
        },
        {
            "name": "referrals",
            "description": "Referral programmes, a patient's advocate tokens, and the public /referral/* pages: "
            "page config and submit (advocate share token), status (advocate status token or friend patient token).",
        },
    ],
}

# Encryption at rest for secrets that must stay readable (core.crypto). Comma-separated, newest first.
SVC_ENCRYPTION_KEYS = [k for k in (env("SVC_ENCRYPTION_KEYS", "") or "").split(",") if k]

# Provider callbacks of the platform's own provider accounts (one webhook URL serves every practice): the messaging
# platform's app secret (X-Hub-Signature-256) and subscription verify token, and the e-mail provider's Svix signing
# secrets (whsec_…, comma-separated: the new one beside the old while rotating).
SVC_MESSAGING_APP_SECRET = env("SVC_MESSAGING_APP_SECRET", "") or ""
SVC_MESSAGING_APP_VERIFY_TOKEN = env("SVC_MESSAGING_APP_VERIFY_TOKEN", "") or ""
SVC_EMAIL_WEBHOOK_SECRETS = [s for s in (env("SVC_EMAIL_WEBHOOK_SECRETS", "") or "").split(",") if s]
# The domain the e-mail provider receives for (MX to it): practices' inbound addresses are assigned on it.
SVC_INBOUND_EMAIL_DOMAIN = (env("SVC_INBOUND_EMAIL_DOMAIN", "inbound.localhost") or "inbound.localhost").lower()
# Inbound e-mail limits (spec Limits), as (burst, tokens per second): platform-wide 2,000 a minute (a burst of 200,
# so no minute passes 2,200), and each receiving address's fair-use quota (a burst of 60, then 600 an hour).
SVC_INBOUND_EMAIL_BUCKET = (200, 2000 / 60)
SVC_INBOUND_EMAIL_ADDRESS_BUCKET = (60, 600 / 3600)

# Outbound webhooks. SVC_WEBHOOKS_ALLOW_LOOPBACK lets http://127.0.0.1:<port> and http://localhost:<port> receive
# deliveries so a developer can watch them locally; it is refused unless DEBUG is on.
SVC_WEBHOOKS_ALLOW_LOOPBACK = env_bool("SVC_WEBHOOKS_ALLOW_LOOPBACK", False)
SVC_WEBHOOK_USER_AGENT = "PracticeCRM-Webhooks/1.0"

# Provider APIs the conversations app reads from (inbound attachments, e-mail text). The WhatsApp Cloud API's Graph
# base, version included (media ids resolve to a download URL there, with the connection's access token); the
# e-mail provider's (Resend) API base and the platform's API key: without a key, inbound e-mails keep no text and
# their attachments are marked unavailable.
SVC_MESSAGING_APP_GRAPH_URL = (
    env("SVC_MESSAGING_APP_GRAPH_URL", "https://graph.facebook.com/v21.0") or "https://graph.facebook.com/v21.0"
).rstrip("/")
SVC_EMAIL_PROVIDER_API_URL = (
    env("SVC_EMAIL_PROVIDER_API_URL", "https://api.resend.com") or "https://api.resend.com"
).rstrip("/")
SVC_EMAIL_PROVIDER_API_KEY = env("SVC_EMAIL_PROVIDER_API_KEY", "") or ""
# Outbound messages: "provider" sends through the providers' APIs below; "sandbox" records what would have been
# sent (make run and tests; apps.conversations.senders).
SVC_OUTBOUND_TRANSPORT = env("SVC_OUTBOUND_TRANSPORT", "provider") or "provider"
SVC_SMS_API_URL = env("SVC_SMS_API_URL", "https://api.twilio.com") or "https://api.twilio.com"
SVC_TELEPHONY_API_URL = env("SVC_TELEPHONY_API_URL", "https://api.telnyx.com") or "https://api.telnyx.com"
# The dialer (apps.dialer.provider) speaks to SVC_TELEPHONY_API_URL with each connection's API key; "sandbox" calls
# nothing (number searches and orders, calls and recordings are made up locally: make run, tests).
SVC_TELEPHONY_TRANSPORT = env("SVC_TELEPHONY_TRANSPORT", "provider") or "provider"
# Short-video direct messages (apps.conversations, TikTok Business Messaging): the platform app's client key and
# secret (the secret signs every account's webhooks: TikTok-Signature), the OAuth authorize page, and the Business
# API base (token exchange and refresh, message send, media download). Without a client key the connect route
# answers 409; without the secret the webhook answers 503 (SVC_OUTBOUND_TRANSPORT "sandbox" exchanges no code).
SVC_SHORT_VIDEO_CLIENT_KEY = env("SVC_SHORT_VIDEO_CLIENT_KEY", "") or ""
SVC_SHORT_VIDEO_CLIENT_SECRET = env("SVC_SHORT_VIDEO_CLIENT_SECRET", "") or ""
SVC_SHORT_VIDEO_AUTHORIZE_URL = (
    env("SVC_SHORT_VIDEO_AUTHORIZE_URL", "https://www.tiktok.com/v2/auth/authorize/")
    or "https://www.tiktok.com/v2/auth/authorize/"
)
SVC_SHORT_VIDEO_API_URL = (
    env("SVC_SHORT_VIDEO_API_URL", "https://business-api.tiktok.com/open_api/v1.3")
    or "https://business-api.tiktok.com/open_api/v1.3"
).rstrip("/")

# Notifications (apps.notifications): kept this long, and a task that fell due up to this long ago is still noticed
# (the task-due sweep runs every minute; a beat outage longer than this skips the notices in between).
SVC_NOTIFICATIONS_RETENTION_DAYS = int(env("SVC_NOTIFICATIONS_RETENTION_DAYS", "180") or 180)
SVC_NOTIFICATIONS_TASK_DUE_LOOKBACK = 24 * 3600  # seconds

# AI assist (apps.assist): off until a provider speaking the OpenAI chat-completions API is configured (all three).
# The URL is the API's base, e.g. https://api.openai.com/v1 (…/chat/completions is appended).
SVC_AI_ASSIST_PROVIDER_URL = (env("SVC_AI_ASSIST_PROVIDER_URL", "") or "").rstrip("/")
SVC_AI_ASSIST_PROVIDER_KEY = env("SVC_AI_ASSIST_PROVIDER_KEY", "") or ""
SVC_AI_ASSIST_PROVIDER_MODEL = env("SVC_AI_ASSIST_PROVIDER_MODEL", "") or ""
SVC_AI_ASSIST_TIMEOUT = float(env("SVC_AI_ASSIST_TIMEOUT", "30") or 30)  # seconds for the provider to answer
# AI Voice (apps.voice): call transcripts through a speech-to-text provider speaking the OpenAI audio API (the URL is
# the API's base, e.g. https://api.openai.com/v1: …/audio/transcriptions is appended), summaries through the AI assist
# provider above. "provider" is off until URL, key and model are all set; "sandbox" calls nothing (make run).
SVC_AI_VOICE_TRANSPORT = env("SVC_AI_VOICE_TRANSPORT", "provider") or "provider"
SVC_AI_VOICE_TRANSCRIBE_URL = (env("SVC_AI_VOICE_TRANSCRIBE_URL", "") or "").rstrip("/")
SVC_AI_VOICE_TRANSCRIBE_KEY = env("SVC_AI_VOICE_TRANSCRIBE_KEY", "") or ""
SVC_AI_VOICE_TRANSCRIBE_MODEL = env("SVC_AI_VOICE_TRANSCRIBE_MODEL", "") or ""
SVC_AI_VOICE_TIMEOUT = float(env("SVC_AI_VOICE_TIMEOUT", "120") or 120)  # seconds for a transcription's answer
SVC_AI_VOICE_MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the reference API's upload cap; larger recordings fail

# Deposits and payments (apps.deposits; Stripe Connect as the reference): the platform's API base and secret key, the
# Connect OAuth client id and authorize base, the checkout page's origin (the deposit page may post on to it), the
# signing secrets of the connect callback (/webhooks/payments-connect) and of the billing callback
# (/auth/payments-billing/webhook), and how long a patient link is valid. "sandbox" calls no provider (make run, tests).
SVC_PAYMENTS_TRANSPORT = env("SVC_PAYMENTS_TRANSPORT", "provider") or "provider"
# Review platform (apps.reputation.provider): Business Profile API v4; "sandbox" contacts nothing.
SVC_REPUTATION_TRANSPORT = env("SVC_REPUTATION_TRANSPORT", "provider") or "provider"
SVC_REPUTATION_API_URL = (env("SVC_REPUTATION_API_URL", "https://mybusiness.googleapis.com") or "").rstrip("/")
SVC_PAYMENTS_API_URL = (env("SVC_PAYMENTS_API_URL", "https://api.stripe.com") or "https://api.stripe.com").rstrip("/")
SVC_PAYMENTS_SECRET_KEY = env("SVC_PAYMENTS_SECRET_KEY", "") or ""
SVC_PAYMENTS_CLIENT_ID = env("SVC_PAYMENTS_CLIENT_ID", "") or ""
SVC_PAYMENTS_CONNECT_URL = (
    env("SVC_PAYMENTS_CONNECT_URL", "https://connect.stripe.com") or "https://connect.stripe.com"
).rstrip("/")
SVC_PAYMENTS_CHECKOUT_ORIGIN = env("SVC_PAYMENTS_CHECKOUT_ORIGIN", "https://checkout.stripe.com") or ""
SVC_PAYMENTS_WEBHOOK_SECRET = env("SVC_PAYMENTS_WEBHOOK_SECRET", "") or ""
SVC_PAYMENTS_BILLING_WEBHOOK_SECRET = env("SVC_PAYMENTS_BILLING_WEBHOOK_SECRET", "") or ""
SVC_DEPOSIT_LINK_DAYS = 14

# Native lead ads (apps.leadads). The social platform's app (Meta): its secret (X-Hub-Signature-256 and signed_request)
# and the webhook verify token, the lead API's Graph base (version included). The short-video platform's lead
# generation app secret (TikTok-Signature). "sandbox" fetches no lead from the platform (make run, tests). The peer
# region's API base (rule 7: bodies for pages not connected here are forwarded there; empty: parked for review).
SVC_LEAD_ADS_META_APP_SECRET = env("SVC_LEAD_ADS_META_APP_SECRET", "") or ""
SVC_LEAD_ADS_META_VERIFY_TOKEN = env("SVC_LEAD_ADS_META_VERIFY_TOKEN", "") or ""
SVC_LEAD_ADS_GRAPH_URL = (
    env("SVC_LEAD_ADS_GRAPH_URL", "https://graph.facebook.com/v21.0") or "https://graph.facebook.com/v21.0"
).rstrip("/")
SVC_LEAD_ADS_SHORT_VIDEO_SECRET = env("SVC_LEAD_ADS_SHORT_VIDEO_SECRET", "") or ""
SVC_LEAD_ADS_TRANSPORT = env("SVC_LEAD_ADS_TRANSPORT", "provider") or "provider"
SVC_LEAD_ADS_PEER_URL = (env("SVC_LEAD_ADS_PEER_URL", "") or "").rstrip("/")

# Celery: at-least-once work. Late acks + requeue on a lost worker; visibility timeout above the longest task,
# and no ETA longer than it (long delays are rows with a due time that beat sweeps).
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_TIMEZONE = "UTC"
# The audit log's retention (apps.audit): 6 years, the period for which records of processing and claims must be
# answerable (England's limitation period; HIPAA's documentation period). Purged daily past it.
AUDIT_RETENTION_DAYS = int(env("AUDIT_RETENTION_DAYS", "2190") or 2190)

CELERY_BEAT_SCHEDULE = {
    "purge-expired-sessions": {"task": "apps.accounts.tasks.purge_expired_sessions", "schedule": 3600.0},
    "webhooks-sweep": {"task": "apps.webhooks.tasks.sweep", "schedule": 60.0},
    "conversations-sweep": {"task": "apps.conversations.tasks.sweep_deliveries", "schedule": 60.0},
    "conversations-outbound-sweep": {"task": "apps.conversations.tasks.sweep_outbound", "schedule": 60.0},
    "conversations-purge": {"task": "apps.conversations.tasks.purge_records", "schedule": 3600.0},
    "conversations-attachments-sweep": {"task": "apps.conversations.tasks.sweep_attachments", "schedule": 300.0},
    "webhooks-purge": {"task": "apps.webhooks.tasks.purge_old_deliveries", "schedule": 3600.0},
    "oauth-purge-unapproved-clients": {"task": "apps.oauth.tasks.purge_unapproved_clients", "schedule": 900.0},
    "oauth-purge-spent-codes": {"task": "apps.oauth.tasks.purge_spent_codes", "schedule": 3600.0},
    "webhooks-lost-subscriptions": {"task": "apps.webhooks.tasks.archive_lost_subscriptions", "schedule": 3600.0},
    "capture-sweep": {"task": "apps.capture.tasks.sweep", "schedule": 60.0},
    "campaigns-sweep": {"task": "apps.campaigns.tasks.sweep", "schedule": 30.0},
    "deposits-expire": {"task": "apps.deposits.tasks.expire_links", "schedule": 300.0},
    "deposits-purge-receipts": {"task": "apps.deposits.tasks.purge_receipts", "schedule": 3600.0},
    "notifications-task-due": {"task": "apps.notifications.tasks.notify_due_tasks", "schedule": 60.0},
    "notifications-purge": {"task": "apps.notifications.tasks.purge_old", "schedule": 3600.0},
    "referrals-sweep": {"task": "apps.referrals.tasks.sweep", "schedule": 600.0},
    "reputation-sync": {"task": "apps.reputation.tasks.sync_all", "schedule": 900.0},
    "widget-received-sweep": {"task": "apps.widget.tasks.sweep_received", "schedule": 60.0},
    "dialer-sweep": {"task": "apps.dialer.tasks.sweep", "schedule": 60.0},
    "dialer-purge-events": {"task": "apps.dialer.tasks.purge_events", "schedule": 3600.0},
    "voice-sweep": {"task": "apps.voice.tasks.sweep", "schedule": 60.0},
    "leadads-sweep": {"task": "apps.leadads.tasks.sweep", "schedule": 60.0},
    # Recalls (apps.recalls): reminders whose moment has come; waitlist offers past their expiry (slot re-offered).
    "recalls-reminders": {"task": "apps.recalls.tasks.send_reminders", "schedule": 300.0},
    "recalls-expire-offers": {"task": "apps.recalls.tasks.expire_offers", "schedule": 300.0},
    # The connected PMS (apps.pms): waiting callback receipts and stalled imports; old receipts.
    "pms-sweep": {"task": "apps.pms.tasks.sweep", "schedule": 60.0},
    "pms-purge": {"task": "apps.pms.tasks.purge", "schedule": 3600.0},
    # The audit log (apps.audit): entries past AUDIT_RETENTION_DAYS, in batches.
    "audit-purge": {"task": "apps.audit.tasks.purge_expired", "schedule": 86400.0},
    # Report subscriptions (apps.reports): e-mail the reports whose period has ended.
    "reports-send-subscriptions": {"task": "apps.reports.tasks.send_due_subscriptions", "schedule": 300.0},
    # Automations (apps.automations): events whose trigger was lost while the broker was down, due schedule rules,
    # and the 90-day purge of runs.
    "automations-sweep-events": {"task": "apps.automations.tasks.sweep_events", "schedule": 60.0},
    "automations-sweep-schedules": {"task": "apps.automations.tasks.sweep_schedules", "schedule": 60.0},
    "automations-purge-runs": {"task": "apps.automations.tasks.purge_runs", "schedule": 86400.0},
    # Data transfer (apps.transfer): stalled imports resumed, expired export files deleted; practices whose archive
    # grace period has ended closed.
    "transfer-sweep": {"task": "apps.transfer.tasks.sweep", "schedule": 60.0},
    "transfer-close-practices": {"task": "apps.transfer.tasks.close_practices", "schedule": 3600.0},
}

# The connected PMS (apps.pms, docs/pms.md): "provider" pulls each connection's PMS API (httpx, https through the
# webhooks' SSRF guard); "sandbox" answers the import from SVC_PMS_SANDBOX_PATIENTS generated patients (make run).
SVC_PMS_TRANSPORT = env("SVC_PMS_TRANSPORT", "provider") or "provider"
SVC_PMS_SANDBOX_PATIENTS = int(env("SVC_PMS_SANDBOX_PATIENTS", "1200") or 1200)

# capacity: every socket of one daphne process receives through one Redis key (channels_redis's process-specific
# channel), so the library's default of 100 pending messages is shared by all of that process's sockets; a burst past
# it was dropped silently (bench/widget lost half its pushes). Pending messages still expire after 60 s.
# SVC_CHANNEL_LAYER_SOCKET_TIMEOUT: channels_redis waits for messages with a 5 s BZPOPMIN, and redis-py 8's default
# read timeout is also 5 s; under load the read lost that race and the socket closed 1011 (docs/benchmarks.md, chat
# widget). config.serve gives its daphne processes 30 s. Other processes (the workers, the in-process socket tests)
# keep redis-py's default: with a longer timeout those tests' event loops hung at teardown now and then.
SVC_CHANNEL_LAYER_CAPACITY = int(env("SVC_CHANNEL_LAYER_CAPACITY", "5000") or 5000)
SVC_CHANNEL_LAYER_SOCKET_TIMEOUT = float(env("SVC_CHANNEL_LAYER_SOCKET_TIMEOUT", "0") or 0)


def channel_layer_host(redis_url: str):
    """The channel layer's Redis host: the URL, with the read timeout when this process sets one."""
    if not SVC_CHANNEL_LAYER_SOCKET_TIMEOUT:
        return redis_url
    return {"address": redis_url, "socket_timeout": SVC_CHANNEL_LAYER_SOCKET_TIMEOUT}


CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [channel_layer_host(REDIS_URL)], "capacity": SVC_CHANNEL_LAYER_CAPACITY},
    },
}

# Rate limits (spec "Limits"). Buckets are (burst, refill per second).
SVC_API_KEY_BUCKET = (300, 5.0)  # 300 requests per minute per key
SVC_SIGN_IN_RATE = "20/m"  # per client address
SVC_UNSEEN_BEARER_RATE = "300/m"  # bearers not resolved within the hour, per address block
SVC_SIGN_UP_RATE = "10/m"
SVC_PASSWORD_RESET_RATE = "10/m"  # reset requests and resets, per client address
SVC_PASSWORD_RESET_ADDRESS_BUCKET = (3, 3 / 3600)  # links e-mailed to one address: 3 at once, then 3 an hour
SVC_EMAIL_VERIFICATION_RATE = "10/m"  # verification requests and link openings, per client address
SVC_EMAIL_VERIFICATION_ADDRESS_BUCKET = (3, 3 / 3600)  # verification links to one address
# Sensitive account requests (two-factor, re-authentication): per person and per client address, fail closed.
SVC_SENSITIVE_USER_BUCKET = (20, 0.2)  # 20 at once, then one every 5 s
SVC_SENSITIVE_ADDRESS_BUCKET = (60, 1.0)
SVC_PUBLIC_ACCOUNT_RATE = "300/m"  # invitation preview/answer per client address (public abuse screen)
SVC_LIVE_HANDSHAKE_BUCKET = (300, 5.0)  # GET /today/ws handshakes per user
SVC_SUPPORT_CHAT_BUCKET = (30, 1.0)  # POST /support/messages per user
SVC_AI_ASSIST_BUCKET = (60, 6 / 60)  # AI assist (suggest, summarize) per organization: 60 burst, 6 per minute
SVC_CAMPAIGN_TEST_SEND_BUCKET = (20, 20 / 3600)  # POST /campaigns/{id}/test-send per sender per campaign
SVC_DIALER_NUMBER_ORDER_BUCKET = (60, 18 / 3600)  # POST /dialer/numbers per organization (releases never limited)
SVC_CAPTURE_FORM_BUCKET = (200, 5.0)  # POST /capture/{token} per form endpoint
SVC_SITE_DISCOVERY_BUCKET = (30, 0.5)  # POST /site/{siteKey}/forms per site
SVC_REFERRAL_CONFIG_BUCKET = (120, 4.0)  # GET /referral/{token} per practice
SVC_REFERRAL_SUBMIT_BUCKET = (60, 1.0)  # POST /referral/{token}/submit per practice
SVC_REFERRAL_STATUS_BUCKET = (120, 2.0)  # GET /referral/{token}/status per practice
SVC_REPUTATION_READ_BUCKET = (120, 4.0)  # GET /r/{token} per practice (no spec row: like the config buckets)
SVC_REPUTATION_WRITE_BUCKET = (60, 1.0)  # POST /r/{token}/… per practice (like the submit buckets)
SVC_BOOKING_CONFIG_BUCKET = (120, 4.0)  # GET /booking/{token}/config (and manage reads) per practice
SVC_BOOKING_AVAILABILITY_BUCKET = (120, 2.0)  # GET /booking/{token}/availability per practice
SVC_BOOKING_HOLD_BUCKET = (60, 1.0)  # POST /booking/{token}/holds (and manage writes) per practice
SVC_BOOKING_COMPLETE_BUCKET = (60, 1.0)  # POST /booking/{token}/holds/{holdId}/complete per practice, own bucket
SVC_WIDGET_CONFIG_BUCKET = (120, 4.0)  # GET /widget/{embedKey}/config per widget connection
SVC_WIDGET_READ_BUCKET = (600, 10.0)  # thread reads per widget connection
SVC_WIDGET_SEND_BUCKET = (300, 5.0)  # visitor start, thread open, send message per widget connection
SVC_WIDGET_HANDSHAKE_BUCKET = (600, 10.0)  # /widget/{embedKey}/ws handshakes per widget connection
SVC_WIDGET_FRAME_BUCKET = (120, 1.0)  # frames from the visitor per open socket (kept in the socket's process)
SVC_WIDGET_FRAME_BYTES = 16 * 1024  # a larger frame closes the socket (1009)
SVC_PUBLIC_SCREEN_RATE = "300/m"  # public surfaces (capture, site, form page) per client address
RATELIMIT_USE_CACHE = "default"
RATELIMIT_FAIL_OPEN = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {"django.request": {"level": "ERROR"}},
}


# --- OAuth 2.0 authorization server (django-oauth-toolkit; apps/oauth) ---------------------------------------------
OAUTH_SCOPES = {
    "read": "Read everything your role can read",
    "write": "Change everything your role can change",
    "offline_access": "Stay connected when you are away (a refresh token)",
    "dialer": "Calls and recordings",
    **{
        f"{area}.{access}": f"{'Read' if access == 'read' else 'Read and change'} {area}"
        for area in OAUTH_AREAS
        for access in ("read", "write")
    },
}
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth.Grant"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth.RefreshToken"
OAUTH2_PROVIDER = {
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "OAUTH2_SERVER_CLASS": "apps.oauth.server.S256OnlyServer",
    "OAUTH2_VALIDATOR_CLASS": "apps.oauth.validators.PracticeValidator",
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 86400,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ACCESS_TOKEN_GENERATOR": "apps.oauth.tokens.access_token_generator",
    "REFRESH_TOKEN_GENERATOR": "apps.oauth.tokens.refresh_token_generator",
    "SCOPES": OAUTH_SCOPES,
    "DEFAULT_SCOPES": ["read"],
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "OIDC_ISS_ENDPOINT": SVC_OAUTH_ISSUER,
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    # none: every dynamically registered client (public); the secret methods: confidential apps made in the back
    # office (apps.oauth.registration registers a client asking for one as public, answering "none").
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    "OAUTH2_PROTECTED_RESOURCE_IDENTIFIER": SVC_MCP_URL,
    "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [SVC_OAUTH_ISSUER],
}
SVC_OAUTH_UNAUTHENTICATED_RATE = "300/m"  # token, revoke, introspect per address block (IPv4 /24, IPv6 /64)
