"""Every route of recalls and the waitlist: pms:diary (telesales 403, front desk and clinicians in), session-only
(API keys and OAuth tokens 403 transport_not_allowed), closed without the clinical workspace
(PMS_WORKSPACE_UNAVAILABLE); the schema documents them."""

import pytest

from apps.accounts.models import Organization
from apps.recalls.models import RecallType
from tests.conftest import make_member
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.recalls.conftest import recall_types

UNKNOWN = "6f1c2b9e-8d3a-4c5b-9e7f-1a2b3c4d5e6f"
ROUTES = [
    ("GET", "/clinical/recall-types"),
    ("POST", "/clinical/recall-types"),
    ("GET", "/clinical/recall-types/{}"),
    ("PATCH", "/clinical/recall-types/{}"),
    ("GET", "/clinical/patients/{}/recalls"),
    ("POST", "/clinical/patients/{}/recalls"),
    ("GET", "/clinical/recalls"),
    ("GET", "/clinical/recalls/{}"),
    ("POST", "/clinical/recalls/{}/book"),
    ("POST", "/clinical/recalls/{}/cancel"),
    ("GET", "/clinical/waitlist"),
    ("POST", "/clinical/waitlist"),
    ("GET", "/clinical/waitlist/{}"),
    ("PATCH", "/clinical/waitlist/{}"),
    ("DELETE", "/clinical/waitlist/{}"),
    ("GET", "/clinical/waitlist/offers"),
    ("POST", "/clinical/waitlist/offers/{}/accept"),
    ("POST", "/clinical/waitlist/offers/{}/decline"),
]
IDS = [f"{method} {path}" for method, path in ROUTES]


def _call(client, method, path):
    body = b'{"name": "Implant check", "intervalMonths": 12, "appointmentType": "review"}'
    return client.generic(method, path.replace("{}", UNKNOWN), body, content_type="application/json")


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=IDS)
def test_telesales_is_refused(telesales, method, path):
    client = telesales.session_client(enforce_csrf=False)
    body = assert_error(_call(client, method, path), 403, "PERMISSION_DENIED")
    assert body["details"] == {"permission": "pms:diary"}


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=IDS)
def test_machine_credentials_are_refused(owner, method, path):
    assert_error(_call(owner.api_client(), method, path), 403, "transport_not_allowed")
    raw, _ = mint(owner, "read write")
    assert_error(_call(bearer(raw), method, path), 403, "transport_not_allowed")


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=IDS)
def test_closed_without_the_clinical_workspace(owner, method, path):
    Organization.objects.filter(pk=owner.organization.pk).update(clinical_workspace_available=False)

    assert_error(_call(owner.session_client(enforce_csrf=False), method, path), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert_error(_call(owner.api_client(), method, path), 403, "PMS_WORKSPACE_UNAVAILABLE")


@pytest.mark.parametrize("role", ["owner", "manager", "front_desk", "dentist", "hygienist", "nurse"])
def test_every_role_of_the_clinical_workspace_runs_recalls(owner, role):
    member = make_member(role=role, organization=owner.organization)

    assert recall_types(member.session_client()) != {}


def test_a_write_without_the_csrf_token_changes_nothing(desk, owner):
    client = desk.session_client()
    client.defaults.pop("HTTP_X_CSRFTOKEN")

    response = _call(client, "POST", "/clinical/recall-types")

    assert response.status_code == 403
    assert not RecallType.objects.for_org(owner.organization).filter(name="Implant check").exists()


def test_the_schema_documents_every_operation(client):
    from django.test import Client

    schema = Client().get("/openapi.json").json()
    for method, path in ROUTES:
        template = path.replace("{}", "{id}")
        operation = schema["paths"][template][method.lower()]
        assert operation["tags"][0] in ("Recalls", "Waitlist"), (method, path)
        assert operation["summary"] and operation["description"]
        assert "403" in operation["responses"]
