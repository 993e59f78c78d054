"""Settings shared by every environment. Everything that differs between machines comes from the environment."""

import os
from pathlib import Path

import dj_database_url

from apps.core.uuids import UUID_PATTERN  # a plain module: no Django import, safe in settings

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
SVC_BASE_URL = (env("SVC_BASE_URL", "http://localhost:8787") or "").rstrip("/")
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
    "apps.webhooks",
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
DATABASES["default"]["OPTIONS"]["options"] = f"-c pg_trgm.word_similarity_threshold={SVC_SEARCH_WORD_SIMILARITY}"
# Under ASGI every request runs in its own thread context, so persistent connections (CONN_MAX_AGE) are never
# reused: a connection pool (psycopg_pool, Django's built-in support) saves a new backend per request.
if env_bool("SVC_DB_POOL", True):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 2, "max_size": 20, "timeout": 10}
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

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = BASE_DIR / "media"

# Largest body any surface accepts; each view may declare a smaller cap (core.middleware).
SVC_MAX_BODY_BYTES = 6 * 1024 * 1024
SVC_DEFAULT_JSON_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = SVC_MAX_BODY_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.ApiKeyAuthentication",
        "apps.accounts.authentication.SessionCookieAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.permissions.DeclaredAccess"],
    "DEFAULT_RENDERER_CLASSES": ["djangorestframework_camel_case.render.CamelCaseJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.core.parsers.CamelCaseStrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "apps.core.schema.ServiceAutoSchema",
    "EXCEPTION_HANDLER": "apps.core.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
}

# Free-form JSON objects keep their keys exactly as the client sent them.
JSON_CAMEL_CASE = {
    "RENDERER_CLASS": "rest_framework.renderers.JSONRenderer",
    "JSON_UNDERSCOREIZE": {"no_underscore_before_number": True, "ignore_fields": ("custom_fields", "data")},
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
    "PATH_CONVERTER_OVERRIDES": {"uuid_param": {"type": "string", "format": "uuid", "pattern": UUID_PATTERN}},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "drf_spectacular.contrib.djangorestframework_camel_case.camelize_serializer_fields",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MemberRoleEnum": "apps.accounts.roles.ROLE_CHOICES",
        "WorkspaceEnum": "apps.accounts.roles.WORKSPACE_CHOICES",
        "PatientStatusEnum": "apps.patients.models.Status",
        "ContactMethodEnum": "apps.patients.models.ContactMethod",
        "ConsentChannelEnum": "apps.patients.models.MarketingConsent.Channel",
        "ConsentStatusEnum": "apps.patients.models.MarketingConsent.State",
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
    ],
}

# Encryption at rest for secrets that must stay readable (core.crypto). Comma-separated, newest first.
SVC_ENCRYPTION_KEYS = [k for k in (env("SVC_ENCRYPTION_KEYS", "") or "").split(",") if k]

# Outbound webhooks. SVC_WEBHOOKS_ALLOW_LOOPBACK lets http://127.0.0.1:<port> and http://localhost:<port> receive
# deliveries so a developer can watch them locally; it is refused unless DEBUG is on.
SVC_WEBHOOKS_ALLOW_LOOPBACK = env_bool("SVC_WEBHOOKS_ALLOW_LOOPBACK", False)
SVC_WEBHOOK_USER_AGENT = "PracticeCRM-Webhooks/1.0"

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
CELERY_BEAT_SCHEDULE = {
    "purge-expired-sessions": {"task": "apps.accounts.tasks.purge_expired_sessions", "schedule": 3600.0},
    "webhooks-sweep": {"task": "apps.webhooks.tasks.sweep", "schedule": 60.0},
    "webhooks-purge": {"task": "apps.webhooks.tasks.purge_old_deliveries", "schedule": 3600.0},
    "webhooks-lost-subscriptions": {"task": "apps.webhooks.tasks.archive_lost_subscriptions", "schedule": 3600.0},
}

CHANNEL_LAYERS = {
    "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}},
}

# Rate limits (spec "Limits"). Buckets are (burst, refill per second).
SVC_API_KEY_BUCKET = (300, 5.0)  # 300 requests per minute per key
SVC_SIGN_IN_RATE = "20/m"  # per client address
SVC_SIGN_UP_RATE = "10/m"  # per client address
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
