"""Deny by default. Every view declares `permission` (a role permission such as "patient:update", a per-method
dict of them, or AUTHENTICATED for the caller's own account) and `scope_area`, or `public = True`.

Order of checks: credential present → browser-session-only routes → OAuth scopes (INSUFFICIENT_SCOPE) →
practice selection → clinical workspace → role permission (ordinary 403).

Clinical routes (views with `clinical = True`: the day list, booking from the diary, the patient record, the PMS
inbox and every route of the clinical workspace) answer 403 PMS_WORKSPACE_UNAVAILABLE to any credential while the
practice has no clinical workspace, then 403 transport_not_allowed to machine credentials (spec Authentication).

The account-wide surfaces of spec Authentication rule 9 (BROWSER_SESSION_SURFACES, by path prefix) are refused to
machine credentials before routing, by apps.core.middleware.BrowserSessionSurfaceMiddleware, so routes not built yet
answer the same; views there declare nothing for it. Session-only routes elsewhere (API key management, sign-out,
practice and team management) set `browser_session_only`.
"""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.core.access import access_backend
from apps.core.errors import (
    BrowserSessionRequired,
    InsufficientScope,
    NotAuthenticated,
    PermissionDenied,
    PmsWorkspaceUnavailable,
    TransportNotAllowed,
)
from apps.core.scopes import ACCOUNT_AREA, CLINICAL_AREA, DIALER_AREA, SCOPE_AREAS  # noqa: F401  (re-exported for views)

# The caller's own identity (sign-out, /auth/me, /user/*): authenticated, no practice permission involved.
AUTHENTICATED = "authenticated"

# Spec Authentication rule 9: 403 BROWSER_SESSION_REQUIRED to any machine credential (API key or OAuth token).
BROWSER_SESSION_SURFACES = ("/user", "/organization", "/agreements", "/support")
# The platform admin area refuses machine credentials too, and keeps its own sign-in page for everyone else.
ADMIN_AREA = "/admin"


def under_prefix(path: str, *prefixes: str) -> bool:
    """Whether the path is one of the prefixes or below one (a whole segment: /users is not under /user)."""
    return any(path == prefix or path.startswith(prefix + "/") for prefix in prefixes)


def declared_permission(view, method: str) -> str | None:
    permission = getattr(view, "permission", None)
    if isinstance(permission, dict):
        return permission.get(method) or (permission.get("GET") if method in ("HEAD", "OPTIONS") else None)
    return permission


def required_scopes(method: str, area: str) -> frozenset[str]:
    if area == DIALER_AREA:
        # Calls and recordings: the "dialer" scope itself, whatever the method (no read/write pair; the coarse
        # read and write scopes do not reach them).
        return frozenset({DIALER_AREA})
    if method in SAFE_METHODS:
        if area == ACCOUNT_AREA:
            return frozenset({"read"})
        return frozenset({"read", f"{area}.read", f"{area}.write"})
    if area == ACCOUNT_AREA:
        return frozenset({"write"})
    return frozenset({"write", f"{area}.write"})


def check_scope(credential, method: str, area: str) -> None:
    if credential.scopes is None:
        return
    needed = required_scopes(method, area)
    if not credential.scopes & needed:
        raise InsufficientScope(details={"requiredAnyOf": sorted(needed)})


class DeclaredAccess(BasePermission):
    def has_permission(self, request, view) -> bool:
        if getattr(view, "public", False):
            return True
        permission = declared_permission(view, request.method)
        if not permission:
            raise PermissionDenied("This route does not allow this method for anyone.")
        if request.user is None:
            raise NotAuthenticated()
        credential = request.auth
        if getattr(view, "browser_session_only", False) and credential.is_machine:
            raise BrowserSessionRequired()
        if getattr(view, "clinical", False):
            membership = view.resolve_membership(request)
            if not membership.organization.clinical_workspace_available:
                raise PmsWorkspaceUnavailable()
            if credential.is_machine:
                raise TransportNotAllowed()
        check_scope(credential, request.method, view.scope_area)
        if permission == AUTHENTICATED:
            return True
        membership = view.resolve_membership(request)
        if not access_backend().role_has_permission(membership.role, permission):
            raise PermissionDenied(details={"permission": permission})
        return True
