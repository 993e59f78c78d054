import uuid

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models.functions import Lower
from django_otp.models import Device

from apps.accounts import roles
from apps.core.models import TenantModel


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **fields):
        user = self.model(email=self.normalize_email(email).lower(), **fields)
        user.set_password(password)  # None → unusable password
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields):
        fields.setdefault("is_staff", True)
        fields.setdefault("is_superuser", True)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """A person. The e-mail address is the login; it is stored lower-cased and unique."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, unique=True)
    name = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False, help_text="May sign in to the back office (/admin).")
    email_verified_at = models.DateTimeField(null=True, blank=True)  # when a link sent to the address was opened
    # The member's own mobile in E.164, for samples they send themselves (a campaign's test send by SMS or WhatsApp).
    phone_mobile = models.CharField(max_length=20, blank=True, default="")
    avatar = models.ForeignKey("StoredImage", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    objects = UserManager()

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="accounts_user_email_ci_unique")]

    def __str__(self) -> str:
        return self.email


class Organization(models.Model):
    """A practice: the tenant. Global table (a Citus reference table later)."""

    class Kind(models.TextChoices):
        PRACTICE = "practice"
        PARTNER = "partner"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PRACTICE)
    country = models.CharField(max_length=2, blank=True, help_text="ISO 3166-1 alpha-2")
    region = models.CharField(max_length=2, choices=[("eu", "EU"), ("us", "US")], default="eu")
    # IANA name: "today", the calendar's days and working hours are reckoned in it.
    timezone = models.CharField(max_length=64, default="UTC")
    clinical_workspace_available = models.BooleanField(default=False)
    pms_native_writes_enabled = models.BooleanField(default=False)
    pms_system_of_record = models.CharField(max_length=32, default="external")
    pms_authority_generation = models.PositiveIntegerField(default=0)
    # Moves when a practice-wide entitlement or the system of record changes (see Membership too).
    access_generation = models.PositiveIntegerField(default=0)
    logo = models.ForeignKey("StoredImage", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class Membership(TenantModel):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=roles.ROLE_CHOICES)
    # Null: the member has not chosen; the role's first workspace applies.
    default_workspace = models.CharField(  # noqa: DJ001
        max_length=8, choices=[(w, w) for w in roles.WORKSPACES], null=True, blank=True
    )
    hide_other_workspace = models.BooleanField(default=False)
    # Moves when this member's role or workspace preference changes.
    access_generation = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "user"], name="accounts_membership_org_user_unique")
        ]
        indexes = [models.Index(fields=["user", "created_at"], name="accounts_membership_user_idx")]

    def __str__(self) -> str:
        return f"{self.user_id} as {self.role} in {self.organization_id}"


class ApiKey(models.Model):
    """A machine credential acting as its creating user. Only the SHA-256 digest of the secret is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    start = models.CharField(max_length=16, help_text="The first characters of the key, for recognising it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["user", "-created_at"], name="accounts_apikey_user_idx")]

    def __str__(self) -> str:
        return f"{self.name} ({self.start}…)"


class StoredImage(models.Model):
    """An uploaded picture (avatar, practice logo) kept through Django's storage API; the sha256 is its ETag."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    storage_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=32)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.storage_name} ({self.content_type}, {self.size} bytes)"


class UserSession(models.Model):
    """A browser session as the person sees it in /user/sessions. The session key itself is a bearer secret: only
    its digest (to find the row) and its encryption (to end the session in the session store) are kept."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="browser_sessions")
    key_digest = models.CharField(max_length=64, unique=True)
    key_encrypted = models.TextField()
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["user", "-created_at"], name="accounts_usersession_user_idx")]

    def __str__(self) -> str:
        return f"session of {self.user_id} since {self.created_at:%Y-%m-%d %H:%M}"


class TotpDevice(Device):
    """A TOTP authenticator (django-otp's Device and TOTP arithmetic) whose key is encrypted at rest.

    Unconfirmed = a pending setup: it expires (expires_at) and is cancelled after five wrong codes (failures).
    """

    key_encrypted = models.TextField()
    step = models.PositiveSmallIntegerField(default=30)
    digits = models.PositiveSmallIntegerField(default=6)
    tolerance = models.PositiveSmallIntegerField(default=1)
    drift = models.SmallIntegerField(default=0)
    last_t = models.BigIntegerField(default=-1, help_text="The last time step accepted: a code is never reused.")
    expires_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Device.Meta):
        verbose_name = "TOTP authenticator"

    def __str__(self) -> str:
        return f"authenticator of {self.user_id} ({'active' if self.confirmed else 'pending'})"


class BackupCode(models.Model):
    """A one-time second-factor code; only its keyed digest is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="backup_codes")
    digest = models.CharField(max_length=64)
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "digest"], name="accounts_backupcode_user_idx")]

    def __str__(self) -> str:
        return f"backup code of {self.user_id}"


class SecondFactorGuard(models.Model):
    """Per-person counters that bound second-factor guessing (sign-in and authenticator replacement)."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, primary_key=True, related_name="second_factor_guard")
    sign_in_failures = models.PositiveSmallIntegerField(default=0)
    sign_in_locked_until = models.DateTimeField(null=True, blank=True)
    replacement_failures = models.PositiveSmallIntegerField(default=0)
    replacement_paused_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"second-factor guard of {self.user_id}"


class Invitation(TenantModel):
    """An invitation to join a practice. `expired` is not stored: a pending invitation past expires_at is it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        CANCELED = "canceled"

    class Delivery(models.TextChoices):
        """The e-mail's way out: queued (pending), being handed to the e-mail backend (publishing), handed over
        (published), or given up after the retries (parked). Driven by tasks.send_invitation_email."""

        PENDING = "pending"
        PUBLISHING = "publishing"
        PUBLISHED = "published"
        PARKED = "parked"

    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=16, choices=roles.ROLE_CHOICES)
    inviter = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    expires_at = models.DateTimeField()
    responded_at = models.DateTimeField(null=True, blank=True)
    delivery = models.CharField(max_length=16, choices=Delivery.choices, default=Delivery.PENDING)
    last_sent_at = models.DateTimeField(null=True, blank=True, help_text="When the e-mail was last handed over.")

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="accounts_invitation_org_idx"),
            models.Index(fields=["organization", "email", "role", "created_at"], name="accounts_invitation_email_idx"),
        ]

    def __str__(self) -> str:
        return f"invitation of {self.email} as {self.role}"
