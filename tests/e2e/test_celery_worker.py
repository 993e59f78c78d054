"""One real Celery worker (a separate process on the real Redis broker) runs a task against the test database."""

import time
from datetime import timedelta

from django.contrib.sessions.models import Session
from django.utils import timezone

from apps.accounts.tasks import purge_expired_sessions
from config.celery import app as celery_app


def test_worker_purges_expired_sessions(worker, monkeypatch):
    Session.objects.create(session_key="expired-1", session_data="x", expire_date=timezone.now() - timedelta(days=1))
    Session.objects.create(session_key="current-1", session_data="x", expire_date=timezone.now() + timedelta(days=1))
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)

    purge_expired_sessions.delay()

    deadline = time.monotonic() + 120
    while Session.objects.filter(session_key="expired-1").exists():
        assert worker.poll() is None, worker.log()
        assert time.monotonic() < deadline, "the worker did not run the task within 120 s"
        time.sleep(0.2)
    assert Session.objects.filter(session_key="current-1").exists()
