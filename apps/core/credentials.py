"""What authentication hands to the rest of a request: who the credential is and what it may reach."""

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.db import InterfaceError, OperationalError

from apps.core.errors import AuthUnavailable

API_KEY = "api_key"
OAUTH = "oauth"
SESSION = "session"


@dataclass(frozen=True)
class PrefetchedMemberships:
    """Memberships read in the credential's own statement (this request), for practice selection to use instead of
    querying again. `organization_id` is the question they answer: the memberships in that practice (the token's
    practice or the X-Organization-ID header's), or None for the person's first two (created_at, id) — enough to
    tell "exactly one" from "ambiguous". Organizations are loaded on them."""

    organization_id: UUID | None
    memberships: tuple


@dataclass(frozen=True)
class Credential:
    kind: str
    # None: not narrowed by scopes (API keys and sessions: the role alone decides).
    scopes: frozenset[str] | None = None
    # OAuth tokens name their practice; X-Organization-ID is then ignored.
    bound_organization_id: UUID | None = None
    # Identity of the rate-limit bucket this credential draws from (None: not limited here).
    bucket_id: str | None = None
    # OAuth: the connection (the practice-bound grant) the token belongs to.
    connection_id: UUID | None = None
    record: Any = field(default=None, compare=False, repr=False)
    # Set only in-process by the MCP server when an agency connection names a linked practice (apps.partners
    # .selectors.practice_credential): the membership the request acts with there, already re-read for this call.
    # The organization resolver returns it instead of choosing among the person's own memberships.
    acting_membership: Any = field(default=None, compare=False, repr=False)
    # Set by the API key and OAuth authenticators: the candidate memberships read with the credential.
    memberships: PrefetchedMemberships | None = field(default=None, compare=False, repr=False)
    # Set by the API key and OAuth authenticators: the credential bucket's answer (apps.core.limits.BucketVerdict),
    # taken in the same Redis round trip as the seen-bearer check and applied where API_CREDENTIAL_LIMIT is checked.
    bucket_verdict: Any = field(default=None, compare=False, repr=False)

    @property
    def is_machine(self) -> bool:
        return self.kind != SESSION


def connection_still_active(credential: Credential) -> bool:
    """Re-read whether an OAuth credential's connection is still connected (it may be revoked mid-request).
    The OAuth token record answers `connection_is_active()`; anything else counts as active."""
    check = getattr(credential.record, "connection_is_active", None)
    return bool(check()) if callable(check) else True


def signed_in_user(django_request):
    """The active person of the request's browser session (Django's auth middleware has read it), else None.
    A database outage while reading it is 503 AUTH_UNAVAILABLE, as for every credential."""
    try:
        user = getattr(django_request, "user", None)
        return user if user is not None and user.is_active and user.is_authenticated else None
    except (OperationalError, InterfaceError):
        raise AuthUnavailable() from None


# Set on a request while presented_credential() verifies it: the bearer is checked (and remembered) but draws nothing
# from its credential bucket, since the answer there is a refusal, not a served request.
VERIFY_ONLY_ATTR = "_svc_verify_credential_only"


def draws_from_bucket(request) -> bool:
    """Whether authenticating this request (DRF or Django) should take its credential bucket's token."""
    django_request = getattr(request, "_request", request)
    return not getattr(django_request, VERIFY_ONLY_ATTR, False)


def presented_credential(django_request) -> Credential | None:
    """The credential a plain Django request presents other than its session cookie (an API key or OAuth token, or
    the MCP server's in-process identity), verified by the API's own authenticators (REST_FRAMEWORK's list, minus
    the session one); None when it presents none. Raises what they raise: 401 for a bad bearer, 429 from the
    unseen-bearer screen, 503 AUTH_UNAVAILABLE."""
    from rest_framework.authentication import SessionAuthentication
    from rest_framework.request import Request
    from rest_framework.settings import api_settings

    request = Request(django_request)
    setattr(django_request, VERIFY_ONLY_ATTR, True)
    try:
        for authenticator_class in api_settings.DEFAULT_AUTHENTICATION_CLASSES:
            if issubclass(authenticator_class, SessionAuthentication):
                continue
            found = authenticator_class().authenticate(request)
            if found is not None:
                return found[1]
        return None
    finally:
        delattr(django_request, VERIFY_ONLY_ATTR)
