"""OAuth 2.0 protocol views under /auth/oauth2/ and the discovery documents: django-oauth-toolkit's views,
narrowed to this service's rules.

- authorize (GET): validates the request first (unknown client or redirect_uri → an error page, never a redirect;
  plain or missing PKCE method → error redirect before any consent), routes a foreign `region` to its own base URL,
  sends a signed-out person through /auth/oauth2/continue, then renders the consent page;
- consent (POST): the page's target; Approve needs a practice where the person is owner or manager (re-read);
- continue: server-rendered sign-in (password, then the second factor when the person has one);
- token, revoke, introspect, register: unauthenticated, 300 per minute per address block, OAuth's JSON errors.

These are protocol routes, not API routes: `public = True` tells the route walk they stand outside the API
credential machinery (authorize and consent check the browser session themselves; the others authenticate the
client the OAuth way).
"""

import calendar
import hashlib
import logging
import uuid
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import authenticate, login
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django_otp import login as otp_login
from django_ratelimit.core import get_usage
from oauth2_provider import views as dot
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.oauth2_validators import is_valid_resource_uri
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error
from redis.exceptions import RedisError

from apps.accounts import selectors
from apps.accounts.limits import SIGN_IN_LIMIT
from apps.accounts.services import sessions as user_sessions
from apps.accounts.services import two_factor
from apps.core.errors import ApiError, NotFound, RateLimited
from apps.core.errors import render as render_api_error
from apps.core.limits import TokenBucketLimit, client_address_block
from apps.core.views import lacks_method
from apps.oauth import registration
from apps.oauth.models import AccessToken
from apps.oauth.tokens import REGIONS
from apps.oauth.validators import CONSENTING_ROLES, consenting_membership, own_resource

logger = logging.getLogger("apps.oauth")

AUTHORIZE_PATH = "/auth/oauth2/authorize"
# The pages a person sees and posts from: any error there is shown as the error page (apps.core.browser_pages).
BROWSER_PAGES = (AUTHORIZE_PATH, "/auth/oauth2/consent", "/auth/oauth2/continue")
DISCOVERY_CACHE_CONTROL = "public, max-age=3600"


# --- pages --------------------------------------------------------------------------------------------------------


def error_page(request, *, title: str, message: str, status: int = 400):
    """A server-rendered error page (kept HTML: the JSON error middleware lets `keeps_html` responses through)."""
    response = render(request, "oauth/error.html", {"title": title, "message": message}, status=status)
    response.keeps_html = True
    return response


def oauth_error(status: int, error: str, description: str, headers: dict | None = None) -> JsonResponse:
    """RFC 6749 §5.2 shape, which clients of token, revoke, introspect and register expect."""
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    for name, value in (headers or {}).items():
        response[name] = value
    return response


# --- unauthenticated endpoints: address-block window --------------------------------------------------------------


class UnauthenticatedWindowMixin:
    """300 requests per minute per address block (IPv4 /24, IPv6 /64) across the unauthenticated OAuth endpoints;
    429 with Retry-After 60. A request without a usable client address is refused. Redis trouble fails open
    (logged): codes, verifiers and tokens are unguessable, and the endpoints must keep working."""

    public = True
    protocol_route = True
    window_group = "oauth.unauthenticated"

    @method_decorator(csrf_exempt)  # no cookies involved: the client authenticates the OAuth way
    def dispatch(self, request, *args, **kwargs):
        if lacks_method(self, request):  # 405 with Allow, without spending the window
            return self.http_method_not_allowed(request, *args, **kwargs)
        refusal = self.check_window(request)
        return refusal or super().dispatch(request, *args, **kwargs)

    def check_window(self, request):
        block = client_address_block(request, ipv4_prefix=24, ipv6_prefix=64)
        if block is None:
            return oauth_error(400, "invalid_request", "The request carries no usable client address.")
        try:
            usage = get_usage(
                request,
                group=self.window_group,
                key=lambda group, req: block,
                rate=settings.SVC_OAUTH_UNAUTHENTICATED_RATE,
                increment=True,
            )
        except (RedisError, ConnectionError) as exc:
            logger.warning("oauth window unavailable (%s); failing open", type(exc).__name__)
            return None
        if usage is None or usage["time_left"] < 0:
            logger.warning("oauth window unavailable; failing open")
            return None
        if usage["should_limit"]:
            return oauth_error(
                429, "rate_limited", "Too many requests from your network; retry in a minute.", {"Retry-After": "60"}
            )
        return None


# --- authorize and consent ----------------------------------------------------------------------------------------


