"""Real commits from real threads: the same friend submitted twice at the same instant becomes one lead."""

import threading

import pytest
from django.test import Client

from apps.patients.models import Patient
from apps.referrals.models import Referral
from tests.helpers import run_in_threads
from tests.referrals.test_public import submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_same_friend_submitted_twice_at_once_is_one_lead(owner, advocate):
    start, statuses, lock = threading.Barrier(2), [], threading.Lock()

    def race():
        start.wait(timeout=10)
        response = submit(Client(), advocate["shareToken"])
        with lock:
            statuses.append(response.status_code)

    assert run_in_threads(race, count=2) == []
    assert statuses == [201, 201]  # the answer never says whether the friend was known
    friends = Patient.objects.for_org(owner.organization).exclude(first_name="Alice")
    assert friends.count() == 1
    assert sorted(Referral.objects.for_org(owner.organization).values_list("status", flat=True)) == [
        "duplicate",
        "submitted",
    ]
