"""A visitor's socket message is kept durably and acknowledged with its inbox message's id before the inbox rows are
built (apps.widget.services.message_accept); a task files it (store_received), a sweep files any whose task never
ran, and every path agrees on one id per client message id. The socket itself: test_socket.py."""

import datetime

import pytest
from django.utils import timezone

from apps.conversations.models import Message
from apps.events.models import Event
from apps.widget import selectors, services, tasks
from apps.widget.models import ReceivedMessage, Visitor
from tests.widget.conftest import ORIGIN, post_json


@pytest.fixture
def parts(owner, widget, visitor):
    connection = selectors.widget_for_key(widget["embedKey"])
    return connection, Visitor.objects.for_org(owner.organization).get()


def accept(parts, client_id="c-1", body="Do you do implants?"):
    connection, visitor = parts
    return services.message_accept(widget=connection, visitor=visitor, body=body, client_message_id=client_id)


def test_the_ack_comes_before_the_inbox_and_the_task_files_it_under_the_same_id(
    owner, parts, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        accepted = accept(parts)
    assert len(queued) == 1  # the task, after the commit
    assert not Message.objects.for_org(owner.organization).exists()
    received = ReceivedMessage.objects.for_org(owner.organization).get()
    assert str(received.message_id) == accepted.message_id and received.body == "Do you do implants?"

    with django_capture_on_commit_callbacks(execute=False):
        again = accept(parts, body="a retry's body is not taken")
    assert again == accepted  # a retry before it is filed: the same id, body and time

    assert tasks.store_received(str(received.id)) is True
    message = Message.objects.for_org(owner.organization).get()
    assert str(message.id) == accepted.message_id and message.direction == "inbound" and message.channel == "widget"
    assert message.occurred_at == accepted.sent_at and message.body == "Do you do implants?"
    assert not ReceivedMessage.objects.for_org(owner.organization).exists()
    assert Event.objects.for_org(owner.organization).filter(type="message.received").count() == 1
    assert tasks.store_received(str(received.id)) is False  # gone: nothing twice

    again = accept(parts)  # a retry after it is filed: answered from the inbox
    assert again.message_id == accepted.message_id
    assert Message.objects.for_org(owner.organization).count() == 1
    assert not ReceivedMessage.objects.for_org(owner.organization).exists()


def test_a_thread_that_is_not_open_is_refused_and_nothing_kept(owner, client, widget):
    from tests.widget.conftest import start_visitor

    start_visitor(client, widget["embedKey"])
    connection = selectors.widget_for_key(widget["embedKey"])
    visitor = Visitor.objects.for_org(owner.organization).get()
    with pytest.raises(services.ThreadNotOpen):
        services.message_accept(widget=connection, visitor=visitor, body="Hi", client_message_id="c-1")
    assert not ReceivedMessage.objects.for_org(owner.organization).exists()


def test_the_sweep_files_messages_whose_task_never_ran_and_leaves_new_ones(
    owner, parts, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        old = accept(parts, "c-old")
        accept(parts, "c-new")
    ReceivedMessage.objects.for_org(owner.organization).filter(client_message_id="c-old").update(
        created_at=timezone.now() - datetime.timedelta(minutes=2)
    )
    assert tasks.sweep_received() == 1
    assert [str(m.id) for m in Message.objects.for_org(owner.organization)] == [old.message_id]
    assert list(ReceivedMessage.objects.for_org(owner.organization).values_list("client_message_id", flat=True)) == [
        "c-new"
    ]


def test_the_same_client_id_over_http_files_the_pending_one_under_its_acked_id(
    owner, client, widget, visitor, parts, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        accepted = accept(parts, "c-9")
    response = post_json(
        client,
        f"/widget/{widget['embedKey']}/thread/messages",
        {"body": "Do you do implants?", "clientMessageId": "c-9"},
        HTTP_ORIGIN=ORIGIN,
        HTTP_X_WIDGET_VISITOR=visitor,
    )
    assert response.status_code in (200, 201), response.content
    assert response.json()["id"] == accepted.message_id
    assert Message.objects.for_org(owner.organization).count() == 1
    assert not ReceivedMessage.objects.for_org(owner.organization).exists()


def test_erasing_the_patient_removes_their_unfiled_messages(api, owner, parts, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        accept(parts)
    patient_id = parts[1].patient_id
    assert api.delete(f"/patients/{patient_id}").status_code == 200
    assert not ReceivedMessage.objects.for_org(owner.organization).exists()
    assert not Message.objects.for_org(owner.organization).exists()


def test_another_practice_never_sees_the_row(outsider, parts, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        accept(parts)
    assert not ReceivedMessage.objects.for_org(outsider.organization).exists()


def test_a_batch_is_kept_in_one_insert_and_one_task_with_each_outcome_in_its_place(
    owner, client, widget, parts, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    from tests.widget.conftest import start_visitor

    connection, visitor = parts
    start_visitor(client, widget["embedKey"])  # a second visitor, whose thread is not open
    closed = Visitor.objects.for_org(owner.organization).exclude(id=visitor.id).get()
    with django_capture_on_commit_callbacks(execute=False):
        first = accept(parts, "c-filed", body="filed before the batch")
    tasks.store_received(str(ReceivedMessage.objects.for_org(owner.organization).get().id))

    batch = [
        services.Incoming(connection, visitor, "one", "c-1"),
        services.Incoming(connection, closed, "not open", "c-2"),
        services.Incoming(connection, visitor, "two", "c-3"),
        services.Incoming(connection, visitor, "one, sent twice in the batch", "c-1"),
        services.Incoming(connection, visitor, "a retry of the filed one", "c-filed"),
    ]
    # The filed lookup, the insert, the kept rows and the transaction: not a query per message.
    with django_assert_max_num_queries(6), django_capture_on_commit_callbacks(execute=False) as queued:
        one, not_open, two, one_again, filed_again = services.messages_accept(batch)

    assert isinstance(not_open, services.ThreadNotOpen)
    assert one_again == one and one.body == "one" and two.body == "two"
    assert filed_again.message_id == first.message_id
    kept = ReceivedMessage.objects.for_org(owner.organization)
    assert sorted(kept.values_list("client_message_id", flat=True)) == ["c-1", "c-3"]
    assert len(queued) == 1  # one task for the batch (run in place here: the test settings run tasks eagerly)
    queued[0]()
    assert not kept.exists()
    filed = {m.body: str(m.id) for m in Message.objects.for_org(owner.organization)}
    assert filed == {"filed before the batch": first.message_id, "one": one.message_id, "two": two.message_id}
