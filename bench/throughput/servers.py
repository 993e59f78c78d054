"""The two serving stacks measured, each started as its own process group against the benchmark database and
stopped as a whole (the new stack is several processes: the front proxy, the WSGI workers, daphne).

- old: `python -m config.server -b 127.0.0.1 -p N config.asgi:application`, one daphne process (what `make run`
  served before issue 16);
- new: `python -m config.serve --bind 127.0.0.1 --port N` (issue 16: a front proxy, a WSGI worker per core, daphne
  for the websockets).

Kept apart from bench.env.Server on purpose: that class is the other suites' server; this wrapper only needs the
command, the environment, the start-up check on /health/runtime and the process group."""

import contextlib
import importlib.util
import os
import signal
import subprocess
import time

from bench.client import Http
from bench.env import free_port
from bench.measure import proc_stat
from bench.paths import RESULTS, ROOT, VENV_BIN

STACKS = ("old", "new")
DESCRIPTIONS = {
    "old": "daphne only (python -m config.server)",
    "new": "python -m config.serve",
}


def command(stack: str, port: int) -> list[str]:
    python = str(VENV_BIN / "python")
    if stack == "old":
        return [python, "-m", "config.server", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"]
    if stack == "new":
        return [python, "-m", "config.serve", "--bind", "127.0.0.1", "--port", str(port)]
    raise ValueError(f"unknown stack {stack!r}")


def missing(stack: str) -> str | None:
    """Why `stack` cannot be started from this checkout, or None when it can."""
    module = "config.server" if stack == "old" else "config.serve"
    if importlib.util.find_spec(module) is None:
        return f"{module} is not in this checkout ({ROOT}/config)"
    return None


class StackServer:
    def __init__(self, stack: str, env: dict[str, str]):
        self.stack = stack
        self.env = env
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = RESULTS / f"throughput-{stack}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> None:  # config.serve allows its children 120 s
        RESULTS.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            command(self.stack, self.port),
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() ends every process it started
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise SystemExit(
                    f"bench: the {self.stack} server exited with {self.process.returncode}; see {self.log_path}"
                )
            http = Http("127.0.0.1", self.port)
            try:
                status, _, _ = http.request("GET", "/health/runtime")
                if status == 204:
                    return
            except OSError:
                pass
            finally:
                http.close()
            time.sleep(0.25)
        self.stop()
        raise SystemExit(
            f"bench: the {self.stack} server did not answer /health/runtime within {timeout:.0f}s; see {self.log_path}"
        )

    def processes(self) -> list[int]:
        """The server's process and every descendant still running (the new stack starts its children in process
        groups of their own, so they are found by parentage, not by group)."""
        if self.process is None or self.process.poll() is not None:
            return []
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                fields = proc_stat(int(entry))
                if fields is not None:
                    parents[int(entry)] = int(fields[1])
        found, frontier = [self.process.pid], [self.process.pid]
        while frontier:
            children = [pid for pid, parent in parents.items() if parent in frontier]
            found += children
            frontier = children
        return found

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the server's process group (the server stops what it started), then SIGKILL to any of its
        processes still there after `timeout` seconds."""
        if self.process is not None:
            started = self.processes()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            alive = started
            while time.monotonic() < deadline:
                self.process.poll()
                alive = [pid for pid in started if _alive(pid)]
                if not alive:
                    break
                time.sleep(0.1)
            for pid in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.wait()
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] != "Z"
