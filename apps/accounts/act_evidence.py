"""Fresh re-authentication for clinical acts (signing a note or prescription, voiding a sealed procedure).

POST /user/reauthenticate confirms the password and returns a token signed with Django's signing framework, bound
to the person and to the browser session (a digest of its key), valid five minutes. An act route declares
`permission_classes = WITH_ACT_EVIDENCE` and the request carries the token in X-Service-Act-Evidence; missing,
expired, tampered or borrowed (another person's or another session's) answers 403 FRESH_AUTHENTICATION_REQUIRED.
"""

import hashlib
import hmac
from datetime import datetime, timedelta

from django.core import signing
from django.db import transaction
from django.utils import timezone
from rest_framework.permissions import BasePermission
from rest_framework.settings import api_settings

from apps.accounts.errors import FreshAuthenticationRequired, InvalidPassword
from apps.accounts.models import User

HEADER = "X-Service-Act-Evidence"
LIFETIME = timedelta(minutes=5)
_SALT = "apps.accounts.act-evidence"


def _session_digest(session_key: str) -> str:
    return hashlib.sha256(f"act-evidence:{session_key}".encode()).hexdigest()[:32]


def issue(*, user: User, session_key: str, password: str) -> tuple[str, datetime]:
    """A token for acts within the next five minutes, after checking the password on the locked user row."""
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        if not password or not locked.check_password(password):
            raise InvalidPassword()
    token = signing.dumps({"u": str(user.pk), "s": _session_digest(session_key)}, salt=_SALT)
    return token, timezone.now() + LIFETIME


def verify(token: str | None, *, user: User, session_key: str | None) -> None:
    if not token or not session_key:
        raise FreshAuthenticationRequired()
    try:
        claims = signing.loads(token, salt=_SALT, max_age=LIFETIME)
    except signing.BadSignature:  # tampered, or expired (SignatureExpired is a BadSignature)
        raise FreshAuthenticationRequired() from None
    if not isinstance(claims, dict):
        raise FreshAuthenticationRequired()
    same_user = hmac.compare_digest(str(claims.get("u", "")), str(user.pk))
    same_session = hmac.compare_digest(str(claims.get("s", "")), _session_digest(session_key))
    if not (same_user and same_session):
        raise FreshAuthenticationRequired()


class RequireActEvidence(BasePermission):
    """Declared by act routes after the usual access check: a browser session with fresh evidence."""

    def has_permission(self, request, view) -> bool:
        credential = request.auth
        if credential is None or credential.is_machine:
            raise FreshAuthenticationRequired("Acts need a signed-in person's browser session and fresh evidence.")
        session = getattr(request._request, "session", None)
        verify(request.headers.get(HEADER), user=request.user, session_key=getattr(session, "session_key", None))
        return True


WITH_ACT_EVIDENCE = (*api_settings.DEFAULT_PERMISSION_CLASSES, RequireActEvidence)
