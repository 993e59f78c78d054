"""Deny by default: every route declares its permission and scope area, or says it is public."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from apps.accounts.roles import ALL_PERMISSIONS
from apps.core.permissions import AUTHENTICATED, SCOPE_AREAS, declared_permission
from apps.core.views import BaseApiView


def _walk(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


ROUTES = [(route, callback) for route, callback in _walk(get_resolver().url_patterns) if not route.startswith("admin/")]


def test_the_walk_finds_the_api():
    assert {"auth/me", "health/runtime", "openapi.json"} <= {route for route, _ in ROUTES}


@pytest.mark.parametrize(("route", "callback"), ROUTES, ids=[route for route, _ in ROUTES])
def test_route_declares_access(route, callback):
    view = getattr(callback, "cls", None)
    if view is None:
        # OAuth protocol routes (apps.oauth: authorize, consent, token, discovery, front door…) are Django views by
        # nature (DOT); they authenticate the OAuth way and must say so. Anything else must be a DRF view.
        plain = getattr(callback, "view_class", None)
        declared = plain is not None and getattr(plain, "protocol_route", False) and getattr(plain, "public", False)
        assert declared, f"{route} is not a DRF view: it would escape the permission machinery"
        assert plain.__module__.startswith("apps.oauth."), f"{route}: protocol routes live in apps.oauth"
        return
    if getattr(view, "public", False):
        return
    assert issubclass(view, BaseApiView), f"{route} must build on apps.core.views.BaseApiView"
    methods = [m.upper() for m in view.http_method_names if hasattr(view, m) and m not in ("options", "head")]
    assert methods, route
    for method in methods:
        permission = declared_permission(view, method)
        assert permission, f"{method} {route} declares no permission"
        assert permission == AUTHENTICATED or permission in ALL_PERMISSIONS, f"{route}: unknown {permission!r}"
    assert view.scope_area in SCOPE_AREAS, f"{route} declares no valid scope_area"


def test_a_route_without_permission_denies_everything(rf, owner):
    from rest_framework.response import Response

    class Undeclared(BaseApiView):
        scope_area = "settings"

        def get(self, request):
            return Response({"leak": True})

    request = rf.get("/x", HTTP_AUTHORIZATION=f"Bearer {owner.api_key}")
    response = Undeclared.as_view()(request)
    assert response.status_code == 403
    assert response.data["code"] == "PERMISSION_DENIED"
