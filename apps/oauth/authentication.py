"""Bearer svc_oat_… → the consenting person, acting in the connection's practice, narrowed by the token's scopes.

Only hashes are stored (DOT's token_checksum). A token is refused (401, "refresh and retry": details.reason
"stale") when unknown, expired or of a disconnected connection; one bound to another audience (an MCP-only token is
not a REST credential) is a distinct 401 (details.reason "wrong_audience"), which a refresh does not cure. Membership
and role are re-read on every request by the practice selection, so a demoted or removed member loses access at once.
"""

import hashlib

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from apps.accounts.authentication import OAUTH_ACCESS_PREFIX, bearer_token
from apps.core import limits
from apps.core.credentials import OAUTH, Credential
from apps.core.errors import REASON_STALE, REASON_WRONG_AUDIENCE, AuthUnavailable, NotAuthenticated, bearer_challenge
from apps.oauth import connections
from apps.oauth.models import AccessToken


def rest_audiences() -> set[str]:
    return {settings.SVC_BASE_URL, settings.SVC_BASE_URL + "/"}


def access_token_for(raw: str) -> AccessToken | None:
    checksum = hashlib.sha256(raw.encode()).hexdigest()
    return (
        AccessToken.objects.select_related("user", "connection")
        .filter(token_checksum=checksum, connection__isnull=False, connection__revoked_at__isnull=True)
        .first()
    )


def credential_for(token: AccessToken) -> Credential:
    return Credential(
        kind=OAUTH,
        scopes=frozenset(token.scope.split()),
        bound_organization_id=token.organization_id,
        bucket_id=f"connection:{token.connection_id}",
        connection_id=token.connection_id,
        record=token,
    )


def verify(raw: str, *, audiences: set[str], request=None) -> AccessToken:
    """The live token for this raw value, usable at one of `audiences` (a token without a resource serves all)."""
    digest = hashlib.sha256(raw.encode()).hexdigest()
    if request is not None:
        limits.screen_unseen_bearer(request, digest)
    try:
        token = access_token_for(raw)
    except (OperationalError, InterfaceError):
        raise AuthUnavailable() from None
    if token is None or token.expires <= timezone.now() or not token.user.is_active:
        raise NotAuthenticated(
            "The access token is invalid, expired or revoked; refresh it and retry.", reason=REASON_STALE
        )
    if token.resource and not set(token.resource) & audiences:
        # Not "refresh and retry": a refreshed token keeps its audience (RFC 8707), so say which one it has.
        raise NotAuthenticated(
            f"This access token was issued for another resource ({', '.join(token.resource)}), not for "
            f"{min(audiences)}; a refreshed token keeps that audience: authorize again for this resource.",
            reason=REASON_WRONG_AUDIENCE,
            details={"tokenResource": list(token.resource)},
        )
    limits.remember_bearer(digest)
    return token


class OAuthTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        raw = bearer_token(request)
        if raw is None or not raw.startswith(OAUTH_ACCESS_PREFIX):
            return None
        token = verify(raw, audiences=rest_audiences(), request=request)
        connections.touch(token.connection_id)
        return token.user, credential_for(token)

    def authenticate_header(self, request):
        return bearer_challenge(realm="api")
