"""Partner-agency fixtures: agency members (an organization of kind partner), a frozen clock, e-mail backends."""

from datetime import UTC, datetime
from smtplib import SMTPException

import pytest
from django.core.mail.backends.base import BaseEmailBackend
from django.test import Client

from apps.accounts.models import Invitation, Organization
from tests.conftest import Member, make_member

PRACTICES = "/partner/practices"
ACCEPT = "/auth/organization/accept-invitation"
NEW_PASSWORD = "lagoon-trellis-amber-58"
START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


def owner_invitation_path(practice_id) -> str:
    return f"{PRACTICES}/{practice_id}/owner-invitation"


class FailingEmailBackend(BaseEmailBackend):
    """An SMTP server that refuses everything: the e-mail task retries, then parks the delivery."""

    attempts = 0

    def send_messages(self, email_messages):
        FailingEmailBackend.attempts += 1
        raise SMTPException("451 try again later")


@pytest.fixture
def failing_smtp(settings, monkeypatch):
    """Every e-mail fails; eager tasks retry in-process the way a worker would (the retries are not propagated as
    errors), so the delivery ends parked."""
    from config.celery import app

    monkeypatch.setitem(app.conf, "CELERY_TASK_EAGER_PROPAGATES", False)
    settings.EMAIL_BACKEND = "tests.partners.conftest.FailingEmailBackend"
    FailingEmailBackend.attempts = 0

    def heal():
        settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

    return heal


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(START, tick=False)
    return time_machine


@pytest.fixture
def agency(db) -> Member:
    """A manager of a partner agency."""
    return make_member(role="manager", kind=Organization.Kind.PARTNER, name="Molar Marketing")


@pytest.fixture
def other_agency(db) -> Member:
    return make_member(role="owner", kind=Organization.Kind.PARTNER, name="Bright Smiles Agency")


@pytest.fixture
def run_commits(django_capture_on_commit_callbacks):
    """Call a request and run its commit hooks (the e-mail task, eager in tests) like a real commit would."""

    def run(call, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run


def post(client: Client, path: str, data=None):
    return client.post(path, data if data is not None else {}, content_type="application/json")


@pytest.fixture
def create(run_commits):
    """POST /partner/practices, commit hooks run; returns the response."""

    def make(client: Client, name: str = "Studio Rossi", owner_email: str = "giulia@example.com", **extra):
        return run_commits(post, client, PRACTICES, {"name": name, "ownerEmail": owner_email, **extra})

    return make


def accept_owner_invitation(practice_id) -> None:
    """The invited owner accepts (signs up) through the real route."""
    invitation = (
        Invitation.objects.for_org(practice_id).filter(role="owner", status="pending").order_by("-created_at").first()
    )
    response = post(Client(), ACCEPT, {"invitationId": str(invitation.id), "password": NEW_PASSWORD})
    assert response.status_code == 200, response.content
