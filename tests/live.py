"""A real daphne (config.asgi) on a free port, serving the test database: for the tests that need a real server
(live WebSocket updates, the headless-browser tests). Use with `worker_env` (tests/e2e/conftest.py), which gives
the subprocess the test database and this worker's Redis database."""

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

DAPHNE = Path(sys.executable).parent / "daphne"
START_DEADLINE = 120  # seconds; a loaded machine migrates nothing here but imports the whole project


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_all(processes: list[subprocess.Popen]) -> None:
    """Stop the subprocesses a test started (daphne, Celery workers): terminate, then kill after 20 seconds."""
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def start_server(worker_env, tmp_path):
    """start(**extra_env) -> "127.0.0.1:port": daphne serving config.asgi:application against the test database,
    with SVC_BASE_URL its own address (the URLs its pages print point back at it). Stopped after the test."""
    processes = []

    def start(**extra_env) -> str:
        port = free_port()
        address = f"127.0.0.1:{port}"
        log_path = tmp_path / f"daphne-{port}.log"
        process = subprocess.Popen(
            [str(DAPHNE), "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
            env={**worker_env, "SVC_BASE_URL": f"http://{address}", **extra_env},
            stdout=subprocess.DEVNULL,
            stderr=log_path.open("wb"),
        )
        processes.append(process)
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
    stop_all(processes)


@pytest.fixture
def server(start_server) -> str:
    """One daphne for the test; its address ("127.0.0.1:port")."""
    return start_server()
