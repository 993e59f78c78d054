"""E-mail verification, for a new account's address and for a change of address. A link carries a signed,
timestamped token (django.core.signing, its own salt; valid 24 hours; nothing stored) naming the person, the address
to confirm and the address they have now: verifying is idempotent, and a change link stops working once the address
has changed (single use). The request routes never say whether an address has an account."""

from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.errors import EmailTaken, InvalidVerificationToken
from apps.accounts.limits import address_allowed
from apps.accounts.models import User

SALT = "accounts.email-verification"
MAX_AGE_SECONDS = 24 * 3600


def verification_token(user: User, address: str) -> str:
    return signing.dumps({"u": str(user.pk), "e": address, "c": user.email}, salt=SALT, compress=True)


def _address_allowed(address: str) -> bool:
    return address_allowed("auth.email-verification", address, "SVC_EMAIL_VERIFICATION_ADDRESS_BUCKET")


def _send(user: User, address: str) -> None:
    from apps.accounts.tasks import send_verification_email

    # The task signs the token at sending time: it never sits in the broker.
    transaction.on_commit(lambda: send_verification_email.delay(str(user.pk), address))


def verification_request(*, email: str) -> None:
    """Send (again) the verification link of an account whose address is not verified yet; silent otherwise."""
    address = (email or "").strip().lower()
    if not _address_allowed(address):
        return
    user = User.objects.filter(email__iexact=address, is_active=True, email_verified_at__isnull=True).first()
    if user is not None:
        _send(user, user.email)


def verification_after_sign_up(*, user: User) -> None:
    if _address_allowed(user.email):
        _send(user, user.email)


def email_change_request(*, user: User, new_email: str) -> None:
    """A signed-in person asks to use another address: a link goes to the new one, and the address changes only
    when it is opened. Whether the new address already has an account is not said here (it is at verification)."""
    address = new_email.strip().lower()  # a valid address (the route checked it)
    if address == user.email or not _address_allowed(address):
        return
    _send(user, address)


@transaction.atomic
def verify(*, token: str) -> User:
    """Open a link: the address is verified, or (a change link) becomes the person's address, verified. A wrong,
    expired or spent token: 400 INVALID_VERIFICATION_TOKEN; an address someone took meanwhile: 409 EMAIL_TAKEN."""
    try:
        claim = signing.loads(token, salt=SALT, max_age=MAX_AGE_SECONDS)
    except signing.BadSignature:  # SignatureExpired is one
        raise InvalidVerificationToken() from None
    if not isinstance(claim, dict):
        raise InvalidVerificationToken()
    user = User.objects.select_for_update().filter(pk=claim.get("u"), is_active=True).first()
    if user is None or user.email != claim.get("c"):
        raise InvalidVerificationToken()
    user.email = claim.get("e") or user.email
    if user.email_verified_at is None or user.email != claim.get("c"):
        user.email_verified_at = timezone.now()
    try:
        with transaction.atomic():
            user.save(update_fields=["email", "email_verified_at", "updated_at"])
    except IntegrityError:
        raise EmailTaken() from None
    return user
