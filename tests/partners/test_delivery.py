"""The invitation e-mail task drives the delivery state: pending → publishing → published, parked after the
retries; it is idempotent (a published, parked, answered or expired invitation is not mailed again)."""

from datetime import timedelta

import pytest

from apps.accounts.models import Invitation
from apps.accounts.tasks import send_invitation_email
from tests.conftest import make_member
from tests.partners.conftest import START, FailingEmailBackend

pytestmark = pytest.mark.usefixtures("clock")


@pytest.fixture
def invitation(db):
    owner = make_member(role="owner")
    return Invitation.objects.create(
        organization=owner.organization,
        email="giulia@example.com",
        role="manager",
        inviter=owner.user,
        expires_at=START + timedelta(hours=48),
    )


def delivery(invitation) -> tuple[str, object]:
    invitation.refresh_from_db()
    return invitation.delivery, invitation.last_sent_at


def test_published_once(invitation, mailoutbox, clock):
    assert delivery(invitation) == ("pending", None)

    assert send_invitation_email(str(invitation.id)) is True
    clock.shift(timedelta(minutes=1))
    assert send_invitation_email(str(invitation.id)) is False  # a duplicate task mails nobody

    assert delivery(invitation) == ("published", START)
    assert len(mailoutbox) == 1


def test_a_redelivered_task_sends_what_was_still_publishing(invitation, mailoutbox):
    Invitation.objects.for_org(invitation.organization).filter(pk=invitation.pk).update(delivery="publishing")

    assert send_invitation_email(str(invitation.id)) is True

    assert delivery(invitation) == ("published", START)
    assert len(mailoutbox) == 1


@pytest.mark.parametrize("change", [{"status": "canceled"}, {"delivery": "parked"}, {"expires_at": START}])
def test_nothing_is_mailed_for_closed_invitations(invitation, mailoutbox, change):
    Invitation.objects.for_org(invitation.organization).filter(pk=invitation.pk).update(**change)

    assert send_invitation_email(str(invitation.id)) is False

    assert mailoutbox == []


def test_parked_after_the_retries(invitation, failing_smtp, mailoutbox):
    send_invitation_email.delay(str(invitation.id))

    assert delivery(invitation) == ("parked", None)
    assert FailingEmailBackend.attempts == 6
    assert mailoutbox == []
