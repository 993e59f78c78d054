"""Real commits from real threads: a refund and its payment's event applied at the same time. The first event's
transaction is held open (after it has looked for the other) until the second has finished or is waiting for it;
either way round the refund is applied, never left pending where neither can see it."""

import threading

import pytest
from django.db import connection
from django.test import Client

from apps.deposits.models import CallbackReceipt
from tests.deposits.helpers import connect_account, make_patient, sent_deposit, stored
from tests.deposits.test_callbacks import ACCOUNT, charge_refunded, deliver, intent_succeeded
from tests.helpers import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def _held_open(first: dict, pause_after: tuple[str, ...], second: dict) -> list[int]:
    """Deliver `first`; once its transaction has run a statement containing all of `pause_after`, deliver `second` from
    another thread and keep the first transaction open until the second has finished or waits on a lock."""
    second_pid, second_done, go = [], threading.Event(), threading.Event()
    statuses, lock = [], threading.Lock()

    def second_waiting(raw) -> bool:
        with raw.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", second_pid)
            return cursor.fetchone()[0] > 0

    def hold(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if all(part in sql for part in pause_after) and not go.is_set():
            go.set()
            raw = context["connection"].connection
            while not second_done.wait(0.02):
                if second_pid and second_waiting(raw):
                    break
        return result

    def one():
        with connection.execute_wrapper(hold):
            response = deliver(first, client=Client())
        with lock:
            statuses.append(response.status_code)

    def two():
        assert go.wait(15), "the first event never reached its pause"
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            second_pid.append(cursor.fetchone()[0])
        try:
            response = deliver(second, client=Client())
            with lock:
                statuses.append(response.status_code)
        finally:
            second_done.set()

    workers = iter([one, two])
    assert run_in_threads(lambda: next(workers)(), count=2) == []
    return statuses


@pytest.fixture
def deposit(owner, api):
    connect_account(owner.organization, ACCOUNT)
    return sent_deposit(api, make_patient(owner.organization), amount=5000, currency="gbp")


def test_a_refund_committing_while_its_payment_is_applied_is_not_lost(owner, deposit):
    org = owner.organization
    payment = intent_succeeded(deposit, org.id, pi="pi_3Race")
    refund = charge_refunded(deposit, 5000, pi="pi_3Race")
    # the payment's transaction has looked for refunds kept pending (none yet) and is still open
    pending_lookup = ('FROM "deposits_callbackreceipt"', '"pending_payment_intent" =', "FOR UPDATE")
    statuses = _held_open(payment, pending_lookup, refund)
    assert statuses == [200, 200]
    row = stored(org, deposit["id"])
    assert (row.status, row.refunded_amount) == ("refunded", 5000)
    assert not CallbackReceipt.objects.exclude(pending_payment_intent="").exists()


def test_a_payment_committing_while_its_refund_is_kept_pending_does_not_lose_it(owner, deposit):
    org = owner.organization
    refund = charge_refunded(deposit, 5000, pi="pi_3Race")
    payment = intent_succeeded(deposit, org.id, pi="pi_3Race")
    # the refund's transaction has kept itself pending (the payment unknown yet) and is still open
    statuses = _held_open(refund, ('UPDATE "deposits_callbackreceipt" SET "pending_payment_intent"',), payment)
    assert statuses == [200, 200]
    row = stored(org, deposit["id"])
    assert (row.status, row.refunded_amount) == ("refunded", 5000)
    assert not CallbackReceipt.objects.exclude(pending_payment_intent="").exists()
