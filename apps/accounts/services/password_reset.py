"""Password reset: a request that never says whether the address has an account, an e-mailed single-use link that
expires (Django's PasswordResetTokenGenerator: an HMAC over the user's id, password hash, last sign-in and e-mail,
so a changed password, a later sign-in or an hour passing makes it worthless; nothing is stored), and the reset,
which ends every session of the person."""

import logging
import uuid

from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from apps.accounts.errors import InvalidResetToken
from apps.accounts.limits import address_allowed
from apps.accounts.models import User
from apps.accounts.services import sessions as user_sessions
from apps.accounts.services.users import _validate_password

logger = logging.getLogger("apps.accounts")


def reset_token(user: User) -> str:
    """The link's token: the user's id (base64) and Django's token, joined by a dot."""
    return f"{urlsafe_base64_encode(force_bytes(user.pk))}.{default_token_generator.make_token(user)}"


def password_reset_request(*, email: str) -> None:
    """E-mail a reset link if an active account has this address; the same answer either way (the caller says
    "if an account exists, we sent a link"). Each address gets at most a few links an hour (its own bucket, keyed by
    the address's SHA-256), so nobody can flood someone's inbox through us; over it the request is answered the
    same and nothing is sent."""
    email = (email or "").strip().lower()
    if not address_allowed("auth.password-reset", email, "SVC_PASSWORD_RESET_ADDRESS_BUCKET"):
        return
    user = User.objects.filter(email__iexact=email, is_active=True).only("id").first()
    if user is None:
        return
    from apps.accounts.tasks import send_password_reset_email

    # The token is made by the task at sending time: it never travels through the broker.
    transaction.on_commit(lambda: send_password_reset_email.delay(str(user.pk)))


@transaction.atomic
def password_reset(*, token: str, new_password: str) -> User:
    """Set a new password with a reset token; every session of the person ends (a reset is what someone does when
    they think another has their password). A wrong, used or expired token: 400 INVALID_RESET_TOKEN."""
    user = _user_of(token)
    _validate_password(new_password, user, field="new_password")
    user.set_password(new_password)
    user.save(update_fields=["password", "updated_at"])
    user_sessions.session_end_others(user=user, current=None)
    logger.info("password reset for user %s; their sessions ended", user.pk)
    return user


def _user_of(token: str) -> User:
    encoded, _, signature = (token or "").partition(".")
    try:
        user_id = uuid.UUID(force_str(urlsafe_base64_decode(encoded)))
    except (ValueError, TypeError, UnicodeDecodeError):
        raise InvalidResetToken() from None
    user = User.objects.select_for_update().filter(pk=user_id, is_active=True).first()
    if user is None or not default_token_generator.check_token(user, signature):
        raise InvalidResetToken()
    return user
