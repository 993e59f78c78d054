"""Signed, expiring patient links (GET /l/{token}): the token names the practice, the deposit request and the link's
expiry (Unix seconds), packed into 36 bytes (two UUIDs and a 4-byte expiry, URL-safe base64) and signed with
django.core.signing under its own salt (HMAC-SHA256 with SECRET_KEY). Anything that does not verify (tampered,
truncated, another salt) or has expired reads as None; the route answers 404.

Sending a deposit request again issues a new expiry, and the deposit keeps the expiry of its current link: a token
whose expiry is not the deposit's current one (an earlier link) is refused too."""

import base64
import struct
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.core import signing
from django.utils import timezone

SALT = "apps.deposits.patient_link"
MAX_TOKEN_CHARS = 200


@dataclass(frozen=True)
class PatientLink:
    organization_id: uuid.UUID
    deposit_id: uuid.UUID
    expires_at: datetime


def _signer() -> signing.Signer:
    return signing.Signer(salt=SALT, algorithm="sha256")


def make(*, organization_id, deposit_id, expires_at: datetime) -> str:
    packed = (
        uuid.UUID(str(organization_id)).bytes
        + uuid.UUID(str(deposit_id)).bytes
        + struct.pack(">I", int(expires_at.timestamp()))
    )
    return _signer().sign(base64.urlsafe_b64encode(packed).decode().rstrip("="))


def read(token: str, *, now: datetime | None = None) -> PatientLink | None:
    """The link's contents, or None when it does not verify or has expired."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        return None
    try:
        payload = _signer().unsign(token)
        packed = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    except (signing.BadSignature, ValueError):
        return None
    if len(packed) != 36:
        return None
    expires_at = datetime.fromtimestamp(struct.unpack(">I", packed[32:])[0], tz=UTC)
    if expires_at <= (now or timezone.now()):
        return None
    return PatientLink(
        organization_id=uuid.UUID(bytes=packed[:16]), deposit_id=uuid.UUID(bytes=packed[16:32]), expires_at=expires_at
    )


def url(token: str) -> str:
    return f"{settings.SVC_BASE_URL}/l/{token}"


def for_deposit(deposit) -> str | None:
    """The current link of a sent deposit request (None when it has none or it has expired)."""
    if deposit.link_expires_at is None or deposit.link_expires_at <= timezone.now():
        return None
    return url(make(organization_id=deposit.organization_id, deposit_id=deposit.id, expires_at=deposit.link_expires_at))
