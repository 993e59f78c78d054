"""The request validator: DOT's, carrying the practice and the connection from consent to every token.

- consent: the view passes `organization_id` in the oauthlib credentials; once oauthlib has validated the whole
  request, `_create_authorization_code` re-reads the consenting person's role (owner or manager only), makes the
  connection (apps.oauth.connections.connect) and stores both on the Grant;
- code → tokens: `validate_code` copies them (and the grant) to the request, `_create_access_token`/
  `_create_refresh_token` save them on the new rows; refresh copies them from the presented refresh token;
- a code is single use: once exchanged it is marked, not deleted, and a replay is invalid_grant and revokes every
  token descending from it (RFC 6749 §4.1.2), refreshed ones included;
- a disconnected connection (or a person no longer in the practice) cannot exchange a code or refresh: invalid_grant;
- a refresh token lives REFRESH_TOKEN_EXPIRE_SECONDS (30 days) from its own issue, whatever its access token does
  (DOT itself only counts from the access token's expiry, an hour later); each rotation issues a fresh 30 days;
- `save_bearer_token` drops the refresh token without offline_access and adds the practice fields to the response;
- dynamically registered clients may only ask for read, write and offline_access; one never approved is unusable
  24 hours after registration (the beat task deletes it too);
- RFC 8707 resource: only this deployment's own URLs (the MCP server, the API) are accepted as an audience.
"""

import hashlib

from django.conf import settings
from django.utils import timezone
from oauth2_provider.models import AbstractApplication, refresh_token_expire_timedelta
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from apps.accounts import roles
from apps.accounts.models import Membership, Organization
from apps.oauth import registration
from apps.oauth.connections import connect, disconnect, revoke_issued_from_code
from apps.oauth.models import AccessToken, Connection, Grant, RefreshToken

CONSENTING_ROLES = frozenset({roles.OWNER, roles.MANAGER})


def consenting_membership(user, organization_id) -> Membership | None:
    """The person's membership in that practice when their current role may authorize an app, else None."""
    if user is None or not getattr(user, "is_authenticated", False) or not organization_id:
        return None
    return (
        Membership.objects.unscoped()
        .select_related("organization")
        .filter(user=user, organization_id=organization_id, role__in=CONSENTING_ROLES)
        .first()
    )


def own_resource(uri: str) -> bool:
    """RFC 8707 audiences we issue tokens for: the MCP server or this deployment's API."""
    base = settings.SVC_BASE_URL.rstrip("/")
    return uri.rstrip("/") == settings.SVC_MCP_URL.rstrip("/") or uri == base or uri.startswith(base + "/")


def _connection_alive(connection_id, user_id, organization_id) -> bool:
    if connection_id is None:
        return False
    return (
        Connection.objects.unscoped()
        .filter(pk=connection_id, revoked_at__isnull=True, user_id=user_id, organization_id=organization_id)
        .exists()
        and Membership.objects.unscoped().filter(organization_id=organization_id, user_id=user_id).exists()
    )


def refresh_token_expired(token: RefreshToken) -> bool:
    """Spec: a refresh token lives 30 days from its own issue; the deadline itself counts as expired."""
    lifetime = refresh_token_expire_timedelta()
    return lifetime is not None and token.created + lifetime <= timezone.now()


class CodeExchangedMeanwhile(errors.InvalidGrantError):
    """invalid_grant raised after the tokens were made, past oauthlib's error handling, which would add the JSON
    headers: it carries them itself (DOT turns it into the response as is)."""

    description = "The authorization code was used by another request; every token it issued is revoked."

    @property
    def headers(self):
        return {"Content-Type": "application/json", "Cache-Control": "no-store", "Pragma": "no-cache"}


