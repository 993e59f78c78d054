"""A real Celery worker process on the real Redis broker, reading the test database."""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

from tests.live import start_server, stop_all, web_server  # noqa: F401  (the live server for e2e tests)


@pytest.fixture
def worker_env(transactional_db):
    db = settings.DATABASES["default"]
    database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{connection.settings_dict['NAME']}"
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "PYTEST_XDIST_WORKER": os.environ.get("PYTEST_XDIST_WORKER", "gw0"),
    }


@pytest.fixture
def start_worker(worker_env, tmp_path):
    """Start a worker; its stderr goes to a file (a pipe nobody reads could fill and stall it), read by `log()`."""
    processes = []

    def start(**extra_env):
        log_path = tmp_path / f"worker-{len(processes)}.log"
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
            env={**worker_env, **extra_env},
            stdout=subprocess.DEVNULL,
            stderr=log_path.open("wb"),
        )
        process.log = lambda: log_path.read_text(errors="replace")[-3000:]
        processes.append(process)
        return process

    yield start
    stop_all(processes)


@pytest.fixture
def worker(start_worker):
    return start_worker()
