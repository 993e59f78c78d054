"""API keys: issued (the secret shown once) and revoked by their owner."""

import secrets
from dataclasses import dataclass

from django.utils import timezone

from apps.accounts import authentication  # a module, so the import cycle through authentication resolves
from apps.accounts.models import ApiKey, User
from apps.core.errors import NotFound, ValidationFailed

API_KEY_PREFIX = "svc_key_"


@dataclass(frozen=True)
class IssuedApiKey:
    key: ApiKey
    secret: str  # shown once, never stored


def api_key_create(*, user: User, name: str) -> IssuedApiKey:
    name = name.strip()
    if not name:
        raise ValidationFailed.for_field("name", "may not be blank")
    secret = API_KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        user=user, name=name, start=secret[: len(API_KEY_PREFIX) + 4], key_hash=authentication.api_key_digest(secret)
    )
    return IssuedApiKey(key=key, secret=secret)


def api_key_revoke(*, user: User, key_id) -> None:
    """Revoke one of the caller's own keys. Someone else's key id is indistinguishable from an unknown one."""
    updated = ApiKey.objects.filter(id=key_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    if not updated:
        raise NotFound("No such API key.")
