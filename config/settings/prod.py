"""Production: secrets must come from the environment."""

import os

from .base import *  # noqa: F403
from .base import STORAGES

if not os.environ.get("SECRET_KEY"):
    raise RuntimeError("SECRET_KEY must be set in production")
DEBUG = False
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = 31536000
STORAGES = {
    **STORAGES,  # the media storage chosen in base (SVC_MEDIA_STORAGE)
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
