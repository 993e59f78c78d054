"""The production web tier (`python -m config.serve`, what `make run` serves: nginx in front of the WSGI server and of
daphne for the websockets) on a free port, serving the test database: for the tests that need a real server (protocol
edges, live WebSocket updates, the headless-browser tests, the pool's failover). Use with `worker_env`
(tests/e2e/conftest.py), which gives the subprocess the test database and this worker's Redis database."""

import contextlib
import socket
import subprocess
import sys
import time

import httpx
import pytest

START_DEADLINE = 120  # seconds; a loaded machine migrates nothing here but imports the whole project


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_all(processes: list[subprocess.Popen]) -> None:
    """Stop the subprocesses a test started (servers, Celery workers): terminate, then kill after 20 seconds."""
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def start_server(worker_env, tmp_path):
    """start(**extra_env) -> "127.0.0.1:port": the server against the test database, with SVC_BASE_URL its own
    address (the URLs its pages print point back at it); answering once /health/runtime is 204 through nginx. Its
    output, nginx's access log included, goes to tmp_path / "web-<n>.log" (the first one web-0.log). Stopped after
    the test."""
    processes = []

    def start(**extra_env) -> str:
        port = free_port()
        address = f"127.0.0.1:{port}"
        log_path = tmp_path / f"web-{len(processes)}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "config.serve", "--bind", "127.0.0.1", "--port", str(port)],
            env={**worker_env, "SVC_BASE_URL": f"http://{address}", **extra_env},
            stdout=(log := log_path.open("wb")),
            stderr=log,
        )
        processes.append(process)
        deadline = time.monotonic() + START_DEADLINE
        status = None
        while status != 204:
            assert process.poll() is None, log_path.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, f"the server did not answer 204 in time (last: {status})"
            with contextlib.suppress(httpx.HTTPError):
                status = httpx.get(f"http://{address}/health/runtime", timeout=2).status_code
            time.sleep(0.2)
        return address

    yield start
    stop_all(processes)


@pytest.fixture
def web_server(start_server) -> str:
    """One server for the test; its address ("127.0.0.1:port"), its log tmp_path / "web-0.log"."""
    return start_server()
