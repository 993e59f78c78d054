"""Issue 26 §7 and issue 16: `make run` (scripts/run.sh) as an operator meets it — a crashed process is started again
while the others keep serving (a dead part of the web tier restarts the whole tier), URLs follow PORT, and one Ctrl-C
stops everything, nginx, gunicorn's workers and daphne included."""

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.live import free_port

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"\[run\] started (\w+) \(pid (\d+)\)")


class RunScript:
    def __init__(self, env: dict):
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            ["bash", "scripts/run.sh"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a terminal's Ctrl-C reaches the script alone; so does our SIGINT
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def pids(self, name: str) -> list[int]:
        return [int(m[2]) for line in self.lines if (m := STARTED.search(line)) and m[1] == name]

    def wait_for(self, condition, what: str, timeout: float = 120):
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.process.poll() is None, "\n".join(self.lines[-40:])
            assert time.monotonic() < deadline, f"{what} did not happen in time\n" + "\n".join(self.lines[-40:])
            time.sleep(0.3)


def answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2).status_code == 204
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(FileNotFoundError):  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    return False


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`, with its command line."""
    found: dict[int, str] = {}
    queue = [pid]
    while queue:
        parent = queue.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{parent}/task"):
                for child in Path(f"/proc/{parent}/task/{task}/children").read_text().split():
                    found[int(child)] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                    queue.append(int(child))
    return found


def web_tier(run: RunScript) -> dict[int, str]:
    """The latest web's launcher and what it started: nginx (master and worker), gunicorn (arbiter and a worker
    per core), daphne."""
    launcher = run.pids("web")[-1]
    return {launcher: "config.serve"} | descendants(launcher)


def test_a_crashed_worker_is_restarted_and_ctrl_c_stops_everything(worker_env):
    port = free_port()
    env = {**worker_env, "DJANGO_SETTINGS_MODULE": "config.settings.dev", "PORT": str(port)}
    env.pop("SVC_BASE_URL", None)
    run = RunScript(env)
    base = f"http://localhost:{port}"
    try:
        run.wait_for(lambda: answers(f"{base}/health/runtime"), "web answering")
        run.wait_for(lambda: len(run.pids("worker")) == 1 and len(run.pids("beat")) == 1, "worker and beat started")

        # URLs the service hands out follow PORT when SVC_BASE_URL is not set.
        metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server/auth", timeout=10).json()
        assert metadata["issuer"] == f"http://localhost:{port}/auth"

        # A part of the web tier dies: the launcher stops the rest and exits non-zero, and run.sh starts web again.
        first_tier = web_tier(run)
        commands = " | ".join(first_tier.values())
        assert "nginx: master" in commands and "nginx: worker" in commands, commands
        assert sum("gunicorn" in command for command in first_tier.values()) == 1 + os.cpu_count(), commands
        daphne = next(pid for pid, command in first_tier.items() if "config.server" in command)
        os.kill(daphne, signal.SIGKILL)
        run.wait_for(lambda: len(run.pids("web")) == 2, "web's restart", timeout=60)
        assert any("web exited (status 1)" in line for line in run.lines), "\n".join(run.lines[-40:])
        assert not [pid for pid in first_tier if alive(pid)]  # nothing of the first tier is left behind
        run.wait_for(lambda: answers(f"{base}/health/runtime"), "web answering again")

        first_worker = run.pids("worker")[0]
        os.kill(first_worker, signal.SIGKILL)
        run.wait_for(lambda: len(run.pids("worker")) == 2, "the worker's restart", timeout=60)
        assert any("worker exited" in line for line in run.lines)
        assert answers(f"{base}/health/runtime")  # web kept serving, beat kept running
        assert len(run.pids("web")) == 2 and len(run.pids("beat")) == 1

        children = list(web_tier(run)) + run.pids("worker")[-1:] + run.pids("beat")
        os.killpg(run.process.pid, signal.SIGINT)
        assert run.process.wait(timeout=60) == 130
        assert not [pid for pid in children if alive(pid)]
        assert not answers(f"{base}/health/runtime")
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
