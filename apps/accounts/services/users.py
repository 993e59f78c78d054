"""People: sign-up and finding or creating a user by e-mail address."""

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from apps.accounts.errors import EmailTaken
from apps.accounts.models import User
from apps.accounts.services import email_verification
from apps.core.errors import ValidationFailed
from apps.core.naming import to_camel


def _validate_password(password: str, user: User | None = None, *, field: str = "password") -> None:
    """Django's password validators; 400 naming `field` (snake_case: the response camelCases it)."""
    try:
        password_validation.validate_password(password, user)
    except DjangoValidationError as exc:
        raise ValidationFailed(
            f"{to_camel(field)}: {exc.messages[0]}", details={"fields": {field: list(exc.messages)}}
        ) from None


@transaction.atomic
def user_sign_up(*, email: str, password: str, name: str = "") -> User:
    email = email.strip().lower()
    if User.objects.filter(email__iexact=email).exists():
        raise EmailTaken()
    _validate_password(password, User(email=email, name=name))
    try:
        with transaction.atomic():
            user = User.objects.create_user(email=email, password=password, name=name.strip())
    except IntegrityError:  # a concurrent sign-up with the same address
        raise EmailTaken() from None
    email_verification.verification_after_sign_up(user=user)  # the link goes out after the commit
    return user


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
