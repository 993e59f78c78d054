"""Every authenticated write through the API, recorded: one audit entry per POST, PUT, PATCH or DELETE answered 2xx.

How it sees the request: DRF's authentication sets `request.user` and `request.auth` (the core Credential) on the
Django request as well, and a DRF Response carries its view (`renderer_context`), whose practice choice was resolved
once by the base view. So recording reads nothing the request did not already read: one INSERT per write (the OAuth
client id is a sub-select inside it), nothing at all per read.

After the write: the entry is inserted once the view has answered 2xx, in autocommit — the view's own transactions
have committed by then (a write that rolled back answered 4xx/5xx and is not recorded). Views keep their own
transaction shapes: some commit a claim before calling out (a webhook subscription's verification probe) so that a
concurrent request sees it, which one request-wide transaction would hide. If the insert fails, the failure is
logged (route and error class only, no values) and the write still answers as it did.

Not recorded: reads (GET, HEAD, OPTIONS), refusals and failures (any status outside 2xx), public routes (provider
callbacks, hosted pages, sign-in, the OAuth endpoints, POST /mcp itself — the MCP server's tool calls are recorded
one by one, as the REST writes they run), and the Django admin (apps.audit.hooks records that).

Placed last in MIDDLEWARE (after BrowserSessionSurfaceMiddleware): synchronous only, so under ASGI it adds no thread
hand-off, and it runs inside the session and authentication middleware.
"""

import logging

from django.db import transaction
from django.db.models import Subquery
from django.urls import Resolver404, get_resolver

from apps.audit import recording
from apps.audit.models import AuditEntry
from apps.audit.public import record
from apps.core.credentials import API_KEY, OAUTH, Credential
from apps.core.naming import to_camel

logger = logging.getLogger("apps.audit")

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _view_class(view_func):
    return getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)


def _is_api_route(view_func) -> bool:
    """A DRF route that takes credentials (every non-public BaseApiView); public routes and plain Django views
    (the admin, the OAuth pages) are not recorded here."""
    from rest_framework.views import APIView

    view_class = _view_class(view_func)
    return view_class is not None and issubclass(view_class, APIView) and not getattr(view_class, "public", False)


class AuditMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in WRITE_METHODS:
            return self.get_response(request)
        try:
            match = get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
        except Resolver404:
            return self.get_response(request)
        if not _is_api_route(match.func):
            return self.get_response(request)
        response = self.get_response(request)
        record_api_write(request, response)
        return response


def record_api_write(request, response) -> AuditEntry | None:
    """The entry for this request when it was an authenticated write answered 2xx (else None). Never raises."""
    credential = getattr(request, "auth", None)
    if not isinstance(credential, Credential) or not 200 <= response.status_code < 300:
        return None
    try:
        with transaction.atomic():
            return record(**_entry_fields(request, response, credential))
    except Exception as exc:  # an audit failure must not undo or fail the write it describes
        logger.error(
            "audit entry not recorded for %s %s: %s",
            request.method,
            getattr(request.resolver_match, "route", "?"),
            type(exc).__name__,
        )
        return None


def _entry_fields(request, response, credential: Credential) -> dict:
    context = getattr(response, "renderer_context", None) or {}
    view = context.get("view")
    match = request.resolver_match
    pattern = recording.route_pattern(match.route if match else request.path_info)
    action = recording.action_of(request.method, pattern, response.status_code)
    data = getattr(response, "data", None)
    created_id = data.get("id") if action == "create" and isinstance(data, dict) else None
    declared = getattr(view, "audit_subject", None) or getattr(
        _view_class(match.func) if match else None, "audit_subject", None
    )
    subject_type, subject_id = recording.subject_of(
        pattern, match.kwargs if match else {}, action=action, created_id=created_id, declared=declared
    )
    return {
        "source": AuditEntry.Source.API,
        "organization_id": _organization_id(view, credential),
        **actor_fields(request),
        "method": request.method,
        "route": pattern,
        "action": action,
        "subject_type": subject_type[:64],
        "subject_id": subject_id[:64],
        "fields": _fields(context.get("request")),
        "status_code": response.status_code,
    }


def actor_fields(request) -> dict:
    """Who (person, credential kind and id, OAuth client) and from where, of an authenticated Django request."""
    credential = getattr(request, "auth", None)
    user = getattr(request, "user", None)
    fields = {"user_id": getattr(user, "pk", None), "address": request.META.get("REMOTE_ADDR")}
    if isinstance(credential, Credential):
        fields.update(
            credential_kind=credential.kind,
            credential_id=_credential_id(credential),
            oauth_client_id=_oauth_client(credential),
        )
    return fields


def _organization_id(view, credential: Credential):
    """The practice the base view resolved for this request (read, not resolved again); for a response that is not
    a DRF Response (a streamed download), the practice the credential itself names, when it names one."""
    choice = getattr(view, "_choice", None)  # BaseApiView.organization_choice(): resolved once per request
    organization = getattr(choice, "organization", None)
    if organization is not None:
        return organization.pk
    if credential.acting_membership is not None:
        return credential.acting_membership.organization_id
    if credential.bound_organization_id is not None:
        return credential.bound_organization_id
    prefetched = credential.memberships
    if prefetched is not None and prefetched.organization_id is not None and prefetched.memberships:
        return prefetched.organization_id
    return None


def _credential_id(credential: Credential) -> str:
    if credential.kind == API_KEY:
        return str(getattr(credential.record, "pk", "") or "")
    if credential.kind == OAUTH:
        return str(credential.connection_id or "")
    return ""


def _oauth_client(credential: Credential):
    """The OAuth client's public client_id, as a sub-select inside the entry's INSERT (no query of its own)."""
    application_id = getattr(credential.record, "application_id", None) if credential.kind == OAUTH else None
    if application_id is None:
        return ""
    from oauth2_provider.models import get_application_model

    return Subquery(get_application_model().objects.filter(pk=application_id).values("client_id")[:1])


def _fields(drf_request) -> list[str]:
    """Top-level body keys as the client sent them (JSON keys camelCase again, form and file names as they are);
    only a body the view parsed (never parsed here), never a value."""
    from rest_framework.request import Empty

    if drf_request is None or getattr(drf_request, "_full_data", Empty) is Empty:
        return []
    names = recording.body_keys(drf_request._full_data)
    if (drf_request.content_type or "").startswith("application/json"):
        names = [to_camel(name) for name in names]
    return names
