"""One error envelope for every failure: {"code", "message", "details"}.

Domain errors are ApiError subclasses with their own code and status. DRF and Django failures are mapped here,
so no HTML page and no stack trace ever reaches a client. A 500 carries an errorId that is also in the log.
"""

import logging
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.http.multipartparser import MultiPartParserError
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from apps.core.naming import to_camel

logger = logging.getLogger("apps.errors")


class ApiError(Exception):
    status_code = 400
    code = "BAD_REQUEST"
    message = "The request could not be processed."

    def __init__(self, message: str | None = None, *, details: dict | None = None, code: str | None = None):
        self.message = message or self.message
        self.details = details or {}
        if code:
            self.code = code
        super().__init__(self.message)

    def headers(self) -> dict[str, str]:
        return {}

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class ValidationFailed(ApiError):
    status_code = 400
    code = "VALIDATION_ERROR"
    message = "The request is invalid."

    @classmethod
    def for_field(cls, field: str, problem: str) -> "ValidationFailed":
        return cls(f"{field}: {problem}", details={"fields": {field: [problem]}})


def _quotable(value: str) -> str:
    """What RFC 6750 §3 allows inside a quoted auth-param: printable ASCII without the quote and the backslash."""
    return "".join(ch for ch in value if " " <= ch <= "~" and ch not in '"\\')


def bearer_challenge(**params: str | None) -> str:
    """A `Bearer` WWW-Authenticate value (RFC 6750 §3): the given auth-params quoted, in order; None ones left out."""
    return "Bearer " + ", ".join(f'{name}="{_quotable(value)}"' for name, value in params.items() if value is not None)


# details.reason of a 401 for a presented bearer: "stale" (unknown, expired or revoked: refresh and retry),
# "wrong_audience" (a refresh yields a token for the same other resource: authorize for this one instead) or
# "malformed" (the Authorization header itself is wrong).
REASON_STALE = "stale"
REASON_WRONG_AUDIENCE = "wrong_audience"
REASON_MALFORMED = "malformed"


class NotAuthenticated(ApiError):
    """401. Without a reason (no credential presented) the challenge is bare, as RFC 6750 §3.1 asks; with one (a
    bearer was presented and refused) it carries error="invalid_token", the message as error_description, and
    details.reason tells a client whether refreshing can help."""

    status_code = 401
    code = "UNAUTHENTICATED"
    message = "Authentication credentials are missing, invalid or expired."

    def __init__(self, message: str | None = None, *, reason: str | None = None, details: dict | None = None):
        super().__init__(message, details=({"reason": reason} if reason else {}) | (details or {}))
        self.error = "invalid_token" if reason else None

    def headers(self) -> dict[str, str]:
        description = self.message if self.error else None
        return {"WWW-Authenticate": bearer_challenge(realm="api", error=self.error, error_description=description)}


class PermissionDenied(ApiError):
    status_code = 403
    code = "PERMISSION_DENIED"
    message = "Your role does not allow this action."


class InsufficientScope(ApiError):
    status_code = 403
    code = "INSUFFICIENT_SCOPE"
    message = "The token's scopes do not cover this request."


class BrowserSessionRequired(ApiError):
    status_code = 403
    code = "BROWSER_SESSION_REQUIRED"
    message = "This surface is available to a signed-in browser session only."


class TransportNotAllowed(ApiError):
    """Clinical routes: a signed-in member's browser session only; API keys and OAuth tokens never reach them."""

    status_code = 403
    code = "transport_not_allowed"
    message = "Clinical routes accept a signed-in member's browser session only, not API keys or OAuth tokens."


class PmsWorkspaceUnavailable(ApiError):
    status_code = 403
    code = "PMS_WORKSPACE_UNAVAILABLE"
    message = "This practice has no clinical workspace."


class OrganizationAmbiguous(ApiError):
    status_code = 403
    code = "ORGANIZATION_AMBIGUOUS"
    message = "You belong to several practices: send X-Organization-ID."


class OrganizationForbidden(ApiError):
    status_code = 403
    code = "ORGANIZATION_FORBIDDEN"
    message = "You are not a member of the practice named in X-Organization-ID."


class NoOrganization(ApiError):
    status_code = 403
    code = "NO_ORGANIZATION"
    message = "You are not a member of any practice."


class NotFound(ApiError):
    status_code = 404
    code = "NOT_FOUND"
    message = "The resource does not exist."


class MethodNotAllowed(ApiError):
    status_code = 405
    code = "METHOD_NOT_ALLOWED"
    message = "This method is not allowed on this route."


class UnsupportedMediaType(ApiError):
    status_code = 415
    code = "UNSUPPORTED_MEDIA_TYPE"
    message = "The request body must be application/json."


class NotAcceptable(ApiError):
    status_code = 406
    code = "NOT_ACCEPTABLE"
    message = "The requested representation is not available."


class PayloadTooLarge(ApiError):
    status_code = 413
    code = "PAYLOAD_TOO_LARGE"
    message = "The request body is larger than this route accepts."


class UpgradeRequired(ApiError):
    status_code = 426
    code = "CLIENT_UPGRADE_REQUIRED"
    message = "This app version is no longer supported; please update."

    def __init__(self, minimum_version: str):
        super().__init__(details={"minimumVersion": minimum_version})
        self.minimum_version = minimum_version

    def body(self) -> dict[str, Any]:
        return {**super().body(), "minimumVersion": self.minimum_version}


