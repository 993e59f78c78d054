"""OpenAPI: every operation documents the ApiError envelope for the failures it can answer with."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from apps.core.fields import UUID_SCHEMA
from apps.core.naming import to_camel
from apps.core.serializers import StrictSerializer


class ApiErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. VALIDATION_ERROR, PATIENT_MERGED.")
    message = serializers.CharField(help_text="Human-readable explanation.")
    details = serializers.DictField(
        help_text="Structured context. Validation errors carry `fields`: camelCase field name → messages; "
        "429 carries `retryAfter`; 500 carries `errorId`; 401 for a refused bearer carries `reason`."
    )

    class Meta:
        ref_name = "ApiError"


_ERROR_DESCRIPTIONS = {
    "400": "Invalid request (VALIDATION_ERROR with details.fields).",
    "401": "Missing, invalid or expired credential. Without a credential: `WWW-Authenticate: Bearer "
    'realm="api"`. A refused bearer adds `error="invalid_token"` and an `error_description`, and '
    "`details.reason` says what to do: `stale` (unknown, expired or revoked: refresh and retry), "
    "`wrong_audience` (an OAuth token issued with `resource` for another server, e.g. `{base_url}/mcp`, with "
    "`details.tokenResource`: a refresh keeps the audience, so authorize again without `resource` or with "
    "`resource={base_url}`), `malformed` (the Authorization header itself).",
    "403": "Role, scope, practice selection or surface refuses the request.",
    "404": "Unknown resource, or one of another practice.",
    "405": "Method not allowed on this route.",
    "409": "Conflict with the current state (see code).",
    "413": "Request body over this route's limit.",
    "415": "Request body is not JSON.",
    "429": "Rate limited; see the Retry-After header.",
    "503": "A dependency is unavailable (AUTH_UNAVAILABLE when the credential cannot be verified); Retry-After.",
}


class ServiceAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer, direction):
        # Input/Output are our Python-side suffixes; the wire names drop them (SignUp, SignUpRequest, Me).
        name = super().get_serializer_name(serializer, direction)
        for suffix in ("Output", "Input"):
            if name.endswith(suffix) and len(name) > len(suffix):
                return name[: -len(suffix)]
        return name

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if not getattr(self.view, "public", False):
            parameters.append(
                OpenApiParameter(
                    "X-Organization-ID",
                    UUID_SCHEMA,
                    OpenApiParameter.HEADER,
                    description="The practice to act in; needed when the caller belongs to several. "
                    "Ignored for OAuth tokens, which name their practice.",
                )
            )
        return parameters

    def _process_override_parameters(self, direction="request"):
        # Query serializers are read through BaseApiView.parse_query, which takes the camelCase wire names.
        renamed = {}
        for (name, location), parameter in super()._process_override_parameters(direction).items():
            if location == OpenApiParameter.QUERY:
                name = to_camel(name)
                if parameter is not None:
                    parameter["name"] = name
            renamed[name, location] = parameter
        return renamed

    def _map_basic_serializer(self, serializer, direction):
        # A StrictSerializer answers 400 to any key it does not know: the request schema says so.
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictSerializer):
            schema["additionalProperties"] = False
        return schema

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        public = getattr(self.view, "public", False)
        codes = ["400", "403", "404", "405", "429", "503", *getattr(self.view, "error_statuses", ())]
        if not public:
            codes.append("401")
        if self.method in ("POST", "PUT", "PATCH"):
            codes += ["413", "415"]
        for code in sorted(codes):
            if code not in responses:
                responses[code] = self._get_response_for_code(ApiErrorSerializer, code, direction=direction)
                responses[code]["description"] = _ERROR_DESCRIPTIONS[code]
        return responses


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "apps.accounts.authentication.ApiKeyAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (svc_key_…) or an OAuth access token (svc_oat_…). "
            "Send X-Organization-ID when the key's owner belongs to several practices.",
        }


class SessionCookieScheme(OpenApiAuthenticationExtension):
    target_class = "apps.accounts.authentication.SessionCookieAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "Browser session from POST /auth/sign-in/email; unsafe methods need X-CSRFToken.",
        }


class OAuthTokenScheme(OpenApiAuthenticationExtension):
    target_class = "apps.oauth.authentication.OAuthTokenAuthentication"
    name = "oauth2"

    def get_security_definition(self, auto_schema):
        from django.conf import settings

        base = settings.SVC_BASE_URL
        return {
            "type": "oauth2",
            "description": "OAuth 2.0 access tokens (svc_oat_…) of a connection bound to one practice. GET, HEAD "
            "and OPTIONS need read or the route area's .read or .write; other methods need write or the area's "
            ".write. Scopes only narrow the person's role.",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": f"{base}/auth/oauth2/authorize",
                    "tokenUrl": f"{base}/auth/oauth2/token",
                    "refreshUrl": f"{base}/auth/oauth2/token",
                    "scopes": settings.OAUTH_SCOPES,
                }
            },
        }
