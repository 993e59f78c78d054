"""Two-factor lifecycle: TOTP authenticators (django-otp's TOTP arithmetic, keys encrypted at rest) and one-time
backup codes (keyed digests only).

Every guessing surface is bounded twice: by the token buckets the views declare (per person and per address) and
by counters kept here in the database:
- a pending setup expires after ten minutes and is cancelled by its fifth wrong code;
- replacing an active authenticator needs its current code; five wrong ones pause replacement for 15 minutes;
- a sign-in's second step is used up by five wrong codes; ten consecutive wrong codes (across sign-ins) lock the
  second step for 15 minutes.
Counters are written in their own committed transaction before the refusal is raised, so a refusal never rolls
its own count back. Password confirmations are checked on the locked user row in the transaction that changes it.
"""

import base64
import hashlib
import hmac
import math
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote, urlencode

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_otp.oath import TOTP

from apps.accounts.errors import (
    InvalidPassword,
    InvalidTwoFactorCode,
    TwoFactorChallengeExpired,
    TwoFactorNotEnabled,
    TwoFactorSetupNotFound,
)
from apps.accounts.models import BackupCode, SecondFactorGuard, TotpDevice, User
from apps.core import crypto
from apps.core.errors import RateLimited, ValidationFailed

SETUP_LIFETIME = timedelta(minutes=10)
SETUP_MAX_FAILURES = 5
REPLACEMENT_MAX_FAILURES = 5
REPLACEMENT_PAUSE = timedelta(minutes=15)
CHALLENGE_LIFETIME = timedelta(minutes=10)
CHALLENGE_MAX_FAILURES = 5
SIGN_IN_MAX_FAILURES = 10
SIGN_IN_LOCK = timedelta(minutes=15)
BACKUP_CODE_COUNT = 10
_BACKUP_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: codes are typed from paper
CHALLENGE_SESSION_KEY = "two_factor_challenge"


# --- codes ----------------------------------------------------------------------------------------------------


def _totp(device: TotpDevice) -> TOTP:
    totp = TOTP(bytes.fromhex(crypto.decrypt(device.key_encrypted)), device.step, 0, device.digits, device.drift)
    totp.time = time.time()
    return totp


def check_totp(device: TotpDevice, code: str) -> bool:
    """A six-digit code of this authenticator, not used before (time steps only move forward). Saves on success."""
    code = (code or "").strip().replace(" ", "")
    if not (code.isascii() and code.isdigit() and len(code) == device.digits):
        return False
    totp = _totp(device)
    if not totp.verify(int(code), device.tolerance, device.last_t + 1):
        return False
    device.last_t, device.drift = totp.t(), totp.drift
    TotpDevice.objects.filter(pk=device.pk).update(last_t=device.last_t, drift=device.drift)
    return True


def _backup_digest(code: str) -> str:
    normalized = "".join(code.lower().split()).replace("-", "")
    key = hashlib.sha256(b"backup-codes:" + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, normalized.encode(), hashlib.sha256).hexdigest()


def use_backup_code(*, user: User, code: str) -> bool:
    """Spend one unused backup code of this person. Returns whether it was valid."""
    if not code or len(code) > 64:
        return False
    digest = _backup_digest(code)
    candidate = BackupCode.objects.filter(user=user, digest=digest, used_at__isnull=True).first()
    if candidate is None or not hmac.compare_digest(candidate.digest, digest):
        return False
    # Conditional: two requests racing with the same code cannot both spend it.
    return bool(BackupCode.objects.filter(pk=candidate.pk, used_at__isnull=True).update(used_at=timezone.now()))


def _new_backup_codes(user: User) -> list[str]:
    codes = ["".join(secrets.choice(_BACKUP_ALPHABET) for _ in range(10)) for _ in range(BACKUP_CODE_COUNT)]
    codes = [f"{c[:5]}-{c[5:]}" for c in codes]
    BackupCode.objects.filter(user=user).delete()
    BackupCode.objects.bulk_create(BackupCode(user=user, digest=_backup_digest(c)) for c in codes)
    return codes


# --- reads ----------------------------------------------------------------------------------------------------


def active_device(user: User) -> TotpDevice | None:
    return TotpDevice.objects.filter(user=user, confirmed=True).order_by("-created_at").first()


def pending_device(user: User, now: datetime | None = None) -> TotpDevice | None:
    now = now or timezone.now()
    return TotpDevice.objects.filter(user=user, confirmed=False, expires_at__gt=now).order_by("-created_at").first()


def has_two_factor(user: User) -> bool:
    return TotpDevice.objects.filter(user=user, confirmed=True).exists()


