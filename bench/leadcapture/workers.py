"""The Celery workers of the capture benchmark: real `celery -A config worker` processes (the venv's `celery`
entry point, so config/celery.py gives them plain connections rather than a pool shared across the fork), on the
benchmark database and the benchmark Redis database as broker, with the settings the servers use
(bench.settings). They run the app's tasks unchanged: `apps.capture.tasks.drain_practice` for the captures
stored, the events' fan-out, and — with the embedded beat (`-B`, on by default) — the minute sweeps, among them
`apps.capture.tasks.sweep`, which retries a submission left `received` for 30 s.

Their PostgreSQL connections carry application_name `bench-capture-worker` (the daphne processes'
`bench-capture-daphne`), so the CPU of the benchmark database's backends can be split between the two."""

import os
import subprocess
import time

from bench import db
from bench.paths import RESULTS, ROOT, VENV_BIN

WORKER_APP_NAME = "bench-capture-worker"
DAPHNE_APP_NAME = "bench-capture-daphne"


def with_application_name(url: str, name: str) -> str:
    """The database URL with `application_name` (dj-database-url passes it to the connection's OPTIONS)."""
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (the prefork pool, the embedded beat), read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


class Workers:
    def __init__(self, url: str, *, count: int, concurrency: int, beat: bool, log):
        self.log = log
        self.names = [f"benchcapture{i}" for i in range(1, count + 1)]
        self.processes: list[subprocess.Popen] = []
        self.logs = []
        env = db.server_env(with_application_name(url, WORKER_APP_NAME))
        env["PYTHONUNBUFFERED"] = "1"
        # REDIS_URL and CELERY_BROKER_URL come from this process's environment (bench.leadcapture.run sets them to
        # the benchmark's Redis database before anything starts), as for the daphne processes.
        for index, name in enumerate(self.names):
            command = [
                str(VENV_BIN / "celery"),
                "-A",
                "config",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                str(concurrency),
                "--hostname",
                f"{name}@%h",
                "--loglevel",
                "WARNING",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
            ]
            if beat and index == 0:  # one beat for the lot
                schedule = RESULTS / "capture-celerybeat-schedule"
                for stale in RESULTS.glob("capture-celerybeat-schedule*"):
                    stale.unlink()
                command += ["--beat", "--schedule", str(schedule)]
            log_file = (RESULTS / f"capture-worker-{index + 1}.log").open("w")
            self.logs.append(log_file)
            self.processes.append(
                subprocess.Popen(command, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT)
            )

    def wait_ready(self, timeout: float = 90) -> None:
        from config.celery import app

        deadline = time.monotonic() + timeout
        wanted = set(self.names)
        while time.monotonic() < deadline:
            self.check()
            replies = app.control.ping(timeout=1.0)
            seen = {name.split("@")[0] for reply in replies for name in reply}
            if wanted <= seen:
                return
        raise SystemExit(f"bench: workers {sorted(wanted)} did not answer a ping within {timeout:.0f}s")

    def check(self) -> None:
        for name, process in zip(self.names, self.processes, strict=True):
            if process.poll() is not None:
                raise SystemExit(f"bench: worker {name} exited ({process.returncode}); see bench/results/")

    @property
    def pids(self) -> dict[str, int]:
        """Every process of the workers (parents, pool processes, beat), named "worker N …"."""
        found = {}
        for index, process in enumerate(self.processes, 1):
            found[f"worker {index}"] = process.pid
            for n, child in enumerate(sorted(children(process.pid)), 1):
                found[f"worker {index} child {n}"] = child
        return found

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()  # warm shutdown: the tasks running finish
        for process in self.processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log_file in self.logs:
            log_file.close()
