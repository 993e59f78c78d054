"""Every clinical route (a view with `clinical = True`) answers the spec's two 403s before anything else:
PMS_WORKSPACE_UNAVAILABLE to any credential while the practice has no clinical workspace, then transport_not_allowed
to API keys and OAuth tokens. Walks the URL resolver, so a route added later is covered without being listed."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from apps.accounts.models import Organization
from apps.core.views import BaseApiView
from tests.conftest import make_member
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

UNKNOWN_ID = "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"  # fixed: xdist workers must collect the same ids
# The spec's Clinical (session-only) routes.
SPEC_ROUTES = {
    ("GET", "/day-list"),
    ("POST", "/book"),
    ("GET", "/patient-record/{}"),
    ("GET", "/pms-inbox/conversations"),
}


def _walk(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


def _clinical_operations():
    for route, callback in _walk(get_resolver().url_patterns):
        view = getattr(callback, "cls", None)
        if view is None or not issubclass(view, BaseApiView) or not getattr(view, "clinical", False):
            continue
        path = "/" + route
        while "<" in path:
            start, end = path.index("<"), path.index(">")
            segment = "1" if path[start + 1 : end].startswith("int:") else "{}"  # an int version, else an id
            path = path[:start] + segment + path[end + 1 :]
        for method in view.http_method_names:
            if method in ("options", "head", "trace") or not hasattr(view, method):
                continue
            yield method.upper(), path


OPERATIONS = sorted(set(_clinical_operations()))


def _call(client, method, template):
    return client.generic(method, template.replace("{}", UNKNOWN_ID), b"{}", content_type="application/json")


def test_the_spec_routes_are_clinical_and_the_walk_finds_the_workspace():
    assert set(OPERATIONS) >= SPEC_ROUTES
    assert len(OPERATIONS) > 20


@pytest.fixture
def clinician(db):
    return make_member(role="dentist", clinical_workspace_available=True)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_machine_credentials_are_refused_on_every_clinical_route(clinician, method, path):
    assert_error(_call(clinician.api_client(), method, path), 403, "transport_not_allowed")
    raw, _ = mint(clinician, "read write")
    assert_error(_call(bearer(raw), method, path), 403, "transport_not_allowed")


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_clinical_route_is_closed_without_the_clinical_workspace(clinician, method, path):
    Organization.objects.filter(pk=clinician.organization.pk).update(clinical_workspace_available=False)

    assert_error(_call(clinician.session_client(enforce_csrf=False), method, path), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert_error(_call(clinician.api_client(), method, path), 403, "PMS_WORKSPACE_UNAVAILABLE")


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_a_signed_in_clinician_gets_past_the_transport_checks(clinician, method, path):
    response = _call(clinician.session_client(enforce_csrf=False), method, path)

    assert response.status_code != 401
    if response.status_code == 403:
        assert response.json()["code"] not in ("transport_not_allowed", "PMS_WORKSPACE_UNAVAILABLE"), response.content


def test_a_request_without_credentials_is_401_not_a_workspace_answer(db):
    response = _call(bearer("nothing"), "GET", "/day-list")

    assert response.status_code == 401
