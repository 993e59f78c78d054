"""Identity routes: sign-up/in/out, API keys, /auth/me, the caller's profile and practices."""

import re

from django.conf import settings
from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from apps.accounts import selectors, services
from apps.accounts.api import serializers as s
from apps.accounts.errors import InvalidCredentials
from apps.accounts.limits import EMAIL_VERIFICATION_LIMIT, PASSWORD_RESET_LIMIT, SIGN_IN_LIMIT, SIGN_UP_LIMIT
from apps.accounts.services import email_verification, password_reset, two_factor
from apps.accounts.services import sessions as user_sessions
from apps.core.errors import OrganizationAmbiguous, UpgradeRequired
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.permissions import ACCOUNT_AREA, AUTHENTICATED
from apps.core.views import BaseApiView


def signed_in(request, user) -> Response:
    """Start a browser session; the active practice defaults to the person's first membership."""
    login(request._request, user, backend="django.contrib.auth.backends.ModelBackend")
    user_sessions.record_sign_in(django_request=request._request, user=user)
    first = selectors.memberships_of(user).first()
    if first is not None:
        request._request.session[selectors.SESSION_ACTIVE_ORG_KEY] = str(first.organization_id)
    get_token(request._request)  # sets the csrftoken cookie the client echoes in X-CSRFToken
    body = {"user": user, "active_organization_id": first.organization_id if first else None}
    return Response(s.SignedInOutput(body | {"two_factor_redirect": False}).data)


class SignUpView(BaseApiView):
    public = True
    error_statuses = ("409",)
    rate_limits = (SIGN_UP_LIMIT,)

    @extend_schema(
        tags=["auth"],
        request=s.SignUpInput,
        responses={201: s.SignedInOutput},
        summary="Create an account with e-mail and password, and sign in",
        description="Public. Creates the account and signs in (sets the sessionid and csrftoken cookies). Limited to "
        "10 per minute per client address (IPv6 by /64): 429 with Retry-After; without Redis the window fails closed "
        "with 503 SERVICE_UNAVAILABLE.",
    )
    def post(self, request):
        data = s.SignUpInput(data=request.data)
        data.is_valid(raise_exception=True)
        user = services.user_sign_up(**data.validated_data)
        response = signed_in(request, user)
        response.status_code = 201
        return response


class SignInView(BaseApiView):
    public = True
    error_statuses = ("401",)
    rate_limits = (SIGN_IN_LIMIT,)

    @extend_schema(
        tags=["auth"],
        request=s.EmailPasswordInput,
        responses={200: s.SignInOutput},
        summary="Sign in with e-mail and password (sets the session cookie)",
        description="With two-factor on, a right password answers twoFactorRedirect: true and no signed-in "
        "session; finish with POST /auth/two-factor/verify-totp or /auth/two-factor/verify-backup-code.",
    )
    def post(self, request):
        data = s.EmailPasswordInput(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(
            request._request,
            username=data.validated_data["email"].strip().lower(),
            password=data.validated_data["password"],
        )
        if user is None:
            raise InvalidCredentials()
        if two_factor.has_two_factor(user):
            expires_at = two_factor.open_challenge(session=request._request.session, user=user)
            return Response(s.SignInOutput({"two_factor_redirect": True, "two_factor_expires_at": expires_at}).data)
        return signed_in(request, user)


class SignOutView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    browser_session_only = True

    @extend_schema(
        tags=["auth"],
        request=None,
        responses={200: s.OkOutput},
        summary="End the browser session",
        description="Browser session only. Ends the session; its cookie answers 401 afterwards.",
    )
    def post(self, request):
        user_sessions.record_sign_out(django_request=request._request)
        logout(request._request)
        return Response({"ok": True})


class ApiKeyCreateView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    browser_session_only = True

    @extend_schema(
        tags=["auth"],
        request=s.ApiKeyCreateInput,
        responses={201: s.ApiKeyCreatedOutput},
        summary="Create an API key acting as you (the secret is shown once)",
        description="Browser session only. The key (svc_key_…) acts as you in your practices; only its SHA-256 "
        "digest is stored and the secret is in this response alone. Send it as Authorization: Bearer.",
    )
    def post(self, request):
        data = s.ApiKeyCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        issued = services.api_key_create(user=request.user, name=data.validated_data["name"])
        body = s.ApiKeyOutput(issued.key).data | {"key": issued.secret}
        return Response(body, status=201)


class ApiKeyDeleteView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    browser_session_only = True

    @extend_schema(
        tags=["auth"],
        request=s.ApiKeyDeleteInput,
        responses={200: s.OkOutput},
        summary="Revoke one of your API keys (it stops working at once)",
        description="Browser session only. Revokes one of your own keys by id; its next request answers 401.",
    )
    def post(self, request):
        data = s.ApiKeyDeleteInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.api_key_revoke(user=request.user, key_id=data.validated_data["key_id"])
        return Response({"ok": True})


class ApiKeyListView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        tags=["user"],
        responses={200: s.ApiKeyOutput(many=True)},
        summary="Your API keys, newest first (display fields only, never the secret)",
        description="Browser session only. Your keys, newest first, {items, nextCursor} paging until null.",
    )
    def get(self, request):
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.api_key_list(user=request.user), request, view=self)
        return Response(paginator.get_paginated_response_data(s.ApiKeyOutput(page, many=True).data))


