"""Bearer svc_oat_… → the consenting person, acting in the connection's practice, narrowed by the token's scopes.

Only hashes are stored (DOT's token_checksum). A token is refused (401, "refresh and retry": details.reason
"stale") when unknown, expired or of a disconnected connection; one bound to another audience (an MCP-only token is
not a REST credential) is a distinct 401 (details.reason "wrong_audience"), which a refresh does not cure. Membership
and role are re-read on every request: the token, its connection, its person and their membership in the token's
practice are one statement (apps.accounts.selectors.CredentialStatement), handed to the practice selection, so a
demoted or removed member loses access at once.
"""

import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from apps.accounts.authentication import OAUTH_ACCESS_PREFIX, bearer_token
from apps.accounts.selectors import CredentialStatement
from apps.core import limits
from apps.core.credentials import OAUTH, Credential, PrefetchedMemberships, draws_from_bucket
from apps.core.errors import REASON_STALE, REASON_WRONG_AUDIENCE, AuthUnavailable, NotAuthenticated, bearer_challenge
from apps.core.limits import BucketVerdict
from apps.core.rows import ModelColumns
from apps.oauth import connections
from apps.oauth.models import AccessToken, Connection

_TOKEN_STATEMENT = CredentialStatement(
    head=(ModelColumns(AccessToken, "t"), ModelColumns(Connection, "c")),
    source=f'"{AccessToken._meta.db_table}" t JOIN "{Connection._meta.db_table}" c ON c."id" = t."connection_id"',
    user_ref='t."user_id"',
    where='t."token_checksum" = %s AND c."revoked_at" IS NULL',
    organization_ref='t."organization_id"',
)


def rest_audiences() -> set[str]:
    return {settings.SVC_BASE_URL, settings.SVC_BASE_URL + "/"}


def token_checksum(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def access_token_for(raw: str) -> tuple[AccessToken, PrefetchedMemberships] | None:
    """The token of a live connection with this value (its user and connection loaded) and the person's membership in
    the token's practice, in one statement."""
    found = _TOKEN_STATEMENT.fetch([token_checksum(raw)])
    if found is None:
        return None
    (token, connection), user, candidates = found
    token.user, token.connection = user, connection
    return token, PrefetchedMemberships(token.organization_id, candidates)


def credential_for(
    token: AccessToken, *, memberships: PrefetchedMemberships | None = None, bucket_verdict: BucketVerdict | None = None
) -> Credential:
    return Credential(
        kind=OAUTH,
        scopes=frozenset(token.scope.split()),
        bound_organization_id=token.organization_id,
        bucket_id=f"connection:{token.connection_id}",
        connection_id=token.connection_id,
        record=token,
        memberships=memberships,
        bucket_verdict=bucket_verdict,
    )


@dataclass(frozen=True)
class Verified:
    token: AccessToken
    memberships: PrefetchedMemberships
    # The connection bucket's verdict when the check took its token (REST requests), else None.
    bucket_verdict: BucketVerdict | None


def verified(raw: str, *, audiences: set[str], request=None, take_bucket: bool = False) -> Verified:
    """The live token for this raw value, usable at one of `audiences` (a token without a resource serves all).
    With `request`, the bearer passes the unseen-bearer gate first (one Redis round trip for a known bearer, which
    with `take_bucket` also takes the connection bucket's token)."""
    digest = token_checksum(raw)
    gate = limits.bearer_gate(request, digest, take=take_bucket) if request is not None else None
    try:
        found = access_token_for(raw)
    except (OperationalError, InterfaceError):
        raise AuthUnavailable() from None
    token, memberships = found if found is not None else (None, None)
    if (
        token is None
        or not hmac.compare_digest(token.token_checksum, digest)
        or token.expires <= timezone.now()
        or not token.user.is_active
    ):
        if gate is not None:
            gate.forget()  # revoked or expired: no longer "seen"
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
    verdict = gate.resolved(f"connection:{token.connection_id}") if gate is not None else None
    return Verified(token, memberships, verdict)


def verify(raw: str, *, audiences: set[str], request=None) -> AccessToken:
    """The live token (see `verified`); the caller draws from the connection's bucket itself (the MCP server: one
    tool call, one request)."""
    return verified(raw, audiences=audiences, request=request).token


class OAuthTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        raw = bearer_token(request)
        if raw is None or not raw.startswith(OAUTH_ACCESS_PREFIX):
            return None
        found = verified(raw, audiences=rest_audiences(), request=request, take_bucket=draws_from_bucket(request))
        token = found.token
        connections.touch(token.connection_id, last_used_at=token.connection.last_used_at)
        return token.user, credential_for(token, memberships=found.memberships, bucket_verdict=found.bucket_verdict)

    def authenticate_header(self, request):
        return bearer_challenge(realm="api")
