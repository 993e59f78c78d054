from rest_framework import serializers

from apps.accounts import roles
from apps.core.fields import TextField
from apps.core.serializers import StrictSerializer


class EmailPasswordInput(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=256, trim_whitespace=False)


class PasswordResetRequestInput(StrictSerializer):
    email = serializers.EmailField(max_length=254)
    redirect_to = TextField(
        max_length=2048, required=False, help_text="Accepted for client compatibility; the link opens the app."
    )


class VerificationRequestInput(StrictSerializer):
    email = serializers.EmailField(max_length=254)
    callback_url = TextField(
        max_length=2048, required=False, help_text="Accepted for client compatibility; the link opens the app."
    )


class VerifyEmailQuery(StrictSerializer):
    token = TextField(max_length=1000, help_text="The token of the e-mailed link.")


class VerifiedOutput(serializers.Serializer):
    status = serializers.BooleanField()
    email = serializers.EmailField(help_text="The verified address (the new one, after a change).")

    class Meta:
        ref_name = "EmailVerified"


class EmailChangeInput(StrictSerializer):
    new_email = serializers.EmailField(max_length=254)


class PasswordResetInput(StrictSerializer):
    token = TextField(max_length=300, help_text="The token of the e-mailed link.")
    new_password = TextField(max_length=256, trim_whitespace=False)


class SignUpInput(EmailPasswordInput):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class UserOutput(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    name = serializers.CharField()


class UserProfileOutput(UserOutput):
    created_at = serializers.DateTimeField()
    email_verified_at = serializers.DateTimeField(
        allow_null=True, help_text="When a link sent to the address was opened; null until then."
    )
    phone_mobile = serializers.CharField(help_text="Your own mobile number (E.164) for test sends; empty when unset.")


class SignedInOutput(serializers.Serializer):
    two_factor_redirect = serializers.BooleanField(help_text="Always false here: the session is signed in.")
    user = UserOutput()
    active_organization_id = serializers.UUIDField(allow_null=True)


class OkOutput(serializers.Serializer):
    ok = serializers.BooleanField()


class StatusOutput(serializers.Serializer):
    status = serializers.BooleanField()

    class Meta:
        ref_name = "AuthStatus"


class ApiKeyCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)


class ApiKeyDeleteInput(serializers.Serializer):
    key_id = serializers.UUIDField()


class ApiKeyOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    start = serializers.CharField(help_text="The first characters of the key, to recognise it.")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


class ApiKeyCreatedOutput(ApiKeyOutput):
    key = serializers.CharField(help_text="The secret. Shown once: store it now; it cannot be read again.")


class PmsAccessOutput(serializers.Serializer):
    pms_workspace_available = serializers.BooleanField()
    native_writes_enabled = serializers.BooleanField()
    system_of_record = serializers.CharField()
    authority_generation = serializers.IntegerField()


class MeOrganizationOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    member_role = serializers.ChoiceField(choices=roles.ROLE_CHOICES)
    workspaces = serializers.ListField(child=serializers.ChoiceField(choices=roles.WORKSPACES), min_length=1)
    default_workspace = serializers.ChoiceField(choices=roles.WORKSPACES)
    hide_other_workspace = serializers.BooleanField()
    pms_access = PmsAccessOutput()
    access_generation = serializers.IntegerField(min_value=0)


class MeSessionOutput(serializers.Serializer):
    active_organization_id = serializers.UUIDField(allow_null=True)


class MeOutput(serializers.Serializer):
    user = UserOutput()
    session = MeSessionOutput()
    organization = MeOrganizationOutput(allow_null=True)


class OrganizationSummaryOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    country = serializers.CharField()
    region = serializers.CharField()
    member_role = serializers.ChoiceField(choices=roles.ROLE_CHOICES)
    created_at = serializers.DateTimeField()


class OrganizationListOutput(serializers.Serializer):
    items = OrganizationSummaryOutput(many=True)


class MemberOutput(serializers.Serializer):
    user_id = serializers.UUIDField()
    email = serializers.EmailField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=roles.ROLE_CHOICES)
    joined_at = serializers.DateTimeField()


class MemberListOutput(serializers.Serializer):
    items = MemberOutput(many=True)


# --- two-factor and re-authentication ---------------------------------------------------------------------------


class PasswordInput(StrictSerializer):
    password = serializers.CharField(max_length=256, trim_whitespace=False)


class TwoFactorSetupInput(PasswordInput):
    current_code = serializers.CharField(
        max_length=16, required=False, allow_blank=True, help_text="A code of the active authenticator (replacement)."
    )