def status(user: User) -> dict:
    active, pending = active_device(user), pending_device(user)
    return {
        "enabled": active is not None,
        "enabled_at": active.created_at if active else None,
        "pending_setup_expires_at": pending.expires_at if pending else None,
        "backup_codes_remaining": BackupCode.objects.filter(user=user, used_at__isnull=True).count(),
    }


# --- helpers --------------------------------------------------------------------------------------------------


def _locked_user(user: User) -> User:
    return User.objects.select_for_update().get(pk=user.pk)


def _confirm_password(locked: User, password: str) -> None:
    if not password or not locked.check_password(password):
        raise InvalidPassword()


def _guard(user: User) -> SecondFactorGuard:
    guard, _ = SecondFactorGuard.objects.select_for_update().get_or_create(user=user)
    return guard


def _seconds_until(moment: datetime, now: datetime) -> int:
    return max(1, math.ceil((moment - now).total_seconds()))


def otpauth_uri(user: User, secret_b32: str) -> str:
    issuer = settings.SVC_TOTP_ISSUER
    label = quote(f"{issuer}:{user.email}")
    query = urlencode({"secret": secret_b32, "issuer": issuer, "algorithm": "SHA1", "digits": 6, "period": 30})
    return f"otpauth://totp/{label}?{query}"


# --- setup, activation, removal -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingSetup:
    otpauth_uri: str
    secret: str
    expires_at: datetime
    replaces_active: bool


def start_setup(*, user: User, password: str, current_code: str | None) -> PendingSetup:
    """Begin enrolling an authenticator. With one already active, its current code is required (replacement)."""
    now = timezone.now()
    refusal = None
    with transaction.atomic():
        locked = _locked_user(user)
        _confirm_password(locked, password)
        active = active_device(locked)
        if active is not None:
            guard = _guard(locked)
            if guard.replacement_paused_until and guard.replacement_paused_until > now:
                raise _replacement_paused(guard, now)
            if not current_code:
                raise ValidationFailed.for_field(
                    "currentCode", "is required to replace the active authenticator (a code it shows now)"
                )
            if not check_totp(active, current_code):
                guard.replacement_failures += 1
                if guard.replacement_failures >= REPLACEMENT_MAX_FAILURES:
                    guard.replacement_failures = 0
                    guard.replacement_paused_until = now + REPLACEMENT_PAUSE
                    refusal = _replacement_paused(guard, now)
                else:
                    refusal = InvalidTwoFactorCode(
                        details={"attemptsLeft": REPLACEMENT_MAX_FAILURES - guard.replacement_failures}
                    )
                guard.save(update_fields=["replacement_failures", "replacement_paused_until"])
            else:
                guard.replacement_failures = 0
                guard.save(update_fields=["replacement_failures"])
        if refusal is None:
            key = secrets.token_bytes(20)
            TotpDevice.objects.filter(user=locked, confirmed=False).delete()  # one pending setup at a time
            TotpDevice.objects.create(
                user=locked,
                name="authenticator",
                confirmed=False,
                key_encrypted=crypto.encrypt(key.hex()),
                expires_at=now + SETUP_LIFETIME,
            )
    if refusal is not None:
        raise refusal
    secret_b32 = base64.b32encode(key).decode().rstrip("=")
    return PendingSetup(otpauth_uri(user, secret_b32), secret_b32, now + SETUP_LIFETIME, active is not None)


def _replacement_paused(guard: SecondFactorGuard, now: datetime) -> RateLimited:
    return RateLimited(
        _seconds_until(guard.replacement_paused_until, now),
        "Too many wrong codes of the current authenticator: replacing it is paused for 15 minutes.",
        code="TWO_FACTOR_REPLACEMENT_PAUSED",
    )


def verify_setup(*, user: User, code: str) -> list[str]:
    """Activate the pending authenticator with one of its codes; returns new backup codes (shown once).

    A replacement removes the previous authenticator in the same transaction."""
    now = timezone.now()
    refusal = None
    with transaction.atomic():
        _locked_user(user)
        pending = TotpDevice.objects.select_for_update().filter(user=user, confirmed=False, expires_at__gt=now).first()
        if pending is None:
            raise TwoFactorSetupNotFound()
        if check_totp(pending, code):
            TotpDevice.objects.filter(user=user, confirmed=True).delete()
            TotpDevice.objects.filter(pk=pending.pk).update(confirmed=True, expires_at=None, failures=0)
            SecondFactorGuard.objects.filter(user=user).update(sign_in_failures=0, sign_in_locked_until=None)
            return _new_backup_codes(user)
        pending.failures += 1
        if pending.failures >= SETUP_MAX_FAILURES:
            pending.delete()
            refusal = InvalidTwoFactorCode(
                "Five wrong codes: the pending setup was cancelled; start the setup again.",
                details={"attemptsLeft": 0, "setupCancelled": True},
            )
        else:
            pending.save(update_fields=["failures"])
            refusal = InvalidTwoFactorCode(details={"attemptsLeft": SETUP_MAX_FAILURES - pending.failures})
    raise refusal


