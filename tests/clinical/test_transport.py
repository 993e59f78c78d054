"""Every route of the hub with real ids of the caller's practice: machine credentials get transport_not_allowed,
and a practice without the clinical workspace PMS_WORKSPACE_UNAVAILABLE (before any role, body or id check)."""

from datetime import UTC, datetime

import pytest

from apps.accounts.models import Organization
from apps.clinical.models import Chair
from apps.clinical.public import document_store
from tests.clinical.conftest import PDF, make_appointment
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

ROUTES = [
    ("GET", "/day-list"),
    ("POST", "/book"),
    ("GET", "/patient-record/{patient}"),
    ("GET", "/pms-inbox/conversations"),
    ("GET", "/clinical/chairs"),
    ("POST", "/clinical/chairs"),
    ("GET", "/clinical/chairs/{chair}"),
    ("PATCH", "/clinical/chairs/{chair}"),
    ("DELETE", "/clinical/chairs/{chair}"),
    ("POST", "/clinical/appointments/{appointment}/progress"),
    ("PUT", "/clinical/appointments/{appointment}/chair"),
    ("GET", "/clinical/patients/{patient}/documents"),
    ("POST", "/clinical/patients/{patient}/documents"),
    ("GET", "/clinical/patients/{patient}/documents/{document}"),
    ("DELETE", "/clinical/patients/{patient}/documents/{document}"),
    ("GET", "/clinical/patients/{patient}/documents/{document}/download"),
]


@pytest.fixture
def ids(dentist, org, location, practitioner, patient):
    appointment = make_appointment(org, practitioner, patient, datetime(2026, 3, 1, 9, tzinfo=UTC))
    document = document_store(
        organization=org,
        patient_id=patient.id,
        user=dentist.user,
        name="a.pdf",
        content_type="application/pdf",
        content=PDF,
        category="other",
    )
    chair = Chair.objects.create(organization=org, location=location, name="S1")
    return {"patient": patient.id, "chair": chair.id, "appointment": appointment.id, "document": document.id}


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_machine_credentials_then_a_closed_workspace(dentist, ids, method, path):
    url = path.format(**ids)
    raw, _ = mint(dentist, "read write")
    for client in (dentist.api_client(), bearer(raw)):
        assert_error(client.generic(method, url, b"{}", content_type="application/json"), 403, "transport_not_allowed")

    Organization.objects.filter(pk=dentist.organization.pk).update(clinical_workspace_available=False)
    for client in (dentist.session_client(enforce_csrf=False), dentist.api_client()):
        response = client.generic(method, url, b"{}", content_type="application/json")
        assert_error(response, 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert Chair.objects.for_org(dentist.organization).filter(id=ids["chair"], name="S1").exists()
