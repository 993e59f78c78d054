"""Rate limits on signing in and up, shared by the account routes and the OAuth sign-in page (apps.oauth)."""

import hashlib

from django.conf import settings
from redis.exceptions import RedisError

from apps.core.limits import MinuteWindowLimit, take_token

SIGN_IN_LIMIT = MinuteWindowLimit("auth.sign-in", rate=lambda: settings.SVC_SIGN_IN_RATE)
SIGN_UP_LIMIT = MinuteWindowLimit("auth.sign-up", rate=lambda: settings.SVC_SIGN_UP_RATE)
PASSWORD_RESET_LIMIT = MinuteWindowLimit("auth.password-reset", rate=lambda: settings.SVC_PASSWORD_RESET_RATE)
EMAIL_VERIFICATION_LIMIT = MinuteWindowLimit(
    "auth.email-verification", rate=lambda: settings.SVC_EMAIL_VERIFICATION_RATE
)


def address_allowed(name: str, address: str, setting: str) -> bool:
    """One more e-mail to this address within its bucket (`setting`: burst, per second), keyed by the address's
    SHA-256 (no address in Redis): nobody floods someone's inbox through our account e-mails. Redis unavailable:
    allowed (the routes' per-client windows, which fail closed, still hold)."""
    key = hashlib.sha256(address.encode()).hexdigest()[:32]
    try:
        burst, per_second = getattr(settings, setting)
        allowed, _ = take_token(f"{name}.address:{key}", burst=burst, per_second=per_second)
    except RedisError:
        return True
    return allowed
