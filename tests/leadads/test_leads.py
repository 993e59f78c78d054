"""POST /leads: an authenticated integrator pushes a lead (the capture's reading, matching and journey rules),
validation, externalId retries, credentials and scopes, and the refusal through an agency connection."""

import json

import pytest
from rest_framework.test import APIRequestFactory, force_authenticate

from apps.accounts.models import Organization
from apps.capture.models import AttributionTouch
from apps.core.credentials import OAUTH, Credential
from apps.journeys.models import Journey
from apps.leadads.api.views import LeadPushView
from apps.leadads.models import PushedLead
from apps.partners import selectors as partner_selectors
from apps.patients.models import MarketingConsent, Patient
from tests.conftest import make_member
from tests.factories import LeadSourceFactory, LocationFactory
from tests.helpers import assert_error
from tests.leadads.conftest import post_json
from tests.oauth.tokens import bearer, mint

LEADS = "/leads"
LEAD = {
    "firstName": "Lena",
    "lastName": "Lead",
    "email": "lena@example.com",
    "phone": "+39 333 1234567",
    "message": "Interested in aligners",
    "attribution": {"utmSource": "partner-site", "utmCampaign": "spring", "gclid": "Cj0-gclid"},
    "customFields": {"budget": "2000"},
}


def test_a_pushed_lead_makes_a_patient_journey_and_touch(api, owner):
    response = post_json(api, LEADS, LEAD)
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"id", "externalId", "patientId", "patientCreated", "journeyId", "createdAt"}
    assert body["patientCreated"] is True and body["externalId"] is None
    patient = Patient.objects.for_org(owner.organization).get(id=body["patientId"])
    assert (patient.first_name, patient.email, patient.phone_mobile) == ("Lena", "lena@example.com", "+39 333 1234567")
    assert patient.custom_fields == {"budget": "2000"}
    journey = Journey.objects.for_org(owner.organization).get(id=body["journeyId"])
    assert journey.source == "api"
    touch = AttributionTouch.objects.for_org(owner.organization).get()
    assert (touch.utm_source, touch.utm_campaign, touch.click_id_type, touch.click_id) == (
        "partner-site", "spring", "gclid", "Cj0-gclid",
    )  # fmt: skip
    assert not MarketingConsent.objects.for_org(owner.organization).exists()


def test_the_same_person_is_matched_and_their_open_journey_kept(api, owner):
    first = post_json(api, LEADS, LEAD).json()
    second = post_json(api, LEADS, {"email": "LENA@example.com", "firstName": "Other"})
    assert second.status_code == 201
    assert second.json()["patientId"] == first["patientId"] and second.json()["patientCreated"] is False
    assert second.json()["journeyId"] == first["journeyId"]
    assert Patient.objects.for_org(owner.organization).get().first_name == "Lena"  # never overwritten
    by_phone = post_json(api, LEADS, {"phone": "0039 333 1234567"}).json()
    assert by_phone["patientId"] == first["patientId"]


def test_consent_needs_evidence_and_is_granted_on_the_given_channels(api, owner):
    refused = post_json(api, LEADS, LEAD | {"marketingConsent": True})
    assert assert_error(refused, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "consentEvidence": ["is required when marketingConsent is true"]
    }
    body = post_json(api, LEADS, LEAD | {"marketingConsent": True, "consentEvidence": "ticked box on partner form"})
    assert body.status_code == 201
    consents = MarketingConsent.objects.for_org(owner.organization)
    assert {c.channel for c in consents} == {"email", "sms"}
    assert all("ticked box on partner form" in c.evidence and c.source == "api" for c in consents)


def test_external_id_makes_retries_safe(api, owner):
    first = post_json(api, LEADS, LEAD | {"externalId": "crm-42"})
    assert first.status_code == 201
    again = post_json(api, LEADS, LEAD | {"externalId": "crm-42"})
    assert again.status_code == 200 and again.json() == first.json()
    conflict = post_json(api, LEADS, LEAD | {"externalId": "crm-42", "firstName": "Changed"})
    assert_error(conflict, 409, "LEAD_EXTERNAL_ID_CONFLICT")
    assert PushedLead.objects.for_org(owner.organization).count() == 1
    assert Journey.objects.for_org(owner.organization).count() == 1


@pytest.mark.parametrize(
    "body, field",
    [
        ({"firstName": "No contact"}, "email"),
        ({"email": "not-an-email"}, "email"),
        ({"email": 5}, "email"),
        ({"phone": "x" * 41}, "phone"),
        ({"email": "a@example.com", "attribution": {"notAParameter": "x"}}, "attribution"),
        ({"email": "a@example.com", "marketingConsent": "yes"}, "marketingConsent"),
        ({"email": "a@example.com", "unknown": 1}, "unknown"),
        ({"email": "a@example.com", "externalId": ""}, "externalId"),
        ({"email": "a@example.com", "customFields": {f"k{n}": n for n in range(51)}}, "customFields"),
        ({"email": "a@example.com", "dateOfBirth": "31/12/1990"}, "dateOfBirth"),
    ],
)
def test_validation(api, owner, body, field):
    refused = assert_error(post_json(api, LEADS, body), 400, "VALIDATION_ERROR")
    assert field in refused["details"]["fields"]
    assert not Patient.objects.for_org(owner.organization).exists()
    assert not PushedLead.objects.for_org(owner.organization).exists()


