"""Who may do what, per apps/accounts/roles.py: clinical roles reach none of these routes, analysts read, telesales
and the front desk book and change appointments, and only owners and managers change the working week and the
practice timezone (settings:update). API keys and signed-in browser sessions reach the same routes."""

from dataclasses import dataclass

import pytest
from django.test import Client

from tests.appointments.helpers import (
    APPOINTMENTS,
    AVAILABILITY,
    CALENDAR,
    DAY,
    SETTINGS,
    assert_refused,
    booking,
    hours,
    hours_url,
    iso,
    make_appointment,
    snapshot,
    url,
)
from tests.helpers import assert_error

ROLES = ("owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse")
READERS = {"owner", "manager", "front_desk", "telesales", "analyst"}
WRITERS = {"owner", "manager", "front_desk", "telesales"}
SETTINGS_WRITERS = {"owner", "manager"}


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: object  # (world) -> str
    body: object = None  # (world) -> dict, for writes
    query: object = None  # dict, for reads
    permission: str = "appointment:read"
    allowed: frozenset = frozenset(READERS)
    success: int = 200


def change(name: str, action: str, body: dict) -> Route:
    """A write to one appointment (PATCH it, or POST one of its actions): appointment:update."""
    return Route(
        name,
        "post" if action else "patch",
        lambda w: url(w["appointment"], action),
        lambda w: body,
        permission="appointment:update",
        allowed=frozenset(WRITERS),
    )


def settings_change(name: str, method: str, path, body: dict) -> Route:
    return Route(name, method, path, lambda w: body, permission="settings:update", allowed=frozenset(SETTINGS_WRITERS))


ROUTES = [
    Route("list", "get", lambda w: APPOINTMENTS),
    Route(
        "create",
        "post",
        lambda w: APPOINTMENTS,
        lambda w: booking(w["patient"], w["practitioner"], 5, 6),
        permission="appointment:create",
        allowed=frozenset(WRITERS),
        success=201,
    ),
    Route("read", "get", lambda w: url(w["appointment"])),
    change("update", "", {"notes": "Call before"}),
    change("reschedule", "reschedule", {"startsAt": iso(2), "endsAt": iso(3)}),
    change("status", "status", {"status": "confirmed"}),
    change("cancel", "cancel", {"reason": "Ill"}),
    Route("calendar", "get", lambda w: CALENDAR, query={"start": iso(-1), "end": iso(24)}),
    Route(
        "availability", "get", lambda w: AVAILABILITY, query={"startDate": DAY, "endDate": DAY, "durationMinutes": 30}
    ),
    Route("hours-read", "get", lambda w: hours_url(w["practitioner"])),
    settings_change(
        "hours-replace", "put", lambda w: hours_url(w["practitioner"]), {"intervals": [hours(1, "08:00", "18:00")]}
    ),
    Route("settings-read", "get", lambda w: SETTINGS, permission="settings:read"),
    settings_change("settings-update", "patch", lambda w: SETTINGS, {"timezone": "Europe/Rome"}),
]
ROUTE_IDS = [route.name for route in ROUTES]


@pytest.fixture
def world(owner, patient, practitioner):
    return {
        "patient": patient,
        "practitioner": practitioner,
        "appointment": make_appointment(owner.organization, patient=patient, practitioner=practitioner, start=0, end=1),
    }


def call(client: Client, route: Route, world: dict):
    method = getattr(client, route.method)
    if route.body is None:
        return method(route.path(world), route.query or {})
    return method(route.path(world), route.body(world), content_type="application/json")


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize("role", ROLES)
def test_each_role_on_each_route(owner, member_factory, world, role, route):
    client = member_factory(role=role, organization=owner.organization).api_client()
    before = snapshot(owner.organization)

    response = call(client, route, world)

    if role in route.allowed:
        assert response.status_code == route.success, response.content
    else:
        body = assert_error(response, 403, "PERMISSION_DENIED")
        assert body["details"] == {"permission": route.permission}
        assert snapshot(owner.organization) == before


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_a_signed_in_browser_session_reaches_every_route(owner, world, route):
    client = owner.session_client()

    response = call(client, route, world)

    assert response.status_code == route.success, response.content


@pytest.mark.parametrize("route", [r for r in ROUTES if r.method != "get"], ids=lambda r: r.name)
def test_a_browser_write_without_the_csrf_token_is_refused(owner, world, route):
    client = owner.session_client()
    del client.defaults["HTTP_X_CSRFTOKEN"]

    assert_refused(owner.organization, lambda: call(client, route, world), 403, "CSRF_FAILED")


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_without_a_credential_every_route_is_401(owner, world, route):
    assert_refused(owner.organization, lambda: call(Client(), route, world), 401, "UNAUTHENTICATED")
