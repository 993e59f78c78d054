"""The Celery workers of the capture benchmark: real `celery -A config worker` processes (the venv's `celery`
entry point, so config/celery.py gives them plain connections rather than a pool shared across the fork), on the
benchmark database and the benchmark Redis database as broker, with the settings the servers use
(bench.settings). They run the app's tasks unchanged: `apps.capture.tasks.drain_practice` for the captures
stored, the events' fan-out, and — with the embedded beat (`-B`, on by default) — the minute sweeps, among them
`apps.capture.tasks.sweep`, which retries a submission left `received` for 30 s.

Their PostgreSQL connections carry application_name `bench-capture-worker` (the daphne processes'
`bench-capture-daphne`), so the CPU of the benchmark database's backends can be split between the two."""

import os

from bench import env
from bench.measure import proc_stat
from bench.paths import RESULTS, VENV_BIN

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
        fields = proc_stat(int(entry))
        if fields is not None and len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry))
    return found


class Workers(env.CeleryWorkers):
    def __init__(self, url: str, *, count: int, concurrency: int, beat: bool, log):
        self.log = log
        names = [f"benchcapture{i}" for i in range(1, count + 1)]
        environ = env.server_env(with_application_name(url, WORKER_APP_NAME))
        environ["PYTHONUNBUFFERED"] = "1"
        # REDIS_URL and CELERY_BROKER_URL come from this process's environment (bench.leadcapture.run sets them to
        # the benchmark's Redis database before anything starts), as for the daphne processes.
        commands = []
        for index, name in enumerate(names):
            command = [
                str(VENV_BIN / "celery"),
                "-A",
                "config",
                *env.worker_arguments(name, pool="prefork", concurrency=concurrency),
            ]
            if beat and index == 0:  # one beat for the lot
                schedule = RESULTS / "capture-celerybeat-schedule"
                for stale in RESULTS.glob("capture-celerybeat-schedule*"):
                    stale.unlink()
                command += ["--beat", "--schedule", str(schedule)]
            commands.append(command)
        super().__init__(
            names,
            env=environ,
            log_paths=[RESULTS / f"capture-worker-{index}.log" for index in range(1, count + 1)],
            commands=commands,
        )

    @property
    def pids(self) -> dict[str, int]:
        """Every process of the workers (parents, pool processes, beat), named "worker N …"."""
        found = {}
        for index, process in enumerate(self.processes, 1):
            found[f"worker {index}"] = process.pid
            for n, child in enumerate(sorted(children(process.pid)), 1):
                found[f"worker {index} child {n}"] = child
        return found

    def stop(self, timeout: float = 60) -> None:
        super().stop(timeout)  # warm shutdown: the tasks running finish