def _issuer(request) -> str:
    return oauth2_settings.oauth2_authorization_server_issuer(request)


class AuthorizeView(dot.AuthorizationView):
    """GET /auth/oauth2/authorize: validate, route by region, sign in, then the consent page."""

    public = True
    protocol_route = True
    template_name = "oauth/consent.html"
    redirect_field_name = "next"

    def get_login_url(self):
        return reverse("oauth2_provider:continue")

    def dispatch(self, request, *args, **kwargs):
        region = request.GET.get("region")
        if region is not None and request.method == "GET":
            if region not in REGIONS:
                return error_page(request, title="Unknown region", message="region must be eu or us.")
            if region != settings.SVC_REGION:
                base = settings.SVC_REGION_BASE_URLS.get(region)
                if not base:
                    return error_page(request, title="Unknown region", message=f"No {region} region is configured.")
                return HttpResponseRedirect(f"{base}{request.path}?{request.META.get('QUERY_STRING', '')}")
        if "approval_prompt" in request.GET:
            # Consent is always asked: a silent re-approval would bind no practice.
            request.GET = request.GET.copy()
            request.GET.pop("approval_prompt")
        return super().dispatch(request, *args, **kwargs)

    def handle_no_permission(self):
        # Validate before sending anyone to sign in: a bad client, redirect_uri or PKCE method fails here.
        try:
            self.validate_authorization_request(self.request)
        except OAuthToolkitError as error:
            return self.error_response(error, application=None)
        return super().handle_no_permission()

    def get(self, request, *args, **kwargs):
        for resource in request.GET.getlist("resource"):
            if is_valid_resource_uri(resource) and not own_resource(resource):
                try:
                    _, credentials = self.validate_authorization_request(request)
                except OAuthToolkitError as error:
                    return self.error_response(error, application=None)
                error = CustomOAuth2Error(
                    error="invalid_target",
                    description=f"The resource '{resource}' is not served by this authorization server.",
                    state=credentials.get("state"),
                )
                return self.error_response(
                    OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"]), None
                )
        return super().get(request, *args, **kwargs)

    def error_response(self, error, application, **kwargs):
        redirect, response = OAuthLibMixin.error_response(self, error, **kwargs)
        oauthlib_error = response["error"]
        if redirect and oauthlib_error.redirect_uri:
            url = response["url"]
            if oauth2_settings.COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS:
                url = _add_iss_to_redirect(url, _issuer(self.request))
            return self.redirect(url, application)
        return error_page(
            self.request,
            title="This app's request cannot be completed",
            message=oauthlib_error.description or oauthlib_error.error,
            status=oauthlib_error.status_code or 400,
        )

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        application = kwargs.get("application")
        memberships = list(selectors.memberships_of(self.request.user).select_related("organization"))
        context.update(
            unverified=application is not None
            and application.registration_source == application.RegistrationSource.DCR,
            scope_words=list(zip(kwargs.get("scopes", []), kwargs.get("scopes_descriptions", []), strict=False)),
            eligible=[m for m in memberships if m.role in CONSENTING_ROLES],
            ineligible=[m for m in memberships if m.role not in CONSENTING_ROLES],
            consent_url=reverse("oauth2_provider:consent"),
            hidden_fields=[field for field in context["form"].hidden_fields()],
        )
        return context


class ConsentView(AuthorizeView):
    """POST /auth/oauth2/consent: Approve (with a practice) or Deny. CSRF-protected like any form."""

    http_method_names = ["post"]
    _organization_id = None

    def handle_no_permission(self):
        return error_page(
            self.request, title="Signed out", message="Sign in again and restart from the app.", status=403
        )

    def form_invalid(self, form):
        return error_page(self.request, title="Incomplete request", message="The consent form was incomplete.")

    def form_valid(self, form):
        data = form.cleaned_data
        application = get_application_model().objects.filter(client_id=data["client_id"]).first()
        if (
            application is None
            or registration.expired_unapproved(application)
            or not application.redirect_uri_allowed(data["redirect_uri"])
        ):
            # Never redirect anywhere this client has not registered, not even to deny.
            return error_page(self.request, title="Unknown app", message="This app or its return address is unknown.")
        if data.get("allow"):
            membership = None
            raw = self.request.POST.get("organization_id", "")
            try:
                membership = consenting_membership(self.request.user, uuid.UUID(raw))
            except ValueError:
                membership = None
            if membership is None:
                return error_page(
                    self.request,
                    title="Not allowed",
                    message="Only an owner or manager of the chosen practice can connect an app to it.",
                    status=403,
                )
            self._organization_id = membership.organization_id
        return super().form_valid(form)

    def create_authorization_response(self, request, scopes, credentials, allow):
        if allow:
            credentials["organization_id"] = self._organization_id
        return super().create_authorization_response(request, scopes, credentials, allow)


