"""Rate limits on signing in and up, shared by the account routes and the OAuth sign-in page (apps.oauth)."""

from django.conf import settings

from apps.core.limits import MinuteWindowLimit

SIGN_IN_LIMIT = MinuteWindowLimit("auth.sign-in", rate=lambda: settings.SVC_SIGN_IN_RATE)
SIGN_UP_LIMIT = MinuteWindowLimit("auth.sign-up", rate=lambda: settings.SVC_SIGN_UP_RATE)
PASSWORD_RESET_LIMIT = MinuteWindowLimit("auth.password-reset", rate=lambda: settings.SVC_PASSWORD_RESET_RATE)