_MOBILE_CLIENT = re.compile(r"^mobile/(\d+(?:\.\d+){0,3})")


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (4 - len(parts))


def check_mobile_floor(request) -> None:
    """X-Service-Client: mobile/<version> below SVC_MOBILE_MIN_VERSION answers 426 with minimumVersion."""
    match = _MOBILE_CLIENT.match(request.headers.get("X-Service-Client", "").strip())
    if match and _version_tuple(match.group(1)) < _version_tuple(settings.SVC_MOBILE_MIN_VERSION):
        raise UpgradeRequired(settings.SVC_MOBILE_MIN_VERSION)


class MeView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA

    @extend_schema(
        tags=["auth"],
        responses={200: s.MeOutput},
        parameters=[
            OpenApiParameter(
                "X-Service-Client",
                str,
                OpenApiParameter.HEADER,
                description="Installed apps send mobile/<version>; old builds get 426.",
            ),
        ],
        summary="Who you are, your active practice, role and workspaces",
        description="Any credential (API key, OAuth token, browser session). Answers user, "
        "session.activeOrganizationId and organization {id, name, memberRole, workspaces, defaultWorkspace, "
        "hideOtherWorkspace, pmsAccess, accessGeneration} (API keys read accessGeneration 0). A mobile client "
        "(X-Service-Client: mobile/<version>) below the supported floor gets 426 with minimumVersion.",
    )
    def get(self, request):
        check_mobile_floor(request)
        try:
            choice = self.organization_choice(request)
        except OrganizationAmbiguous:
            # The identity route answers for a caller in several practices: no practice chosen yet.
            choice = self._choice = selectors.OrganizationChoice(None, None)
        # auth_me's dict holds only JSON-ready values (UUIDs, strings, ints, lists), so it is rendered as it is;
        # MeOutput documents it (tests/accounts/test_request_cost.py checks the two agree).
        return Response(selectors.auth_me(user=request.user, credential=request.auth, choice=choice))


class OrganizationMineView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA

    @extend_schema(
        tags=["organization"],
        responses={200: s.OrganizationListOutput},
        summary="Practices you belong to, with your role in each",
        description="Browser session only (machine credentials: 403 BROWSER_SESSION_REQUIRED). Every practice you "
        "belong to, with your role in each.",
    )
    def get(self, request):
        items = [
            {
                **{f: getattr(m.organization, f) for f in ("id", "name", "country", "region", "created_at")},
                "member_role": m.role,
            }
            for m in selectors.memberships_of(request.user).select_related("organization")
        ]
        return Response(s.OrganizationListOutput({"items": items}).data)


class OrganizationActiveView(BaseApiView):
    permission = "member:read"
    scope_area = "settings"

    @extend_schema(
        tags=["organization"],
        responses={200: s.MeOrganizationOutput},
        summary="The practice this session acts in, with your role and workspaces",
        description="Browser session only (machine credentials: 403 BROWSER_SESSION_REQUIRED). The session's active "
        "practice with your role and workspaces.",
    )
    def get(self, request):
        body = selectors.auth_me(user=request.user, credential=request.auth, choice=self.organization_choice(request))
        return Response(s.MeOrganizationOutput(body["organization"]).data)


