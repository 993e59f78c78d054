"""Connecting the practice's payment account (Stripe Connect OAuth).

POST /settings/payments/connect makes a single-use state (32 random bytes; only its SHA-256 is stored, valid 10
minutes, bound to the practice and the person) and answers the platform's authorize URL. The platform sends the
person back to GET /webhooks/payments-connect/oauth/callback?code&state: the state is claimed in one UPDATE (unused and
unexpired), so a replay, an unknown state or an expired one is refused and changes nothing; a browser signed in as
someone else than the person who started is refused too (another practice's state). Then the code is exchanged
(POST {api}/oauth/token with the platform's secret key) and the connected account id stored for the practice. An
account already connected to another practice is refused. In the sandbox the authorize URL is the callback itself with
a sandbox code (nothing to visit)."""

import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.deposits import provider
from apps.deposits.errors import ConnectStateInvalid, PaymentsNotConfigured
from apps.deposits.models import AccountStatus, ConnectState, PaymentAccount, Subscription

STATE_TTL = timedelta(minutes=10)
CALLBACK_PATH = "/webhooks/payments-connect/oauth/callback"


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def redirect_uri() -> str:
    return f"{settings.SVC_BASE_URL}{CALLBACK_PATH}"


def connect_start(*, organization, user) -> str:
    """The authorize URL for this practice, with a new single-use state."""
    if not settings.SVC_PAYMENTS_CLIENT_ID:
        raise PaymentsNotConfigured()
    state = secrets.token_urlsafe(32)
    ConnectState.objects.create(
        organization=organization, user=user, state_hash=_digest(state), expires_at=timezone.now() + STATE_TTL
    )
    if settings.SVC_PAYMENTS_TRANSPORT == "sandbox":
        # No platform to visit: the "authorize" step returns straight to our callback with a sandbox code.
        return f"{redirect_uri()}?{urlencode({'code': 'ac_sandbox_' + secrets.token_hex(8), 'state': state})}"
    query = urlencode(
        {
            "response_type": "code",
            "client_id": settings.SVC_PAYMENTS_CLIENT_ID,
            "scope": "read_write",
            "state": state,
            "redirect_uri": redirect_uri(),
        }
    )
    return f"{settings.SVC_PAYMENTS_CONNECT_URL}/oauth/authorize?{query}"


def claim_state(state: str, *, signed_in_user_id=None) -> ConnectState:
    """Use the state once. Unknown, used, expired, or started by another person than the signed-in one: 400."""
    if not isinstance(state, str) or not state or len(state) > 200:
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
            raise ConnectStateInvalid()  # refused without spending it: it stays its owner's
        found.used_at = timezone.now()
        found.save(update_fields=["used_at", "updated_at"])
    return found


def connect_finish(*, claimed: ConnectState, code: str) -> PaymentAccount:
    if not isinstance(code, str) or not code or len(code) > 500:
        raise ConnectStateInvalid("The platform's answer carries no authorization code.")
    account_id = provider.transport().exchange_code(code)
    with transaction.atomic():
        taken = (
            PaymentAccount.objects.unscoped()
            .filter(account_id=account_id, status=AccountStatus.CONNECTED)
            .exclude(organization_id=claimed.organization_id)
            .exists()
        )
        if taken:
            raise ConnectStateInvalid("This payment account is connected to another practice.", code="ACCOUNT_IN_USE")
        now = timezone.now()
        account, _ = PaymentAccount.objects.for_org(claimed.organization_id).update_or_create(
            organization_id=claimed.organization_id,
            defaults={
                "account_id": account_id,
                "status": AccountStatus.CONNECTED,
                "connected_at": now,
                "disconnected_at": None,
                "connected_by_id": claimed.user_id,
                "charges_enabled": False,
                "payouts_enabled": False,
                "provider_updated_at": 0,  # account.updated events are ordered afresh for this connection
            },
        )
    return account


def payment_settings(*, organization) -> dict:
    account = PaymentAccount.objects.for_org(organization).first()
    subscription = Subscription.objects.for_org(organization).first()
    return {
        "connected": account is not None and account.status == AccountStatus.CONNECTED,
        "account_status": account.status if account else None,
        "charges_enabled": bool(account and account.charges_enabled),
        "payouts_enabled": bool(account and account.payouts_enabled),
        "connected_at": account.connected_at if account else None,
        "disconnected_at": account.disconnected_at if account else None,
        "subscription": {
            "plan": subscription.plan,
            "status": subscription.status,
            "current_period_end": subscription.current_period_end,
        }
        if subscription and subscription.status
        else None,
    }