# --- continue: sign-in for the authorize flow ---------------------------------------------------------------------


def safe_next(value: str | None) -> str | None:
    """Only this server's own authorize URL (relative, same origin) may be the destination after sign-in."""
    if not value or value.startswith("//") or "\\" in value:
        return None
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or parts.path != AUTHORIZE_PATH or parts.fragment:
        return None
    return value


SECOND_STEP_LIMITS = (
    TokenBucketLimit(
        "sensitive.person",
        setting="SVC_SENSITIVE_USER_BUCKET",
        key=lambda request, view: two_factor.challenge_user_id(request.session),
        fail_open=False,
    ),
    TokenBucketLimit(
        "sensitive.address",
        setting="SVC_SENSITIVE_ADDRESS_BUCKET",
        key=lambda request, view: client_address_block(request),
        fail_open=False,
    ),
)


@method_decorator(never_cache, name="dispatch")
class ContinueView(View):
    """GET/POST /auth/oauth2/continue?next=/auth/oauth2/authorize?…: e-mail and password, then the second factor
    when the person has one, then back to the authorization request."""

    public = True
    protocol_route = True
    template_name = "oauth/continue.html"

    def _page(self, request, next_url, *, step="password", error=None, status=200, email=""):
        response = render(
            request,
            self.template_name,
            {"next": next_url, "step": step, "error": error, "email": email},
            status=status,
        )
        response.keeps_html = True
        return response

    def get(self, request):
        next_url = safe_next(request.GET.get("next"))
        if next_url is None:
            return error_page(request, title="Nothing to continue", message="Start again from the app.")
        if request.user.is_authenticated:
            return HttpResponseRedirect(next_url)
        return self._page(request, next_url)

    def post(self, request):
        next_url = safe_next(request.POST.get("next") or request.GET.get("next"))
        if next_url is None:
            return error_page(request, title="Nothing to continue", message="Start again from the app.")
        try:
            if request.POST.get("step") == "code":
                return self._second_step(request, next_url)
            return self._password_step(request, next_url)
        except RateLimited as exc:
            response = self._page(request, next_url, error=exc.message, status=429)
            for name, value in exc.headers().items():
                response[name] = value
            return response

    def _password_step(self, request, next_url):
        SIGN_IN_LIMIT.check(request, self)
        email = (request.POST.get("email") or "").strip().lower()
        user = authenticate(request, username=email, password=request.POST.get("password") or "")
        if user is None:
            return self._page(request, next_url, error="Wrong e-mail or password.", status=400, email=email)
        if two_factor.has_two_factor(user):
            two_factor.open_challenge(session=request.session, user=user)
            return self._page(request, next_url, step="code")
        return self._signed_in(request, user, next_url)

    def _second_step(self, request, next_url):
        for limit in SECOND_STEP_LIMITS:
            limit.check(request, self)
        method = "backup" if request.POST.get("method") == "backup" else "totp"
        try:
            code = request.POST.get("code") or ""
            user = two_factor.complete_challenge(session=request.session, code=code, method=method)
        except RateLimited:
            raise
        except ApiError as exc:
            step = "code" if two_factor.challenge_user_id(request.session) else "password"
            return self._page(request, next_url, step=step, error=exc.message, status=400)
        response = self._signed_in(request, user, next_url)
        device = two_factor.active_device(user)
        if device is not None:
            otp_login(request, device)
        return response

    @staticmethod
    def _signed_in(request, user, next_url):
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        user_sessions.record_sign_in(django_request=request, user=user)
        first = selectors.memberships_of(user).first()
        if first is not None:
            request.session[selectors.SESSION_ACTIVE_ORG_KEY] = str(first.organization_id)
        return HttpResponseRedirect(next_url)


# --- token, revoke, introspect, register -------------------------------------------------------------------------


class TokenView(UnauthenticatedWindowMixin, dot.TokenView):
    """POST /auth/oauth2/token (form-encoded): authorization_code with PKCE, refresh_token with rotation."""


class RevokeView(UnauthenticatedWindowMixin, dot.RevokeTokenView):
    """POST /auth/oauth2/revoke (RFC 7009): revoking a token disconnects its connection."""


