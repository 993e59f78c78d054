"""Signed opt-out tokens: every marketing message carries one (in its text, and as the e-mail's List-Unsubscribe URL).

The token names the practice, the patient, the channel and the campaign (all zeros for a template sent outside a
campaign), packed into 49 bytes (three UUIDs and a channel byte, URL-safe base64) and signed with django.core.signing
under its own salt (HMAC-SHA256 with SECRET_KEY): about 110 characters, short enough for a text message. It does not
expire: an opt-out link must keep working. Anything that does not verify (tampered, truncated, another salt) is
None, and the route answers 404 without recording anything."""

import base64
import hashlib
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core import signing

SALT = "apps.campaigns.unsubscribe"
NO_CAMPAIGN = uuid.UUID(int=0)
NO_PATIENT = uuid.UUID(int=0)  # a test send's link: it verifies, and records nothing
CHANNELS = ("sms", "messaging_app", "email", "telephony_messaging")


@dataclass(frozen=True)
class OptOut:
    organization_id: uuid.UUID
    patient_id: uuid.UUID
    channel: str
    campaign_id: uuid.UUID | None


def _signer() -> signing.Signer:
    return signing.Signer(salt=SALT, algorithm="sha256")


def make(*, organization_id, patient_id, channel: str, campaign_id=None) -> str:
    packed = (
        uuid.UUID(str(organization_id)).bytes
        + uuid.UUID(str(patient_id)).bytes
        + (uuid.UUID(str(campaign_id)) if campaign_id else NO_CAMPAIGN).bytes
        + bytes([CHANNELS.index(channel)])
    )
    return _signer().sign(base64.urlsafe_b64encode(packed).decode().rstrip("="))


def read(token: str) -> OptOut | None:
    if not isinstance(token, str) or len(token) > 200:
        return None
    try:
        payload = _signer().unsign(token)
        packed = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    except (signing.BadSignature, ValueError):
        return None
    if len(packed) != 49 or packed[48] >= len(CHANNELS):
        return None
    campaign_id = uuid.UUID(bytes=packed[32:48])
    return OptOut(
        organization_id=uuid.UUID(bytes=packed[:16]),
        patient_id=uuid.UUID(bytes=packed[16:32]),
        channel=CHANNELS[packed[48]],
        campaign_id=None if campaign_id == NO_CAMPAIGN else campaign_id,
    )


def digest(token: str) -> str:
    """What the consent evidence keeps of the token: the first 16 hex digits of its SHA-256 (never the token)."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def url(token: str) -> str:
    return f"{settings.SVC_BASE_URL}/marketing/unsubscribe/{token}"