def test_an_empty_body_is_400(api):
    assert_error(api.post(LEADS, "", content_type="application/json"), 400, "VALIDATION_ERROR")


def test_ids_of_another_practice_are_400_and_ours_apply(api, owner, outsider):
    foreign = LocationFactory(organization=outsider.organization)
    refused = post_json(api, LEADS, LEAD | {"locationId": str(foreign.id)})
    assert assert_error(refused, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "locationId": ["does not exist in this practice"]
    }
    location = LocationFactory(organization=owner.organization)
    source = LeadSourceFactory(organization=owner.organization, name="Partner site")
    made = post_json(api, LEADS, LEAD | {"locationId": str(location.id), "leadSourceId": str(source.id)}).json()
    patient = Patient.objects.for_org(owner.organization).get(id=made["patientId"])
    assert (patient.location_id, patient.lead_source_id) == (location.id, source.id)


@pytest.mark.parametrize("role", ["analyst", "dentist"])
def test_roles_without_patient_create_are_403(member_factory, owner, role):
    member = member_factory(role=role, organization=owner.organization)
    assert_error(post_json(member.api_client(), LEADS, LEAD), 403, "PERMISSION_DENIED")
    assert not Patient.objects.for_org(owner.organization).exists()


def test_front_desk_and_sessions_may_push(member_factory, owner):
    desk = member_factory(role="front_desk", organization=owner.organization)
    assert post_json(desk.session_client(), LEADS, LEAD).status_code == 201


def test_oauth_needs_patients_write(owner):
    read_only, _ = mint(owner, "patients.read")
    assert_error(post_json(bearer(read_only), LEADS, LEAD), 403, "INSUFFICIENT_SCOPE")
    writer, _ = mint(owner, "patients.write")
    response = post_json(bearer(writer), LEADS, LEAD)
    assert response.status_code == 201, response.content
    assert PushedLead.objects.for_org(owner.organization).get().credential_kind == "oauth"


def test_unauthenticated_is_401(client, db):
    assert client.post(LEADS, json.dumps(LEAD), content_type="application/json").status_code == 401


# --- agency connections -------------------------------------------------------------------------------------------


@pytest.fixture
def agency(db):
    return make_member(role="manager", kind=Organization.Kind.PARTNER, name="Molar Marketing")


def test_an_agency_connection_on_its_own_organization_is_refused(agency):
    token, _ = mint(agency, "read write")
    refused = assert_error(post_json(bearer(token), LEADS, LEAD), 403, "AGENCY_UNAVAILABLE")
    assert refused["details"] == {"operation": "POST /leads"}
    assert not Patient.objects.for_org(agency.organization).exists()


def test_an_agency_acting_inside_a_linked_practice_is_refused(agency):
    from apps.partners.models import PracticeLink

    practice = make_member(role="owner").organization
    PracticeLink.objects.create(
        organization=agency.organization, practice=practice, owner_email="o@example.com",
        requested_name=practice.name, requested_country="IT",
    )  # fmt: skip
    credential = partner_selectors.practice_credential(
        user=agency.user,
        credential=Credential(
            kind=OAUTH, scopes=frozenset({"read", "write"}), bound_organization_id=agency.organization.id
        ),
        practice_id=practice.id,
    )
    request = APIRequestFactory().post(LEADS, json.dumps({"email": "a@example.com"}), content_type="application/json")
    force_authenticate(request, user=agency.user, token=credential)
    response = LeadPushView.as_view()(request)
    response.render()
    assert (response.status_code, response.data["code"]) == (403, "AGENCY_UNAVAILABLE")
    assert not Patient.objects.for_org(practice).exists()


def _mcp(client, name, arguments):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = client.post("/mcp", json.dumps(message), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_through_mcp_an_agency_neither_finds_nor_runs_it_and_a_practice_does(agency, owner):
    from django.conf import settings
    from django.test import Client

    raw, _ = mint(agency, "read write", resource=[settings.SVC_MCP_URL])
    agent = Client(headers={"Authorization": f"Bearer {raw}"})
    found = _mcp(agent, "search_operations", {"query": "leads"})["structuredContent"]["items"]
    assert "POST /leads" not in [item["operation"] for item in found]
    refused = _mcp(agent, "write", {"operation": "POST /leads", "body": {"email": "a@example.com"}})
    assert refused["isError"] is True and refused["structuredContent"]["error"]["code"] == "AGENCY_UNAVAILABLE"

    raw, _ = mint(owner, "read write", resource=[settings.SVC_MCP_URL])
    practice_agent = Client(headers={"Authorization": f"Bearer {raw}"})
    found = _mcp(practice_agent, "search_operations", {"query": "leads"})["structuredContent"]["items"]
    assert "POST /leads" in [item["operation"] for item in found]
    made = _mcp(practice_agent, "write", {"operation": "POST /leads", "body": {"email": "a@example.com"}})
    assert made["isError"] is False and made["structuredContent"]["status"] == 201, made
