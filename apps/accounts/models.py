import uuid

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models.functions import Lower

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
    clinical_workspace_available = models.BooleanField(default=False)
    pms_native_writes_enabled = models.BooleanField(default=False)
    pms_system_of_record = models.CharField(max_length=32, default="external")
    pms_authority_generation = models.PositiveIntegerField(default=0)
    # Moves when a practice-wide entitlement or the system of record changes (see Membership too).
    access_generation = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class Membership(TenantModel):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=roles.ROLE_CHOICES)
    # Null: the member has not chosen; the role's first workspace applies.
    default_workspace = models.CharField(max_length=8, choices=[(w, w) for w in roles.WORKSPACES], null=True)  # noqa: DJ001
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