class OrganizationMembersView(BaseApiView):
    permission = "member:read"
    scope_area = "settings"

    @extend_schema(
        tags=["organization"],
        responses={200: s.MemberListOutput},
        summary="Members of the active practice",
        description="Browser session only (machine credentials: 403 BROWSER_SESSION_REQUIRED). The members of the "
        "active practice with their roles.",
    )
    def get(self, request):
        items = [
            {
                "user_id": m.user_id,
                "email": m.user.email,
                "name": m.user.name,
                "role": m.role,
                "joined_at": m.created_at,
            }
            for m in selectors.membership_list(organization=self.organization)
        ]
        return Response(s.MemberListOutput({"items": items}).data)


class RequestPasswordResetView(BaseApiView):
    public = True
    rate_limits = (PASSWORD_RESET_LIMIT,)

    @extend_schema(
        tags=["auth"],
        request=s.PasswordResetRequestInput,
        responses={200: s.StatusOutput},
        summary="E-mail a password reset link",
        description="Public. Always answers 200 {status: true}, whether or not an account has the address (it never "
        "says which). If an active account has it, a link to {app}/reset-password?token=… is e-mailed (text and "
        "HTML); it works once, for an hour, and stops working when the password changes or the person signs in. "
        "Limited to 10 requests a minute per client address (429 with Retry-After), and to 3 links an hour per "
        "e-mail address (further requests are answered the same and send nothing).",
    )
    def post(self, request):
        data = self.parse_body(s.PasswordResetRequestInput).validated_data
        password_reset.password_reset_request(email=data["email"])
        return Response({"status": True})


class ResetPasswordView(BaseApiView):
    public = True
    rate_limits = (PASSWORD_RESET_LIMIT,)

    @extend_schema(
        tags=["auth"],
        request=s.PasswordResetInput,
        responses={200: s.StatusOutput},
        summary="Set a new password with a reset link's token",
        description="Public. The token of the e-mailed link and the new password (the same rules as sign-up: 400 "
        "naming newPassword). Signs the person out everywhere (every session ends); sign in again with the new "
        "password. A wrong, used or expired token: 400 INVALID_RESET_TOKEN. Limited to 10 a minute per client "
        "address.",
    )
    def post(self, request):
        data = self.parse_body(s.PasswordResetInput).validated_data
        password_reset.password_reset(token=data["token"], new_password=data["new_password"])
        return Response({"status": True})


class SendVerificationEmailView(BaseApiView):
    public = True
    rate_limits = (EMAIL_VERIFICATION_LIMIT,)

    @extend_schema(
        tags=["auth"],
        request=s.VerificationRequestInput,
        responses={200: s.StatusOutput},
        summary="E-mail the address verification link again",
        description="Public. Always answers 200 {status: true}: it never says whether an account has the address. If "
        "an active account has it and has not verified it, a link to {app}/verify-email?token=… is e-mailed (valid "
        "24 hours; sign-up sends the first one). 10 a minute per client address (429 with Retry-After), 3 links an "
        "hour per e-mail address (further requests are answered the same and send nothing).",
    )
    def post(self, request):
        data = self.parse_body(s.VerificationRequestInput).validated_data
        email_verification.verification_request(email=data["email"])
        return Response({"status": True})


class VerifyEmailView(BaseApiView):
    public = True
    error_statuses = ("409",)
    rate_limits = (EMAIL_VERIFICATION_LIMIT,)

    @extend_schema(
        tags=["auth"],
        parameters=[s.VerifyEmailQuery],
        responses={200: s.VerifiedOutput},
        summary="Open an e-mail verification link",
        description="Public; the token is the link's. Verifies the account's address, or, for a change-of-address "
        "link, makes the new address the sign-in address (verified). Opening a link again changes nothing. A "
        "wrong or expired token, or a change link whose address was changed since: 400 INVALID_VERIFICATION_TOKEN. "
        "A new address another account took meanwhile: 409 EMAIL_TAKEN.",
    )
    def get(self, request):
        token = self.parse_query(s.VerifyEmailQuery).validated_data["token"]
        user = email_verification.verify(token=token)
        return Response({"status": True, "email": user.email})