class PracticeValidator(OAuth2Validator):
    # --- clients ----------------------------------------------------------------------------------------------
    def _load_application(self, client_id, request):
        application = super()._load_application(client_id, request)
        if application is not None and registration.expired_unapproved(application):
            request.client = None
            return None
        return application

    def validate_grant_type(self, client_id, grant_type, client, request, *args, **kwargs):
        # Only the code flow and its refresh: no client_credentials, password or implicit, whatever a client says.
        if grant_type not in ("authorization_code", "refresh_token"):
            return False
        return super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)

    def validate_response_type(self, client_id, response_type, client, request, *args, **kwargs):
        return response_type == "code" and client.allows_grant_type(AbstractApplication.GRANT_AUTHORIZATION_CODE)

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        dcr = client is not None and client.registration_source == AbstractApplication.RegistrationSource.DCR
        if dcr and not set(scopes) <= registration.DCR_SCOPES:
            return False
        return super().validate_scopes(client_id, scopes, client, request, *args, **kwargs)

    # --- RFC 8707 -----------------------------------------------------------------------------------------------
    def _validate_resource_uris(self, request, resources):
        super()._validate_resource_uris(request, resources)
        for resource in resources:
            if not own_resource(resource):
                raise errors.CustomOAuth2Error(
                    error="invalid_target",
                    description=f"The resource '{resource}' is not served by this authorization server.",
                    request=request,
                )

    # --- consent → code ---------------------------------------------------------------------------------------
    def _create_authorization_code(self, request, code, expires=None):
        membership = consenting_membership(request.user, getattr(request, "organization_id", None))
        if membership is None:
            raise errors.AccessDeniedError(
                description="Only owners and managers of the chosen practice can connect an app.", request=request
            )
        connection = connect(
            user=request.user,
            application=request.client,
            organization=membership.organization,
            scopes=list(request.scopes),
        )
        grant = super()._create_authorization_code(request, code, expires)
        grant.organization_id, grant.connection_id = membership.organization_id, connection.pk
        grant.save(update_fields=["organization", "connection"])
        return grant

    # --- code / refresh → tokens ------------------------------------------------------------------------------
    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        grant = (
            Grant.objects.filter(code=code, application=client)
            .values("pk", "organization_id", "connection_id", "exchanged_at")
            .first()
        )
        if grant is not None and grant["exchanged_at"] is not None:
            # Used before, however long ago: the code leaked, so what it already bought stops working too.
            revoke_issued_from_code(grant["pk"])
            return False
        if not super().validate_code(client_id, code, client, request, *args, **kwargs):
            return False
        if grant is None or not _connection_alive(grant["connection_id"], request.user.pk, grant["organization_id"]):
            return False
        request.organization_id, request.connection_id = grant["organization_id"], grant["connection_id"]
        request.grant_id = grant["pk"]
        return True

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        # Marked, not deleted (validate_code finds replays). The conditional update settles a race: when another
        # request exchanged the same code meanwhile, both answers are replays and every token of the code goes.
        exchanged = Grant.objects.filter(code=code, application=request.client, exchanged_at__isnull=True).update(
            exchanged_at=timezone.now()
        )
        if not exchanged:
            revoke_issued_from_code(getattr(request, "grant_id", None))
            raise CodeExchangedMeanwhile(request=request)

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        token = request.refresh_token_instance
        if refresh_token_expired(token):
            return False
        if not _connection_alive(token.connection_id, token.user_id, token.organization_id):
            return False
        request.organization_id, request.connection_id = token.organization_id, token.connection_id
        request.grant_id = token.grant_id  # the rotated tokens still descend from the original code
        return True

    def _bind(self, row, request):
        row.organization_id = getattr(request, "organization_id", None)
        row.connection_id = getattr(request, "connection_id", None)
        row.grant_id = getattr(request, "grant_id", None)
        row.save(update_fields=["organization", "connection", "grant"])
        return row

    def _create_access_token(self, expires, request, token, source_refresh_token=None):
        return self._bind(super()._create_access_token(expires, request, token, source_refresh_token), request)

    def _create_refresh_token(self, request, refresh_token_code, access_token, previous_refresh_token):
        return self._bind(
            super()._create_refresh_token(request, refresh_token_code, access_token, previous_refresh_token), request
        )

    def save_bearer_token(self, token, request, *args, **kwargs):
        if "offline_access" not in (request.scopes or []):
            token.pop("refresh_token", None)
        result = super().save_bearer_token(token, request, *args, **kwargs)
        organization = Organization.objects.filter(pk=getattr(request, "organization_id", None)).first()
        if organization is not None:
            if request.grant_type == "authorization_code":
                token["api_base_url"] = settings.SVC_BASE_URL
                token["organization_id"] = str(organization.pk)
                token["organization_name"] = organization.name
            token["organization_country"] = organization.country
        return result

    # --- revocation = disconnect (spec: Authentication rule 10) --------------------------------------------------
    def revoke_token(self, token, token_type_hint, request, *args, **kwargs):
        application_pk = getattr(request.client, "pk", None)
        connection_id = None
        if application_pk is not None:
            checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
            for model in (AccessToken, RefreshToken):
                connection_id = (
                    model.objects.filter(token_checksum=checksum, application_id=application_pk)
                    .values_list("connection_id", flat=True)
                    .first()
                )
                if connection_id:
                    break
        super().revoke_token(token, token_type_hint, request, *args, **kwargs)
        connection = Connection.objects.unscoped().filter(pk=connection_id).first() if connection_id else None
        if connection is not None:
            disconnect(connection)
