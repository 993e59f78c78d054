"""A real Celery worker process on the real Redis broker, reading the test database."""

import contextlib
import os
import socket
import subprocess
import sys
import time

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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


SERVER_START_DEADLINE = 120  # seconds; a loaded machine migrates nothing here but imports the whole project


@pytest.fixture
def start_server(worker_env, tmp_path):
    """start(**extra_env): the production HTTP server (`python -m config.server`, what `make run` serves) on a free
    port against the test database; its address ("127.0.0.1:port") once /health/runtime answers 204. Its output
    (access log included) goes to tmp_path / "web-<n>.log"."""
    processes = []

    def start(**extra_env):
        port = free_port()
        log_path = tmp_path / f"web-{len(processes)}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "config.server", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
            env={**worker_env, **extra_env},
            stdout=(log := log_path.open("wb")),
            stderr=log,
        )
        processes.append(process)
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + SERVER_START_DEADLINE
        status = None
        while status != 204:
            assert process.poll() is None, log_path.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, f"the server did not answer 204 in time (last: {status})"
            with contextlib.suppress(httpx.HTTPError):
                status = httpx.get(f"http://{address}/health/runtime", timeout=2).status_code
            time.sleep(0.2)
        return address

    yield start
    stop(processes)


@pytest.fixture
def web_server(start_server):
    """One server with the default settings (see start_server); its log is tmp_path / "web-0.log"."""
    return start_server()
