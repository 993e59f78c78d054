"""The reminder sweep (apps.recalls.tasks.send_reminders, called directly): care messages through the conversations
pipeline at each offset that has come, one attempt per recall, due date and offset however often or concurrently it
runs, skipped (and recorded) without an address, for a contact that asked to stop, or without a connection; quiet
hours wait."""

from datetime import datetime, timedelta

import pytest

from apps.conversations.public import ContactBlock, Message
from apps.recalls.models import Recall, RecallReminder
from apps.recalls.services import reminders_sweep
from apps.recalls.tasks import send_reminders
from tests.factories import PatientFactory
from tests.helpers import run_in_threads
from tests.recalls.conftest import NOW, recall_types, set_recall


def _attempts(organization, recall_id):
    return list(
        RecallReminder.objects.for_org(organization)
        .filter(recall_id=recall_id)
        .order_by("offset_days")
        .values_list("offset_days", "outcome", "skipped_reason")
    )


def test_the_offset_that_came_is_sent_once_and_earlier_ones_are_superseded(client, owner, patient, sms, clock):
    recall = set_recall(client, patient, recall_types(client)["Hygiene"], "2026-03-10")  # due today; 09:00 has passed

    assert send_reminders() == {"sent": 1, "skipped": 1, "deferred": 0}
    assert send_reminders() == {"sent": 0, "skipped": 0, "deferred": 0}

    assert _attempts(owner.organization, recall["id"]) == [(-14, "skipped", "SUPERSEDED"), (0, "sent", "")]
    message = Message.objects.for_org(owner.organization).get()
    assert message.purpose == "service" and message.source == "recall"  # a care reminder: no marketing consent asked
    assert message.outbound["to"] == "+39333" + patient.phone_mobile.split()[-1]
    assert "hygiene" in message.body and "due today" in message.body
    detail = client.get(f"/clinical/recalls/{recall['id']}").json()
    assert detail["nextReminderAt"] == "2026-03-24T09:00:00.000000Z"
    assert [(r["offsetDays"], r["outcome"], r["messageId"]) for r in detail["reminders"]] == [
        (-14, "skipped", None),
        (0, "sent", str(message.id)),
    ]

    # Even when the row is swept again (a lost update), an offset attempted for this due date is not sent again.
    Recall.objects.for_org(owner.organization).filter(id=recall["id"]).update(next_reminder_at=NOW)
    assert send_reminders()["sent"] == 0
    assert Message.objects.for_org(owner.organization).count() == 1

    clock.move_to(NOW + timedelta(days=14))
    assert send_reminders() == {"sent": 1, "skipped": 0, "deferred": 0}
    assert _attempts(owner.organization, recall["id"])[-1] == (14, "sent", "")
    assert Recall.objects.for_org(owner.organization).get(id=recall["id"]).next_reminder_at is None


def test_a_recall_set_to_a_new_date_is_reminded_afresh(client, owner, patient, sms, clock):
    hygiene = recall_types(client)["Hygiene"]
    recall = set_recall(client, patient, hygiene, "2026-03-10")
    send_reminders()

    set_recall(client, patient, hygiene, "2026-03-24")  # postponed two weeks: -14 of the new date is today
    assert send_reminders()["sent"] == 1

    rows = RecallReminder.objects.for_org(owner.organization).filter(recall_id=recall["id"], outcome="sent")
    assert sorted((str(r.due_date), r.offset_days) for r in rows) == [("2026-03-10", 0), ("2026-03-24", -14)]


def test_booked_and_future_recalls_are_not_reminded(client, owner, patient, sms, clock):
    set_recall(client, patient, recall_types(client)["Hygiene"], "2026-06-01")

    assert send_reminders() == {"sent": 0, "skipped": 0, "deferred": 0}
    assert not RecallReminder.objects.for_org(owner.organization).exists()


def test_without_an_address_or_for_a_blocked_contact_the_reminder_is_skipped(client, owner, sms, clock):
    types = recall_types(client)
    nowhere = PatientFactory(organization=owner.organization, phone_mobile="", email="")
    stopped = PatientFactory(organization=owner.organization, phone_mobile="+393331112222")
    ContactBlock.objects.create(organization=owner.organization, channel="sms", address="+393331112222", reason="stop")
    first = set_recall(client, nowhere, types["Exam"], "2026-03-24")
    second = set_recall(client, stopped, types["Exam"], "2026-03-24")

    assert send_reminders() == {"sent": 0, "skipped": 2, "deferred": 0}

    assert _attempts(owner.organization, first["id"]) == [(-14, "skipped", "NO_ADDRESS")]
    assert _attempts(owner.organization, second["id"]) == [(-14, "skipped", "CONTACT_BLOCKED")]
    assert not Message.objects.for_org(owner.organization).exists()
    assert send_reminders()["skipped"] == 0  # recorded once


def test_without_a_connection_the_reminder_is_skipped(client, owner, patient, clock):
    recall = set_recall(client, patient, recall_types(client)["Exam"], "2026-03-24")

    send_reminders()

    assert _attempts(owner.organization, recall["id"]) == [(-14, "skipped", "CONNECTION_UNAVAILABLE")]


def test_quiet_hours_wait(client, owner, patient, sms, clock):
    recall = set_recall(client, patient, recall_types(client)["Exam"], "2026-03-10")
    clock.move_to(datetime(2026, 3, 10, 22, 0, tzinfo=NOW.tzinfo))

    assert send_reminders() == {"sent": 0, "skipped": 0, "deferred": 1}
    assert Recall.objects.for_org(owner.organization).get(id=recall["id"]).next_reminder_at == datetime(
        2026, 3, 11, 8, 0, tzinfo=NOW.tzinfo
    )

    clock.move_to(datetime(2026, 3, 11, 8, 5, tzinfo=NOW.tzinfo))
    assert send_reminders()["sent"] == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_sweeps_send_each_reminder_once(owner, sms, clock):
    client = owner.session_client()
    exam = recall_types(client)["Exam"]
    recalls = [
        set_recall(client, PatientFactory(organization=owner.organization), exam, "2026-03-10") for _ in range(40)
    ]

    errors = run_in_threads(reminders_sweep, count=3)

    assert errors == []
    sent = RecallReminder.objects.for_org(owner.organization).filter(outcome="sent")
    assert sorted(str(r.recall_id) for r in sent) == sorted(r["id"] for r in recalls)
    assert Message.objects.for_org(owner.organization).count() == 40
