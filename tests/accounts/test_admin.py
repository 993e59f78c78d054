"""The back office: staff reach every model's pages; API key digests never show."""

import pytest
from django.test import Client

from apps.accounts.models import ApiKey
from apps.events.models import Event
from apps.events.services import Actor, emit
from tests.factories import UserFactory


@pytest.fixture
def staff_client(db):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def some_event(owner):
    from django.db import transaction

    with transaction.atomic():
        return emit(
            organization=owner.organization,
            type="patient.created",
            subject_type="patient",
            subject_id="00000000-0000-4000-8000-000000000001",
            actor=Actor.user(owner.user),
        )


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/accounts/user/",
        "/admin/accounts/organization/",
        "/admin/accounts/membership/",
        "/admin/accounts/apikey/",
        "/admin/events/event/",
    ],
)
def test_staff_reach_every_changelist(staff_client, owner, some_event, path):
    response = staff_client.get(path)
    assert response.status_code == 200


def test_detail_pages_open(staff_client, owner, some_event):
    key = ApiKey.objects.get(user=owner.user)
    for path in (
        f"/admin/accounts/organization/{owner.organization.id}/change/",
        f"/admin/accounts/membership/{owner.membership.id}/change/",
        f"/admin/accounts/apikey/{key.id}/change/",
        f"/admin/events/event/{some_event.id}/change/",
    ):
        assert staff_client.get(path).status_code == 200, path


def test_api_key_digest_is_never_shown(staff_client, owner):
    key = ApiKey.objects.get(user=owner.user)
    for path in ("/admin/accounts/apikey/", f"/admin/accounts/apikey/{key.id}/change/"):
        body = staff_client.get(path).content.decode()
        assert key.key_hash not in body
        assert owner.api_key not in body


def test_events_are_append_only_in_the_back_office(staff_client, some_event):
    response = staff_client.post(f"/admin/events/event/{some_event.id}/change/", {"type": "task.created"})
    assert response.status_code == 403
    assert Event.objects.for_org(some_event.organization_id).get().type == "patient.created"


def test_non_staff_are_sent_to_the_admin_login(owner):
    client = Client()
    client.force_login(owner.user)
    response = client.get("/admin/accounts/apikey/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


@pytest.mark.parametrize(
    "model",
    ["location", "leadsource", "pricelist", "practitioner", "tag", "patient", "marketingconsent", "savedview"],
)
def test_staff_reach_the_patients_back_office(staff_client, owner, model):
    from tests.factories import PatientFactory, TagFactory

    patient = PatientFactory(organization=owner.organization, tags=[TagFactory(organization=owner.organization)])
    assert staff_client.get(f"/admin/patients/{model}/").status_code == 200
    if model == "patient":
        assert staff_client.get(f"/admin/patients/patient/{patient.id}/change/").status_code == 200