@method_decorator(csrf_exempt, name="dispatch")
class IntrospectView(UnauthenticatedWindowMixin, OAuthLibMixin, View):
    """POST /auth/oauth2/introspect (RFC 7662). The caller names its client (client_id; confidential clients
    authenticate); only that client's live access tokens are reported active. Access tokens only: a refresh token
    (live or not) answers {"active": false}, like an unknown one. Adds organization_id."""

    http_method_names = ["post", "options"]

    def post(self, request):
        Application = get_application_model()
        client_id = request.POST.get("client_id")
        application = None
        if self.authenticate_client(request):
            application = Application.objects.filter(client_id=self._basic_client_id(request) or client_id).first()
        elif client_id:
            candidate = Application.objects.filter(client_id=client_id).first()
            if candidate is not None and candidate.client_type == Application.CLIENT_PUBLIC:
                application = candidate
        if application is None or registration.expired_unapproved(application):
            return oauth_error(401, "invalid_client", "Client authentication failed.", {"WWW-Authenticate": "Basic"})
        value = request.POST.get("token")
        if not value:
            return oauth_error(400, "invalid_request", "Token parameter is missing.")
        checksum = hashlib.sha256(value.encode("utf-8")).hexdigest()
        token = (
            AccessToken.objects.select_related("user", "connection")
            .filter(token_checksum=checksum, application=application)
            .first()
        )
        inactive = JsonResponse({"active": False})
        if token is None or not token.is_valid() or token.connection is None or token.connection.revoked_at:
            return inactive
        body = {
            "active": True,
            "scope": token.scope,
            "client_id": application.client_id,
            "token_type": "Bearer",
            "exp": int(calendar.timegm(token.expires.timetuple())),
            "iat": int(calendar.timegm(token.created.timetuple())),
            "sub": str(token.user_id),
            "iss": _issuer(request),
            "organization_id": str(token.organization_id),
        }
        if token.user is not None:
            body["username"] = token.user.get_username()
        if token.resource:
            body["aud"] = token.resource
        response = JsonResponse(body)
        response["Cache-Control"] = "no-store"
        return response

    @staticmethod
    def _basic_client_id(request) -> str | None:
        import base64
        from urllib.parse import unquote_plus

        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Basic "):
            return None
        try:
            return unquote_plus(base64.b64decode(header[6:]).decode().split(":", 1)[0])
        except (ValueError, UnicodeDecodeError):
            return None


class RegisterView(UnauthenticatedWindowMixin, dot.DynamicClientRegistrationView):
    """POST /auth/oauth2/register (RFC 7591): every client public, PKCE S256, read write offline_access."""

    window_group = "oauth.register"
    http_method_names = ["post", "options"]

    def post(self, request, *args, **kwargs):
        import json

        try:
            metadata = json.loads(request.body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return oauth_error(400, "invalid_client_metadata", "The body must be a JSON object.")
        try:
            registered = registration.register(metadata)
        except registration.RegistrationError as exc:
            return oauth_error(400, exc.error, exc.description)
        response = JsonResponse(registered.body(), status=201)
        response["Cache-Control"] = "no-store"
        return response


class NotOfferedView(View):
    """delete-consent and update-consent: not offered (404 in the error envelope, any method)."""

    public = True
    protocol_route = True

    @method_decorator(csrf_exempt)
    def dispatch(self, request, *args, **kwargs):
        return render_api_error(NotFound("Not offered."))


# --- discovery ----------------------------------------------------------------------------------------------------


@method_decorator(csrf_exempt, name="dispatch")  # a public GET document: no cookie, no CSRF
class ServerMetadataView(dot.OAuthServerMetadataView):
    """RFC 8414 at /.well-known/oauth-authorization-server/auth (issuer {base_url}/auth)."""

    public = True
    protocol_route = True

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Cache-Control"] = DISCOVERY_CACHE_CONTROL
        return response


@method_decorator(csrf_exempt, name="dispatch")  # a public GET document: no cookie, no CSRF
class ProtectedResourceMetadataView(dot.OAuthProtectedResourceMetadataView):
    """RFC 9728 at /.well-known/oauth-protected-resource/mcp. scopes_supported lists offline_access like the AS
    metadata and the /mcp challenge: an agent that builds its scope request from this list must be able to ask for
    a refresh token."""

    public = True
    protocol_route = True

    def get_resource(self, request):
        return settings.SVC_MCP_URL

    def get_authorization_servers(self, request):
        return [settings.SVC_OAUTH_ISSUER]

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Cache-Control"] = DISCOVERY_CACHE_CONTROL
        return response