def cancel_setup(*, user: User) -> bool:
    """Drop the pending setup only; an active authenticator stays. Returns whether one was pending."""
    deleted, _ = TotpDevice.objects.filter(user=user, confirmed=False).delete()
    return bool(deleted)


def _current_factor_ok(user: User, code: str) -> bool:
    code = (code or "").strip()
    active = active_device(user)
    if active is not None and code.isdigit() and check_totp(active, code):
        return True
    return use_backup_code(user=user, code=code)


def disable(*, user: User, password: str, current_code: str) -> None:
    """Turn two-factor off: password and a current code (authenticator or one unused backup code)."""
    with transaction.atomic():
        locked = _locked_user(user)
        _confirm_password(locked, password)
        if not has_two_factor(locked):
            raise TwoFactorNotEnabled()
        ok = _current_factor_ok(locked, current_code)
        if ok:
            TotpDevice.objects.filter(user=locked).delete()
            BackupCode.objects.filter(user=locked).delete()
    if not ok:
        raise InvalidTwoFactorCode()


def replace_backup_codes(*, user: User, password: str) -> list[str]:
    with transaction.atomic():
        locked = _locked_user(user)
        _confirm_password(locked, password)
        if not has_two_factor(locked):
            raise TwoFactorNotEnabled()
        return _new_backup_codes(locked)


# --- the second step of a sign-in -----------------------------------------------------------------------------


def open_challenge(*, session, user: User) -> datetime:
    """After a right password for a person with two-factor: remember who is half-way, not signed in."""
    expires_at = timezone.now() + CHALLENGE_LIFETIME
    session.cycle_key()  # the half-signed-in state never reuses a session id chosen before the password
    session[CHALLENGE_SESSION_KEY] = {"user": str(user.pk), "expires": expires_at.timestamp(), "failures": 0}
    return expires_at


def complete_challenge(*, session, code: str, method: str) -> User:
    """Check the second factor of the pending sign-in. Returns the person on success (the caller signs them in)."""
    challenge = session.get(CHALLENGE_SESSION_KEY)
    now = timezone.now()
    if not challenge or challenge.get("expires", 0) <= now.timestamp():
        session.pop(CHALLENGE_SESSION_KEY, None)
        raise TwoFactorChallengeExpired()
    user = User.objects.filter(pk=challenge["user"], is_active=True).first()
    if user is None:
        session.pop(CHALLENGE_SESSION_KEY, None)
        raise TwoFactorChallengeExpired()
    with transaction.atomic():
        guard = _guard(user)
        if guard.sign_in_locked_until and guard.sign_in_locked_until > now:
            raise RateLimited(
                _seconds_until(guard.sign_in_locked_until, now),
                "Too many wrong second-factor codes: verification is locked for 15 minutes.",
                code="TWO_FACTOR_LOCKED",
            )
        if method == "totp":
            device = active_device(user)
            ok = device is not None and check_totp(device, code)
        else:
            ok = use_backup_code(user=user, code=code)
        if ok:
            guard.sign_in_failures, guard.sign_in_locked_until = 0, None
            guard.save(update_fields=["sign_in_failures", "sign_in_locked_until"])
        else:
            guard.sign_in_failures += 1
            if guard.sign_in_failures >= SIGN_IN_MAX_FAILURES:
                guard.sign_in_failures, guard.sign_in_locked_until = 0, now + SIGN_IN_LOCK
            guard.save(update_fields=["sign_in_failures", "sign_in_locked_until"])
    if ok:
        session.pop(CHALLENGE_SESSION_KEY, None)
        return user
    challenge["failures"] = challenge.get("failures", 0) + 1
    if guard.sign_in_locked_until:
        session.pop(CHALLENGE_SESSION_KEY, None)
        raise RateLimited(
            _seconds_until(guard.sign_in_locked_until, now),
            "Too many wrong second-factor codes: verification is locked for 15 minutes.",
            code="TWO_FACTOR_LOCKED",
        )
    if challenge["failures"] >= CHALLENGE_MAX_FAILURES:
        session.pop(CHALLENGE_SESSION_KEY, None)
        raise TwoFactorChallengeExpired("Five wrong codes: sign in again with your password.")
    session[CHALLENGE_SESSION_KEY] = challenge
    raise InvalidTwoFactorCode(details={"attemptsLeft": CHALLENGE_MAX_FAILURES - challenge["failures"]})


def challenge_user_id(session) -> str | None:
    challenge = session.get(CHALLENGE_SESSION_KEY) if session is not None else None
    return challenge.get("user") if challenge else None