class RateLimited(ApiError):
    status_code = 429
    code = "RATE_LIMITED"
    message = "Too many requests; retry later."

    def __init__(self, retry_after: int, message: str | None = None, *, code: str | None = None):
        self.retry_after = max(1, int(retry_after))
        super().__init__(message, details={"retryAfter": self.retry_after}, code=code)

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class ServiceUnavailable(ApiError):
    status_code = 503
    code = "SERVICE_UNAVAILABLE"
    message = "A dependency is unavailable; retry shortly."
    retry_after = 5

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class AuthUnavailable(ServiceUnavailable):
    code = "AUTH_UNAVAILABLE"
    message = "Your credential cannot be verified right now; retry the same request shortly without refreshing."


def render(error: ApiError) -> JsonResponse:
    response = JsonResponse(error.body(), status=error.status_code)
    for name, value in error.headers().items():
        response[name] = value
    return response


def server_error_body(exc: BaseException | None) -> tuple[dict[str, Any], str]:
    error_id = uuid.uuid4().hex
    logger.error("unhandled error errorId=%s", error_id, exc_info=exc)
    return (
        {
            "code": "INTERNAL_ERROR",
            "message": "Something went wrong on our side.",
            "details": {"errorId": error_id},
        },
        error_id,
    )


def _camel_fields(detail: Any) -> Any:
    """DRF error detail → {"fieldName": ["message", ...]} with camelCase keys at every depth."""
    if isinstance(detail, dict):
        return {to_camel(str(k)) if k != "non_field_errors" else "body": _camel_fields(v) for k, v in detail.items()}
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return [str(item) for item in detail]
        return [_camel_fields(item) for item in detail]
    return [str(detail)]


def _first_problem(fields: Any, path: str = "") -> tuple[str, str] | None:
    """The first (dotted.field.path, message) in a nested fields tree, for a readable top-level message."""
    if isinstance(fields, dict):
        for name, value in fields.items():
            found = _first_problem(value, f"{path}.{name}" if path else str(name))
            if found:
                return found
    elif isinstance(fields, list):
        for index, value in enumerate(fields):
            if isinstance(value, str):
                return path, value
            found = _first_problem(value, f"{path}[{index}]")
            if found:
                return found
    return None


def _validation_error(detail: Any) -> ApiError:
    fields = _camel_fields(detail if isinstance(detail, dict) else {"body": detail})
    first = _first_problem(fields)
    message = f"{first[0]}: {first[1]}" if first else "The request is invalid."
    return ValidationFailed(message, details={"fields": fields})


def to_api_error(exc: BaseException) -> ApiError | None:
    """Map any known exception to an ApiError; None means it is an unexpected server error."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, drf_exceptions.ValidationError):
        return _validation_error(exc.detail)
    if isinstance(exc, drf_exceptions.ParseError):
        return ValidationFailed(f"body: {exc.detail}", details={"fields": {"body": [str(exc.detail)]}})
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return NotAuthenticated(str(exc.detail) if exc.detail else None)
    if isinstance(exc, drf_exceptions.PermissionDenied):
        if str(exc.detail).startswith("CSRF Failed"):
            return PermissionDenied(str(exc.detail), code="CSRF_FAILED")
        return PermissionDenied(str(exc.detail))
    if isinstance(exc, (drf_exceptions.NotFound, Http404)):
        return NotFound()
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return MethodNotAllowed(str(exc.detail))
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return UnsupportedMediaType(str(exc.detail))
    if isinstance(exc, drf_exceptions.NotAcceptable):
        return NotAcceptable(str(exc.detail))
    if isinstance(exc, drf_exceptions.Throttled):
        return RateLimited(int(exc.wait or 1))
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge()
    if isinstance(exc, TooManyFieldsSent):
        return ApiError(
            f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} query parameters or form fields.",
            code="TOO_MANY_FIELDS",
            details={"maxFields": settings.DATA_UPLOAD_MAX_NUMBER_FIELDS},
        )
    if isinstance(exc, TooManyFilesSent):
        return ApiError(
            f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files.",
            code="TOO_MANY_FILES",
            details={"maxFiles": settings.DATA_UPLOAD_MAX_NUMBER_FILES},
        )
    if isinstance(exc, MultiPartParserError):
        return ValidationFailed.for_field("body", "is not a well-formed multipart/form-data body")
    if isinstance(exc, SuspiciousOperation):  # a malformed multipart body, a bad Host header, ...
        return ApiError("The request is malformed.", code="BAD_REQUEST")
    if isinstance(exc, DjangoPermissionDenied):
        return PermissionDenied()
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable: %s", type(exc).__name__)
        return ServiceUnavailable("The database is unavailable; retry shortly.")
    if isinstance(exc, drf_exceptions.APIException):
        return ApiError(str(exc.detail), code=str(exc.default_code).upper())
    return None


def api_exception_handler(exc: BaseException, context: dict) -> Response:
    error = to_api_error(exc)
    if error is None:
        if isinstance(exc, DatabaseError):
            logger.error("database error %s", type(exc).__name__)
        body, _ = server_error_body(exc)
        return Response(body, status=500)
    return Response(error.body(), status=error.status_code, headers=error.headers())


# Django-level handlers (config.urls): the same envelope outside DRF views.
def handler400(request, exception=None):
    return render(ValidationFailed("The request is malformed."))


def handler403(request, exception=None):
    return render(PermissionDenied())


def handler404(request, exception=None):
    return render(NotFound())


def handler500(request):
    body, _ = server_error_body(None)
    return JsonResponse(body, status=500)


def csrf_failure(request, reason: str = ""):
    return render(PermissionDenied(f"CSRF check failed: {reason}", code="CSRF_FAILED"))
