"""Credentials → (user, Credential). API keys by digest lookup; browser sessions with CSRF.

A database outage while verifying answers 503 AUTH_UNAVAILABLE (retry the same request), never 401.
"""

import hashlib
import hmac

from django.db import InterfaceError, OperationalError
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header

from apps.accounts import selectors
from apps.accounts.services import sessions as user_sessions
from apps.core import limits
from apps.core.credentials import API_KEY, SESSION, Credential, draws_from_bucket, signed_in_user
from apps.core.errors import REASON_MALFORMED, REASON_STALE, AuthUnavailable, NotAuthenticated, bearer_challenge

OAUTH_ACCESS_PREFIX = "svc_oat_"


def api_key_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bearer_token(request) -> str | None:
    parts = get_authorization_header(request).split()
    if not parts or parts[0].lower() != b"bearer":
        return None
    if len(parts) != 2:
        raise NotAuthenticated("Authorization must be 'Bearer <credential>'.", reason=REASON_MALFORMED)
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError:
        raise NotAuthenticated("The bearer credential is malformed.", reason=REASON_MALFORMED) from None


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        token = bearer_token(request)
        if token is None or token.startswith(OAUTH_ACCESS_PREFIX):
            return None
        digest = api_key_digest(token)
        # 429 for an unseen bearer from a busy address block; a known one takes its bucket's token in the same trip.
        gate = limits.bearer_gate(request, digest, take=draws_from_bucket(request))
        try:
            found = selectors.api_key_for_digest(digest, organization_header=request.headers.get("X-Organization-ID"))
        except (OperationalError, InterfaceError):
            raise AuthUnavailable() from None
        key, memberships = found if found is not None else (None, None)
        if key is None or not hmac.compare_digest(key.key_hash, digest) or not key.user.is_active:
            gate.forget()
            raise NotAuthenticated("The API key is invalid, revoked or expired.", reason=REASON_STALE)
        bucket_id = f"key:{key.id}"
        verdict = gate.resolved(bucket_id)
        selectors.api_key_touch(key)  # at most once a minute
        credential = Credential(
            kind=API_KEY, bucket_id=bucket_id, record=key, memberships=memberships, bucket_verdict=verdict
        )
        return key.user, credential

    def authenticate_header(self, request):
        return bearer_challenge(realm="api")


class SessionCookieAuthentication(SessionAuthentication):
    """Django's session cookie, CSRF enforced on unsafe methods (DRF's SessionAuthentication); each use touches the
    session's record (apps.accounts.services.sessions) at most once a minute."""

    def authenticate(self, request):
        user = signed_in_user(request._request)
        if user is None:
            return None
        self.enforce_csrf(request)
        try:
            user_sessions.touch(django_request=request._request, user=user)  # last_seen_at, at most once a minute
        except (OperationalError, InterfaceError):
            raise AuthUnavailable() from None
        return user, Credential(kind=SESSION, bucket_id=None)
