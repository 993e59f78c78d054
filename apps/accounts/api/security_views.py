"""Two-factor lifecycle, the second step of a sign-in, and fresh re-authentication. Browser sessions only; every
route here is a guessing surface, throttled per person and per client address (fail closed)."""

from django_otp import login as otp_login
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.accounts import act_evidence
from apps.accounts.api import serializers as s
from apps.accounts.api.views import signed_in
from apps.accounts.services import two_factor
from apps.core.limits import TokenBucketLimit, client_address_block
from apps.core.permissions import ACCOUNT_AREA, AUTHENTICATED
from apps.core.views import BaseApiView


def _person(request, view) -> str | None:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return str(user.pk)
    return two_factor.challenge_user_id(getattr(request._request, "session", None))


SENSITIVE_LIMITS = (
    TokenBucketLimit("sensitive.person", setting="SVC_SENSITIVE_USER_BUCKET", key=_person, fail_open=False),
    TokenBucketLimit(
        "sensitive.address",
        setting="SVC_SENSITIVE_ADDRESS_BUCKET",
        key=lambda request, view: client_address_block(request),
        fail_open=False,
    ),
)


class SensitiveAccountView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    rate_limits = SENSITIVE_LIMITS
    error_statuses = ("409", "429")


class TwoFactorView(SensitiveAccountView):
    @extend_schema(
        tags=["user"],
        responses={200: s.TwoFactorStatusOutput},
        summary="Your two-factor status",
        description="Browser session only. {enabled, enabledAt, pendingSetupExpiresAt, backupCodesRemaining}.",
    )
    def get(self, request):
        return Response(s.TwoFactorStatusOutput(two_factor.status(request.user)).data)


class TwoFactorSetupView(SensitiveAccountView):
    @extend_schema(
        tags=["user"],
        request=s.TwoFactorSetupInput,
        responses={200: s.TwoFactorSetupOutput},
        summary="Start enrolling an authenticator (password; with one active, also its current code)",
        description="The pending setup expires after 10 minutes and is cancelled by its fifth wrong code. "
        "Replacing an active authenticator needs a code it shows now; five wrong ones pause replacement for "
        "15 minutes (429 TWO_FACTOR_REPLACEMENT_PAUSED with Retry-After). Wrong password: 400 INVALID_PASSWORD.",
    )
    def post(self, request):
        data = self.parse_body(s.TwoFactorSetupInput).validated_data
        pending = two_factor.start_setup(
            user=request.user, password=data["password"], current_code=data.get("current_code") or None
        )
        return Response(s.TwoFactorSetupOutput(pending).data)

    @extend_schema(
        tags=["user"],
        request=None,
        responses={200: s.OkOutput},
        summary="Cancel the pending setup (an active authenticator stays)",
        description="Browser session only. Cancels only the pending setup; an active authenticator keeps working.",
    )
    def delete(self, request):
        two_factor.cancel_setup(user=request.user)
        return Response({"ok": True})


class TwoFactorVerifyView(SensitiveAccountView):
    @extend_schema(
        tags=["user"],
        request=s.CodeInput,
        responses={200: s.BackupCodesOutput},
        summary="Activate the pending authenticator with one of its codes; returns new backup codes (shown once)",
        description="Browser session only. Body {code} from the new authenticator: activates it (replacing an active "
        "one) and answers {backupCodes}, ten, shown once. The fifth wrong code cancels the pending setup.",
    )
    def post(self, request):
        code = self.parse_body(s.CodeInput).validated_data["code"]
        codes = two_factor.verify_setup(user=request.user, code=code)
        device = two_factor.active_device(request.user)
        otp_login(request._request, device)  # this session has just proven the new factor
        return Response({"backupCodes": codes})


class TwoFactorDisableView(SensitiveAccountView):
    @extend_schema(
        tags=["user"],
        request=s.TwoFactorDisableInput,
        responses={200: s.OkOutput},
        summary="Turn two-factor off (password and a current code or one unused backup code)",
        description="Browser session only. Body {password, currentCode}: a current six-digit code or one unused "
        "backup code.",
    )
    def post(self, request):
        data = self.parse_body(s.TwoFactorDisableInput).validated_data
        two_factor.disable(user=request.user, password=data["password"], current_code=data["current_code"])
        return Response({"ok": True})


class BackupCodesView(SensitiveAccountView):
    @extend_schema(
        tags=["user"],
        request=s.PasswordInput,
        responses={200: s.BackupCodesOutput},
        summary="Replace all backup codes (the old ones stop working); shown once",
        description="Browser session only. Body {password}. Ten new backup codes, shown once; the old ones stop "
        "working. Wrong password: 400 INVALID_PASSWORD.",
    )
    def post(self, request):
        password = self.parse_body(s.PasswordInput).validated_data["password"]
        return Response({"backupCodes": two_factor.replace_backup_codes(user=request.user, password=password)})


class ReauthenticateView(SensitiveAccountView):
    @extend_schema(
        tags=["user"],
        request=s.PasswordInput,
        responses={200: s.ReauthenticateOutput},
        summary="Confirm your password for a clinical act: a token for X-Service-Act-Evidence, valid 5 minutes",
        description="The token is bound to you and to this browser session; machine credentials cannot obtain one.",
    )
    def post(self, request):
        password = self.parse_body(s.PasswordInput).validated_data["password"]
        token, expires_at = act_evidence.issue(
            user=request.user, session_key=request._request.session.session_key, password=password
        )
        return Response(s.ReauthenticateOutput({"token": token, "expires_at": expires_at}).data)


class SecondStepView(BaseApiView):
    """The second step of a password sign-in that answered twoFactorRedirect (the session cookie carries it)."""

    public = True
    rate_limits = SENSITIVE_LIMITS
    error_statuses = ("401", "429")
    method = "totp"
    input_serializer = s.CodeInput

    def post(self, request):
        code = self.parse_body(self.input_serializer).validated_data["code"]
        session = request._request.session
        user = two_factor.complete_challenge(session=session, code=code, method=self.method)
        response = signed_in(request, user)
        device = two_factor.active_device(user)
        if device is not None:
            otp_login(request._request, device)
        return response


class VerifyTotpView(SecondStepView):
    @extend_schema(
        tags=["auth"],
        request=s.CodeInput,
        responses={200: s.SignedInOutput},
        summary="Second step of sign-in: a code of your authenticator",
        description="Five wrong codes use the step up (401 TWO_FACTOR_CHALLENGE_EXPIRED: sign in again); ten "
        "consecutive wrong codes lock second-factor verification for 15 minutes (429 TWO_FACTOR_LOCKED).",
    )
    def post(self, request):
        return super().post(request)


class VerifyBackupCodeView(SecondStepView):
    method = "backup_code"
    input_serializer = s.BackupCodeInput

    @extend_schema(
        tags=["auth"],
        request=s.BackupCodeInput,
        responses={200: s.SignedInOutput},
        summary="Second step of sign-in: one unused backup code (it is spent)",
    )
    def post(self, request):
        return super().post(request)