class TwoFactorSetupOutput(serializers.Serializer):
    otpauth_uri = serializers.CharField(help_text="otpauth:// URI for the authenticator app (or its QR code).")
    secret = serializers.CharField(help_text="The same key in base32, for typing it in by hand. Shown once.")
    expires_at = serializers.DateTimeField(help_text="The pending setup is cancelled at this time (10 minutes).")
    replaces_active = serializers.BooleanField(help_text="Activating it will replace the current authenticator.")


class CodeInput(StrictSerializer):
    code = serializers.CharField(max_length=32, help_text="Six-digit authenticator code.")


class BackupCodeInput(StrictSerializer):
    code = serializers.CharField(max_length=32, help_text="One unused backup code (dashes and spaces ignored).")


class TwoFactorDisableInput(PasswordInput):
    current_code = serializers.CharField(max_length=32, help_text="Authenticator code or one unused backup code.")


class BackupCodesOutput(serializers.Serializer):
    backup_codes = serializers.ListField(
        child=serializers.CharField(), help_text="Ten one-time codes. Shown once: store them now."
    )


class TwoFactorStatusOutput(serializers.Serializer):
    enabled = serializers.BooleanField()
    enabled_at = serializers.DateTimeField(allow_null=True)
    pending_setup_expires_at = serializers.DateTimeField(allow_null=True)
    backup_codes_remaining = serializers.IntegerField(min_value=0)


class ReauthenticateOutput(serializers.Serializer):
    token = serializers.CharField(help_text="Send it in X-Service-Act-Evidence with the act; bound to this session.")
    expires_at = serializers.DateTimeField()


class SignInOutput(serializers.Serializer):
    two_factor_redirect = serializers.BooleanField(
        help_text="True: the password was right and a second factor is needed; POST /auth/two-factor/verify-totp "
        "or /auth/two-factor/verify-backup-code. No session is signed in yet."
    )
    two_factor_expires_at = serializers.DateTimeField(required=False, help_text="Only with twoFactorRedirect.")
    user = UserOutput(required=False, help_text="Absent with twoFactorRedirect.")
    active_organization_id = serializers.UUIDField(allow_null=True, required=False)


# --- practices, invitations, members ----------------------------------------------------------------------------


class OrganizationCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=200)
    country = serializers.RegexField(r"^[A-Za-z]{2}$", required=False, allow_blank=True, default="")


class SetActiveOrganizationInput(StrictSerializer):
    organization_id = serializers.UUIDField(allow_null=True, help_text="null leaves the session without a practice.")


class ActiveOrganizationOutput(serializers.Serializer):
    active_organization_id = serializers.UUIDField(allow_null=True)


class InviteMemberInput(StrictSerializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=roles.ROLES)


class InvitationIdInput(StrictSerializer):
    invitation_id = serializers.UUIDField()


class AcceptInvitationInput(InvitationIdInput):
    password = serializers.CharField(
        max_length=256, trim_whitespace=False, required=False, help_text="Only when the address has no account yet."
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class PersonOutput(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    name = serializers.CharField()


class InvitationOutput(serializers.Serializer):
    id = serializers.UUIDField()
    organization_id = serializers.UUIDField()
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=roles.ROLES)
    status = serializers.ChoiceField(choices=["pending", "expired", "accepted", "rejected", "canceled"])
    inviter = PersonOutput(allow_null=True)
    expires_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    responded_at = serializers.DateTimeField(allow_null=True)


class InvitationPreviewOrganizationOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class InvitationPreviewOutput(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=roles.ROLES)
    organization = InvitationPreviewOrganizationOutput()
    inviter = PersonOutput(allow_null=True)
    expires_at = serializers.DateTimeField()
    account_exists = serializers.BooleanField(help_text="Whether the invited address already has an account.")


class InvitationAcceptedOutput(serializers.Serializer):
    invitation = InvitationOutput()
    user = UserOutput()
    account_created = serializers.BooleanField()
    active_organization_id = serializers.UUIDField()


class WorkspaceInput(StrictSerializer):
    workspace = serializers.ChoiceField(choices=roles.WORKSPACES)
    hide_other_workspace = serializers.BooleanField(required=False)


class MemberAccessOutput(serializers.Serializer):
    user_id = serializers.UUIDField()
    role = serializers.ChoiceField(choices=roles.ROLES)
    workspaces = serializers.ListField(child=serializers.ChoiceField(choices=roles.WORKSPACES), min_length=1)
    default_workspace = serializers.ChoiceField(choices=roles.WORKSPACES)
    hide_other_workspace = serializers.BooleanField()


class RoleInput(StrictSerializer):
    role = serializers.ChoiceField(choices=roles.ROLES)
