"""Minting OAuth tokens for resource-side tests without the browser flow (the protocol tests cover that)."""

import secrets
from datetime import timedelta

from django.utils import timezone
from oauth2_provider.models import Application, set_token_value

from apps.oauth import connections
from apps.oauth.models import AccessToken


def application(name: str = "Test app", *, dynamic: bool = False) -> Application:
    return Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
        registration_source=Application.RegistrationSource.DCR if dynamic else Application.RegistrationSource.MANUAL,
    )


def mint(member, scopes: str = "read write", *, app=None, resource=None, expires_in: int = 3600):
    """(raw token, AccessToken) of a fresh connection of `member` in their practice."""
    app = app or application()
    connection = connections.connect(
        user=member.user, application=app, organization=member.organization, scopes=scopes.split()
    )
    raw = "svc_oat_" + secrets.token_urlsafe(32)
    token = AccessToken(
        user=member.user,
        application=app,
        organization=member.organization,
        connection=connection,
        scope=scopes,
        expires=timezone.now() + timedelta(seconds=expires_in),
        resource=resource or [],
    )
    set_token_value(token, raw)
    token.save()
    return raw, token


def bearer(raw: str, **headers):
    from django.test import Client

    return Client(headers={"Authorization": f"Bearer {raw}", **headers})
