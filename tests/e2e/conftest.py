"""A real Celery worker process on the real Redis broker, reading the test database."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection


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


def stop(processes) -> None:
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


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
    stop(processes)


@pytest.fixture
def worker(start_worker):
    return start_worker()


DAPHNE = Path(sys.executable).parent / "daphne"
START_DEADLINE = 120  # seconds; a loaded machine migrates nothing here but imports the whole project


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def start_daphne(worker_env, tmp_path):
    """start(**extra_env): daphne serving config.asgi:application against the test database; its address
    ("127.0.0.1:port") once /health/runtime answers 204."""
    processes = []

    def start(**extra_env):
        port = free_port()
        log_path = tmp_path / f"daphne-{len(processes)}.log"
        process = subprocess.Popen(
            [str(DAPHNE), "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
            env={**worker_env, **extra_env},
            stdout=subprocess.DEVNULL,
            stderr=log_path.open("wb"),
        )
        processes.append(process)
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + START_DEADLINE
        log = lambda: log_path.read_text(errors="replace")[-3000:]  # noqa: E731
        status = None
        while status != 204:
            assert process.poll() is None, log()
            assert time.monotonic() < deadline, f"daphne did not answer 204 in time (last: {status})\n{log()}"
            with contextlib.suppress(httpx.HTTPError):
                status = httpx.get(f"http://{address}/health/runtime", timeout=2).status_code
            time.sleep(0.2)
        return address

    yield start
    stop(processes)
