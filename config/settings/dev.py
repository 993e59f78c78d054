"""Local development: `make run`. Errors stay JSON even here (core.middleware.JsonErrorMiddleware)."""

from .base import *  # noqa: F403
from .base import env_bool

DEBUG = env_bool("DEBUG", False)
EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
