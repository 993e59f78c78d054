"""The real HTTP stack: daphne serving config.asgi:application against the benchmark database, and its memory."""

import socket
import subprocess
import threading
import time
from pathlib import Path

from bench import db
from bench.client import Http
from bench.paths import RESULTS, ROOT, VENV_BIN


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_bytes(pid: int) -> int:
    """Resident set size of a process now (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Server:
    def __init__(self, url: str):
        self.url = url
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = RESULTS / "daphne.log"

    def start(self, timeout: float = 60.0) -> None:
        RESULTS.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), "config.asgi:application"],
            cwd=ROOT,
            env=db.server_env(self.url),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"bench: daphne exited with {self.process.returncode}; see {self.log_path}")
            try:
                status, _, _ = Http("127.0.0.1", self.port).request("GET", "/health/runtime")
                if status == 204:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise SystemExit(f"bench: daphne did not answer /health/runtime within {timeout:.0f}s; see {self.log_path}")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if getattr(self, "_log", None):
            self._log.close()


class PeakRss:
    """Samples a process's VmRSS every `interval` seconds on a thread, keeping the maximum."""

    def __init__(self, pid: int, interval: float = 0.005):
        self.pid, self.interval = pid, interval
        self.baseline = rss_bytes(pid)
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes(self.pid))

    @property
    def growth(self) -> int:
        return self.peak - self.baseline
