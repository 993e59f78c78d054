"""Writes for people, practices, memberships and API keys."""

import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts import roles
from apps.accounts.authentication import api_key_digest
from apps.accounts.errors import AlreadyMember, EmailTaken
from apps.accounts.models import ApiKey, Membership, Organization, User
from apps.core.errors import NotFound, ValidationFailed

API_KEY_PREFIX = "svc_key_"


def _validate_password(password: str, user: User | None = None) -> None:
    try:
        password_validation.validate_password(password, user)
    except DjangoValidationError as exc:
        raise ValidationFailed(
            f"password: {exc.messages[0]}", details={"fields": {"password": list(exc.messages)}}
        ) from None


@transaction.atomic
def user_sign_up(*, email: str, password: str, name: str = "") -> User:
    email = email.strip().lower()
    if User.objects.filter(email__iexact=email).exists():
        raise EmailTaken()
    _validate_password(password, User(email=email, name=name))
    try:
        with transaction.atomic():
            return User.objects.create_user(email=email, password=password, name=name.strip())
    except IntegrityError:  # a concurrent sign-up with the same address
        raise EmailTaken() from None


def _validated_email(email: str) -> str:
    email = email.strip().lower()
    try:
        validate_email(email)
    except DjangoValidationError:
        raise ValidationFailed.for_field("email", "must be a valid e-mail address") from None
    return email


def user_get_or_create(*, email: str, password: str | None, name: str = "") -> tuple[User, bool]:
    email = _validated_email(email)
    existing = User.objects.filter(email__iexact=email.strip()).first()
    if existing is not None:
        return existing, False
    if password is not None:
        _validate_password(password)
    return User.objects.create_user(email=email, password=password, name=name), True


@transaction.atomic
def organization_create(
    *,
    name: str,
    owner: User,
    country: str = "",
    clinical: bool = False,
    kind: str = Organization.Kind.PRACTICE,
) -> Organization:
    name = name.strip()
    if not name:
        raise ValidationFailed.for_field("name", "may not be blank")
    organization = Organization.objects.create(
        name=name,
        kind=kind,
        country=country.upper(),
        region=settings.SVC_REGION,
        clinical_workspace_available=clinical,
    )
    Membership.objects.unscoped().create(organization=organization, user=owner, role=roles.OWNER)
    return organization


@transaction.atomic
def membership_add(*, organization: Organization, user: User, role: str) -> Membership:
    if role not in roles.ROLES:
        raise ValidationFailed.for_field("role", f"must be one of {', '.join(roles.ROLES)}")
    if Membership.objects.for_org(organization).filter(user=user).exists():
        raise AlreadyMember()
    return Membership.objects.unscoped().create(organization=organization, user=user, role=role)


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
        user=user, name=name, start=secret[: len(API_KEY_PREFIX) + 4], key_hash=api_key_digest(secret)
    )
    return IssuedApiKey(key=key, secret=secret)


def api_key_revoke(*, user: User, key_id) -> None:
    """Revoke one of the caller's own keys. Someone else's key id is indistinguishable from an unknown one."""
    updated = ApiKey.objects.filter(id=key_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    if not updated:
        raise NotFound("No such API key.")
