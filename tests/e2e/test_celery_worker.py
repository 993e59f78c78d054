"""One real Celery worker (a separate process on the real Redis broker) runs a task against the test database."""

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import connection
from django.utils import timezone

from apps.accounts.tasks import purge_expired_sessions
from config.celery import app as celery_app


@pytest.fixture
def worker(transactional_db):
    db = settings.DATABASES["default"]
    database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{connection.settings_dict['NAME']}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "PYTEST_XDIST_WORKER": os.environ.get("PYTEST_XDIST_WORKER", "gw0"),
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def test_worker_purges_expired_sessions(worker, monkeypatch):
    Session.objects.create(session_key="expired-1", session_data="x", expire_date=timezone.now() - timedelta(days=1))
    Session.objects.create(session_key="current-1", session_data="x", expire_date=timezone.now() + timedelta(days=1))
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)

    purge_expired_sessions.delay()

    deadline = time.monotonic() + 60
    while Session.objects.filter(session_key="expired-1").exists():
        assert worker.poll() is None, worker.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the worker did not run the task within 60 s"
        time.sleep(0.2)
    assert Session.objects.filter(session_key="current-1").exists()
