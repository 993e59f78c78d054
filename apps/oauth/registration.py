"""Dynamic client registration policy (RFC 7591, MCP rule 3).

Every registered client is public (token_endpoint_auth_method none, also when it asked for a secret-based method
the metadata advertises for back-office apps) with PKCE S256, the authorization_code and
refresh_token grants and the scopes read, write and offline_access. client_name is trimmed to 80 characters;
logos, URIs and contacts are dropped. One to three redirect URIs, each exactly on the configured allow-list of
AI-assistant callbacks or a loopback address (localhost, 127.0.0.1, [::1]; any port and path), else
invalid_redirect_uri. A registration nobody approves is removed after 24 hours (apps.oauth.tasks).
"""

import ipaddress
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import AbstractApplication, get_application_model
from oauth2_provider.settings import oauth2_settings

from apps.oauth.models import ClientProfile

DCR_SCOPES = frozenset({"read", "write", "offline_access"})
DCR_SCOPE_TEXT = "read write offline_access"
NAME_MAX = 80
MAX_REDIRECT_URIS = 3
UNAPPROVED_LIFETIME = timedelta(hours=24)


class RegistrationError(Exception):
    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error, self.description = error, description


def is_loopback(uri: str) -> bool:
    """http(s)://localhost, 127.0.0.1 or [::1], any port and path (RFC 8252 native-app callbacks)."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 — raises ValueError on a malformed port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.username or parts.password or parts.fragment:
        return False
    host = (parts.hostname or "").lower()
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def redirect_uri_acceptable(uri: str) -> bool:
    return uri in settings.SVC_OAUTH_REDIRECT_ALLOW_LIST or is_loopback(uri)


def _redirect_uris(metadata: dict) -> list[str]:
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        raise RegistrationError("invalid_redirect_uri", "redirect_uris must be an array of strings.")
    if not 1 <= len(uris) <= MAX_REDIRECT_URIS:
        raise RegistrationError("invalid_redirect_uri", "Register one to three redirect URIs.")
    for uri in uris:
        if any(ch.isspace() for ch in uri) or not redirect_uri_acceptable(uri):
            raise RegistrationError(
                "invalid_redirect_uri",
                f"{uri!r} is neither an allowed assistant callback nor a loopback address.",
            )
    return list(dict.fromkeys(uris))


def _client_name(metadata: dict) -> str:
    name = metadata.get("client_name", "")
    if not isinstance(name, str):
        raise RegistrationError("invalid_client_metadata", "client_name must be a string.")
    return " ".join(name.split())[:NAME_MAX]


def _check_requested(metadata: dict) -> None:
    """Fields a client may send but we decide: a request for something else is refused, not silently widened."""
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not set(grant_types) <= {"authorization_code", "refresh_token"}:
        raise RegistrationError("invalid_client_metadata", "Only authorization_code and refresh_token are offered.")
    response_types = metadata.get("response_types", ["code"])
    if not isinstance(response_types, list) or not set(response_types) <= {"code"}:
        raise RegistrationError("invalid_client_metadata", "Only the code response type is offered.")
    # The AS metadata advertises secret-based methods too: back-office (confidential) apps use them at the token,
    # revoke and introspect endpoints. A registration asking for one is accepted but registered public, answered
    # with token_endpoint_auth_method "none" (RFC 7591 §3.2.1 lets the server substitute; clients read it back),
    # so every advertised method is accepted here; anything else (private_key_jwt, …) is refused.
    method = metadata.get("token_endpoint_auth_method", "none")
    if method not in oauth2_settings.OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED:
        raise RegistrationError(
            "invalid_client_metadata", "Registered clients are public: token_endpoint_auth_method must be none."
        )
    scope = metadata.get("scope")
    if scope is not None and (not isinstance(scope, str) or not set(scope.split()) <= DCR_SCOPES):
        raise RegistrationError("invalid_client_metadata", f"scope may only name {DCR_SCOPE_TEXT}.")


@dataclass(frozen=True)
class Registered:
    application: AbstractApplication

    def body(self) -> dict:
        app = self.application
        body = {
            "client_id": app.client_id,
            "client_id_issued_at": int(app.created.timestamp()),
            "redirect_uris": app.redirect_uris.split(),
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": DCR_SCOPE_TEXT,
        }
        if app.name:
            body["client_name"] = app.name
        return body


def register(metadata) -> Registered:
    """Shape and store a dynamically registered client. Raises RegistrationError (RFC 7591 error names)."""
    if not isinstance(metadata, dict):
        raise RegistrationError("invalid_client_metadata", "The body must be a JSON object.")
    uris = _redirect_uris(metadata)
    _check_requested(metadata)
    Application = get_application_model()
    application = Application(
        name=_client_name(metadata),
        client_type=AbstractApplication.CLIENT_PUBLIC,
        authorization_grant_type=AbstractApplication.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(uris),
        registration_source=AbstractApplication.RegistrationSource.DCR,
        skip_authorization=False,
    )
    with transaction.atomic():
        application.save()
        ClientProfile.objects.create(application=application)
    return Registered(application)


def expired_unapproved(application, now=None) -> bool:
    """A dynamically registered client nobody approved within 24 hours: unusable (invalid_client)."""
    if application.registration_source != AbstractApplication.RegistrationSource.DCR:
        return False
    now = now or timezone.now()
    if application.created > now - UNAPPROVED_LIFETIME:
        return False
    return not ClientProfile.objects.filter(application=application, approved_at__isnull=False).exists()


def purge_unapproved(now=None) -> int:
    """Delete dynamically registered clients never approved, 24 hours after registration. Returns how many."""
    now = now or timezone.now()
    Application = get_application_model()
    stale = Application.objects.filter(
        registration_source=AbstractApplication.RegistrationSource.DCR,
        created__lte=now - UNAPPROVED_LIFETIME,
    ).exclude(profile__approved_at__isnull=False)
    _, per_model = stale.delete()
    return per_model.get(Application._meta.label, 0)
