"""The practice archive: scheduling (owner, fresh re-authentication), cancelling, and the closing after the grace
period (the beat function called directly, the clock moved)."""

import pytest

from apps.accounts.models import Membership
from apps.audit.models import AuditEntry
from apps.patients.models import Patient
from apps.transfer import services
from apps.transfer.models import DataExport, PracticeArchive
from tests.factories import DEFAULT_PASSWORD, PatientFactory
from tests.helpers import assert_error

EVIDENCE = "HTTP_X_SERVICE_ACT_EVIDENCE"


def _evidence(client) -> str:
    response = client.post("/user/reauthenticate", {"password": DEFAULT_PASSWORD}, content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["token"]


@pytest.fixture
def browser(owner):
    return owner.session_client()


def _schedule(browser, commit):
    with commit():
        return browser.post("/practice-archive", content_type="application/json", **{EVIDENCE: _evidence(browser)})


def test_scheduling_needs_fresh_re_authentication(owner, browser, api):
    fresh = "FRESH_AUTHENTICATION_REQUIRED"
    assert_error(browser.post("/practice-archive", content_type="application/json"), 403, fresh)
    assert_error(api.post("/practice-archive"), 403, "FRESH_AUTHENTICATION_REQUIRED")
    forged = browser.post("/practice-archive", content_type="application/json", **{EVIDENCE: "forged"})
    assert_error(forged, 403, fresh)
    assert PracticeArchive.objects.for_org(owner.organization).count() == 0
    assert api.get("/practice-archive").json() == {"archive": None}


def test_schedule_starts_a_full_export_and_sets_closes_at(owner, browser, commit, clock):
    PatientFactory(organization=owner.organization)

    response = _schedule(browser, commit)

    assert response.status_code == 201, response.content
    archive = response.json()["archive"]
    assert archive["status"] == "scheduled"
    stored = PracticeArchive.objects.for_org(owner.organization).get()
    assert stored.closes_at - stored.created_at == services.GRACE_PERIOD
    assert archive["export"]["status"] == "queued"  # built in the background (here: once the request committed)
    archive = browser.get("/practice-archive").json()["archive"]
    assert archive["export"]["status"] == "ready" and archive["export"]["purpose"] == "archive"
    assert archive["export"]["counts"]["patients"] == 1
    assert browser.get(archive["export"]["downloadUrl"]).status_code == 200
    assert_error(_schedule(browser, commit), 409, "PRACTICE_ARCHIVE_IN_PROGRESS")
    assert AuditEntry.objects.filter(
        organization_id=owner.organization.id, action="practice_archive.scheduled"
    ).exists()


def test_cancel_during_the_grace_period(owner, browser, commit, api):
    _schedule(browser, commit)

    response = api.post("/practice-archive/cancel")

    assert response.status_code == 200
    assert response.json()["archive"]["status"] == "cancelled"
    assert_error(api.post("/practice-archive/cancel"), 409, "PRACTICE_ARCHIVE_NOT_SCHEDULED")
    assert services.close_due_practices() == 0
    assert Membership.objects.for_org(owner.organization).count() == 1
    assert DataExport.objects.for_org(owner.organization).get().file_expires_at is not None


def test_the_practice_closes_after_the_grace_period(owner, outsider, browser, commit, api, clock, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    PatientFactory.create_batch(3, organization=owner.organization)
    theirs = PatientFactory(organization=outsider.organization)
    _schedule(browser, commit)
    clock.shift(services.GRACE_PERIOD - services.timedelta(minutes=1))
    assert services.close_due_practices() == 0  # not yet
    assert api.get("/practice-archive").json()["archive"]["status"] == "scheduled"

    clock.shift(services.timedelta(minutes=2))
    assert services.close_due_practices() == 1

    archive = PracticeArchive.objects.for_org(owner.organization).get()
    assert archive.status == "closed"
    assert archive.closing_report == {
        "members": 2,
        "invitations": 0,
        "connections": 0,
        "webhookEndpoints": 0,
        "patientsErased": 3,
        "filesDeleted": 1,
    }
    assert Membership.objects.for_org(owner.organization).count() == 0
    assert Patient.objects.for_org(owner.organization).count() == 0
    assert DataExport.objects.for_org(owner.organization).get().status == "expired"
    # Members lost access at once: their keys no longer reach the practice.
    assert_error(api.get("/practice-archive"), 403, "NO_ORGANIZATION")
    assert_error(colleague.api_client().get("/transfer/core-exports"), 403, "NO_ORGANIZATION")
    # The other practice is untouched.
    assert Patient.objects.for_org(outsider.organization).filter(id=theirs.id).exists()
    assert Membership.objects.for_org(outsider.organization).count() == 1
    assert AuditEntry.objects.filter(organization_id=owner.organization.id, action="practice.closed").exists()
    assert services.close_due_practices() == 0  # closed once


@pytest.mark.parametrize("role", ["manager", "front_desk", "analyst"])
def test_only_the_owner_may_archive(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)
    browser = member.session_client()

    refused = browser.post("/practice-archive", content_type="application/json", **{EVIDENCE: _evidence(browser)})
    assert_error(refused, 403, "PERMISSION_DENIED")
    assert_error(member.api_client().get("/practice-archive"), 403, "PERMISSION_DENIED")
    assert_error(member.api_client().post("/practice-archive/cancel"), 403, "PERMISSION_DENIED")
    assert PracticeArchive.objects.for_org(owner.organization).count() == 0


def test_another_practice_sees_and_cancels_nothing(owner, outsider, browser, commit):
    _schedule(browser, commit)

    assert outsider.api_client().get("/practice-archive").json() == {"archive": None}
    assert_error(outsider.api_client().post("/practice-archive/cancel"), 409, "PRACTICE_ARCHIVE_NOT_SCHEDULED")
    assert PracticeArchive.objects.for_org(owner.organization).get().status == "scheduled"
