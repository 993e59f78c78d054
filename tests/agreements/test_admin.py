"""The back office: platform staff write a draft version and publish it; publishing makes it pending again for every
practice; a published text is frozen; acceptances are read-only records."""

import pytest
from django.test import Client

from apps.agreements import services
from apps.agreements.errors import AgreementAlreadyPublished
from apps.agreements.models import Agreement, AgreementAcceptance
from tests.agreements.conftest import new_version, seeded
from tests.factories import UserFactory

pytestmark = pytest.mark.usefixtures("clock")


@pytest.fixture
def staff_client(db):
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_publishing_a_draft_makes_it_pending_again_for_every_practice(staff_client, owner, outsider):
    for member in (owner, outsider):
        session = member.session_client()
        session.generic("POST", f"/agreements/{seeded('terms').id}/accept")
        assert session.get("/agreements").json()["pendingCount"] == 1
    draft = new_version("terms", "2026-03", published=False)
    assert owner.session_client().get("/agreements").json()["pendingCount"] == 1  # a draft changes nothing

    response = staff_client.post(
        "/admin/agreements/agreement/", {"action": "publish_now", "_selected_action": [str(draft.id)]}
    )

    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.published_at is not None
    for member in (owner, outsider):
        items = member.session_client().get("/agreements").json()["items"]
        # the accepted terms are superseded: the new version is pending; the DPA was never accepted
        assert [(i["kind"], i["version"], i["pending"]) for i in items] == [
            ("terms", "2026-03", True),
            ("data_processing", "2025-06", True),
        ]


def test_a_published_version_is_frozen(staff_client):
    terms = seeded("terms")

    page = staff_client.get(f"/admin/agreements/agreement/{terms.id}/change/")

    assert page.status_code == 200
    assert 'name="body"' not in page.content.decode()
    assert staff_client.get(f"/admin/agreements/agreement/{terms.id}/delete/").status_code == 403
    with pytest.raises(AgreementAlreadyPublished):
        services.agreement_publish(agreement=terms)
    draft = new_version("terms", "2026-04", published=False)
    assert 'name="body"' in staff_client.get(f"/admin/agreements/agreement/{draft.id}/change/").content.decode()


def test_acceptances_are_read_only(staff_client, owner):
    owner.session_client().generic("POST", f"/agreements/{seeded('terms').id}/accept")
    acceptance = AgreementAcceptance.objects.for_org(owner.organization).get()

    assert staff_client.get("/admin/agreements/agreementacceptance/").status_code == 200
    assert staff_client.get("/admin/agreements/agreementacceptance/add/").status_code == 403
    assert staff_client.post(f"/admin/agreements/agreementacceptance/{acceptance.id}/delete/").status_code == 403
    assert AgreementAcceptance.objects.for_org(owner.organization).count() == 1


def test_the_seeded_versions_need_acceptance(db):
    assert sorted(Agreement.objects.filter(version="2025-06").values_list("kind", "requires_acceptance")) == [
        ("data_processing", True),
        ("terms", True),
    ]
