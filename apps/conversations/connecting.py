"""Connecting a short-video business account (TikTok Business Messaging OAuth) and keeping its token fresh.

POST /settings/channel-connections/short-video/connect makes a single-use state (32 random bytes; only its SHA-256
is stored, valid 10 minutes, bound to the practice and the member) and answers the platform's authorize URL. The
platform sends the person back to GET /webhooks/short-video/oauth/callback?code&state: the state is claimed once
(unused and unexpired, under a row lock), so a replay, an unknown state or an expired one is refused and changes
nothing; a browser signed in as someone else than the member who started is refused too, without spending the state.
Then the code is exchanged at the platform's token endpoint and the business account (its open id) becomes the
practice's short_video connection, the tokens encrypted at rest. An account another practice has connected is
refused. In the sandbox the authorize URL is the callback itself with a sandbox code (nothing to visit).

The access token lives a day: before a send, a token due within five minutes is refreshed (the refresh token
rotates, so the connection row is locked while the platform is asked and the new pair is stored)."""

import hashlib
import secrets
import time
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.conversations import short_video
from apps.conversations.errors import ConnectStateInvalid, ShortVideoNotConfigured
from apps.conversations.models import OWNING_STATUSES, ChannelConnection, ConnectState, Health, Kind, Status
from apps.conversations.providers import ProviderUnreachable
from apps.conversations.senders import SendFailed
from apps.conversations.services import _save, _store_credentials, connection_credentials, new_routing_token

STATE_TTL = timedelta(minutes=10)
CALLBACK_PATH = "/webhooks/short-video/oauth/callback"
REFRESH_MARGIN_SECONDS = 300
MAX_STATE_CHARS = 200
MAX_CODE_CHARS = 1000


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def redirect_uri() -> str:
    return f"{settings.SVC_BASE_URL}{CALLBACK_PATH}"


def connect_start(*, organization, user, name: str) -> str:
    """The platform's authorize URL for this practice, with a new single-use state."""
    if not settings.SVC_SHORT_VIDEO_CLIENT_KEY:
        raise ShortVideoNotConfigured()
    state = secrets.token_urlsafe(32)
    ConnectState.objects.create(
        organization=organization,
        kind=Kind.SHORT_VIDEO,
        user=user,
        name=name,
        state_hash=_digest(state),
        expires_at=timezone.now() + STATE_TTL,
    )
    if settings.SVC_OUTBOUND_TRANSPORT == "sandbox":
        # No platform to visit: the "authorize" step returns straight to our callback with a sandbox code.
        return f"{redirect_uri()}?{urlencode({'code': short_video.sandbox_code(), 'state': state})}"
    return short_video.authorize_url(state=state, redirect_uri=redirect_uri())


def claim_state(state, *, signed_in_user_id=None) -> ConnectState:
    """Use the state once. Unknown, used, expired, or started by another person than the signed-in one: 400 (the
    last without spending it: it stays its owner's)."""
    if not isinstance(state, str) or not state or len(state) > MAX_STATE_CHARS:
        raise ConnectStateInvalid()
    with transaction.atomic():
        found = (
            ConnectState.objects.unscoped()
            .select_for_update()
            .filter(state_hash=_digest(state), used_at__isnull=True, expires_at__gt=timezone.now())
            .first()
        )
        if found is None:
            raise ConnectStateInvalid()
        if signed_in_user_id is not None and found.user_id != signed_in_user_id:
            raise ConnectStateInvalid()
        found.used_at = timezone.now()
        found.save(update_fields=["used_at", "updated_at"])
    return found


def _credentials(grant: short_video.Grant) -> dict[str, str]:
    now = int(time.time())
    return {
        "access_token": grant.access_token,
        "refresh_token": grant.refresh_token,
        "access_expires_at": str(now + max(grant.expires_in, 0)),
        "refresh_expires_at": str(now + max(grant.refresh_expires_in, 0)),
        "scope": grant.scope,
    }


def connect_finish(*, claimed: ConnectState, code) -> ChannelConnection:
    """Exchange the code (no transaction open while the platform is asked) and connect the account for the claimed
    state's practice: a new pending connection, or the practice's earlier connection of that account with its
    credentials replaced (a disconnected or failing one pending again). Raises ConnectStateInvalid,
    short_video.ProviderRefused or ProviderUnreachable."""
    if not isinstance(code, str) or not code or len(code) > MAX_CODE_CHARS:
        raise ConnectStateInvalid("The platform's answer carries no authorization code.")
    grant = short_video.exchange_code(code, redirect_uri=redirect_uri())
    with transaction.atomic():
        same_account = ChannelConnection.unscoped_objects.select_for_update().filter(
            kind=Kind.SHORT_VIDEO, address=grant.open_id
        )
        if same_account.filter(status__in=OWNING_STATUSES).exclude(organization_id=claimed.organization_id).exists():
            raise ConnectStateInvalid(
                "This short-video account is connected to another practice; disconnect it there first.",
                code="ACCOUNT_IN_USE",
            )
        ours = list(same_account.filter(organization_id=claimed.organization_id).order_by("-updated_at", "id"))
        connection = next((c for c in ours if c.status in OWNING_STATUSES), None) or (ours[0] if ours else None)
        if connection is None:
            connection = ChannelConnection(
                organization_id=claimed.organization_id,
                kind=Kind.SHORT_VIDEO,
                name=claimed.name,
                address=grant.open_id,
                routing_token=new_routing_token(),
            )
        elif connection.status in (Status.DISCONNECTED, Status.FAILING):
            connection.status, connection.disconnected_at = Status.PENDING, None
            connection.health, connection.health_reason = Health.UNKNOWN, ""
        _store_credentials(connection, _credentials(grant))
        return _save(connection)


def _due(credentials: dict) -> bool:
    try:
        expires_at = int(credentials.get("access_expires_at") or 0)
    except ValueError:
        return True
    return expires_at - time.time() < REFRESH_MARGIN_SECONDS


def credentials_for_sending(connection: ChannelConnection, *, refresh: bool = True) -> dict:
    """The connection's credentials for a provider call; a short-video token due within five minutes is refreshed
    first (not in the sandbox). Raises SendFailed: retryable when the platform did not answer, with
    credentials_refused when it refused the refresh token (the practice connects again)."""
    credentials = connection_credentials(connection)
    if connection.kind != Kind.SHORT_VIDEO or not refresh or not _due(credentials):
        return credentials
    with transaction.atomic():
        # Refresh tokens rotate: one refresh at a time per connection; a second sender waits, then finds it fresh.
        locked = ChannelConnection.objects.for_org(connection.organization_id).select_for_update().get(pk=connection.pk)
        credentials = connection_credentials(locked)
        if not _due(credentials):
            return credentials
        try:
            grant = short_video.refresh(credentials.get("refresh_token", ""), open_id=locked.address)
        except ProviderUnreachable:
            raise SendFailed("TOKEN_REFRESH_UNAVAILABLE", retryable=True) from None
        except short_video.ProviderRefused:
            raise SendFailed("TOKEN_REFRESH_REFUSED", refused=True) from None
        credentials = {**credentials, **_credentials(grant)}
        _store_credentials(locked, credentials)
        locked.save(update_fields=["credentials_encrypted", "credential_keys", "updated_at"])
        connection.credentials_encrypted = locked.credentials_encrypted
    return credentials
