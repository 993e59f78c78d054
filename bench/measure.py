"""Measuring: the machine a run is on (CPU, memory, PostgreSQL settings, the code's commit), its load (the
`uptime` line, waiting for a quiet machine, the CPU time of every process while measuring), a process's memory, and
percentiles."""

import abc
import os
import platform
import re
import statistics
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from bench.paths import ROOT


def quantile(values: list[float], p: int) -> float:
    """The p-th percentile of `values` (statistics.quantiles, inclusive method), in their unit."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def uptime() -> str:
    """The `uptime` line (load averages), recorded beside each run's figures."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "uptime unavailable"


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


class Background(abc.ABC):
    """A thread running `_run()` from __enter__ until __exit__ sets `_stop` (the samplers below)."""

    def __init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @abc.abstractmethod
    def _run(self) -> None:
        """Sample until `self._stop` is set."""

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def load1() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far."""
    fields = proc_stat(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, float]:
    """CPU seconds so far of every process on the machine."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found[int(entry)] = cpu_seconds(int(entry))
    return found


def _title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return ""


def _system_cpu() -> tuple[int, int]:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class Sampler(Background):
    """During a measurement, every 0.5 s: the 1-minute load average and the CPU time of every process of the
    machine (a process first seen during the measurement counts from 0). At the end the CPU is split into the
    benchmark's workers, its receiver, the driver, the PostgreSQL backends of the benchmark database (told apart by
    their process title), the rest of PostgreSQL (other databases, background processes) and everything else."""

    def __init__(self, watched: dict[str, int], database: str):
        self.watched = watched
        self.database = database
        self.loads: list[float] = []
        super().__init__()
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._titles: dict[int, str] = {}

    def _sample(self, initial: bool = False) -> None:
        for pid, value in _processes().items():
            if pid not in self._first:
                self._first[pid] = value if initial else 0.0
                self._titles[pid] = _title(pid)
            self._last[pid] = value

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.loads.append(load1())
            self._sample()

    def __enter__(self) -> "Sampler":
        self.load_before = load1()
        self._sample(initial=True)
        self.system_before = _system_cpu()
        self.t0 = time.monotonic()
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        self.seconds = time.monotonic() - self.t0
        self.loads.append(load1())
        self._sample()
        delta = {pid: self._last[pid] - self._first[pid] for pid in self._last}
        self.cpu = {name: delta.get(pid, 0.0) for name, pid in self.watched.items()}
        ours = set(self.watched.values()) | {os.getpid()}
        self.driver_cpu = delta.get(os.getpid(), 0.0)
        self.postgres_cpu = self.postgres_other = self.postgres_shared = self.other_cpu = 0.0
        others: Counter = Counter()
        for pid, used in delta.items():
            if pid in ours or used <= 0:
                continue
            title = self._titles.get(pid, "")
            if title.startswith("postgres:") and f" {self.database} " in f" {title} ":
                self.postgres_cpu += used
            elif title.startswith("postgres:") and len(title.split()) < 5:
                self.postgres_shared += used  # checkpointer, WAL writer, background writer…: every database's
            elif title.startswith("postgres:"):
                self.postgres_other += used  # a backend of another database
                others[" ".join(title.split()[:4])] += used
            else:
                self.other_cpu += used
                others[title[:60] or str(pid)] += used
        self.top_others = [(name, round(used, 1)) for name, used in others.most_common(4)]
        busy0, total0 = self.system_before
        busy1, total1 = _system_cpu()
        self.machine_busy = (busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0

    def summary(self) -> dict:
        return {
            "load_before": self.load_before,
            "load_min": min(self.loads),
            "load_max": max(self.loads),
            "seconds": self.seconds,
            "cpu_s": self.cpu,
            "driver_cpu_s": self.driver_cpu,
            "postgres_cpu_s": self.postgres_cpu,
            "postgres_other_cpu_s": self.postgres_other,
            "postgres_shared_cpu_s": self.postgres_shared,
            "other_cpu_s": self.other_cpu,
            "top_others": self.top_others,
            "machine_busy": self.machine_busy,
        }


def wait_quiet(max_load: float, max_wait: float, log) -> float:
    """Wait until the 1-minute load average is below max_load (at most max_wait seconds); returns it."""
    deadline = time.monotonic() + max_wait
    value = load1()
    if value >= max_load:
        log(f"1-minute load average {value:.2f} ≥ {max_load}: waiting up to {max_wait:.0f}s for a quieter machine")
    while value >= max_load and time.monotonic() < deadline:
        time.sleep(5)
        value = load1()
    if value >= max_load:
        log(f"still {value:.2f} after {max_wait:.0f}s: measuring anyway (recorded next to the figures)")
    return value


def machine(conn) -> dict:
    cpu = _proc_field("/proc/cpuinfo", "model name") or "unknown CPU"
    total = _proc_field("/proc/meminfo", "MemTotal")
    memory = f"{int(total.split()[0]) / 1024 / 1024:.0f} GB RAM" if total else ""
    settings = dict(
        conn.execute(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings "
            "WHERE name IN ('shared_buffers', 'work_mem', 'jit', 'synchronous_commit', 'random_page_cost')"
        ).fetchall()
    )
    pg = conn.execute("SHOW server_version").fetchone()[0]
    import django

    return {
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "postgres": f"PostgreSQL {pg} (shared_buffers {_pages(settings.get('shared_buffers', ''))}, "
        f"work_mem {settings.get('work_mem', '?')}, jit {settings.get('jit', '?')}, "
        f"random_page_cost {settings.get('random_page_cost', '?')})",
        "python": f"Python {platform.python_version()}, Django {django.get_version()}, daphne",
        "code": code_version(),
    }


def code_version(*, changes: bool = True) -> str:
    """The commit measured, and (`changes`) whether app code had uncommitted changes (others edit in parallel)."""

    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if not changes:
        return f"commit {commit}"
    dirty = [line for line in git("status", "--porcelain", "--", "apps", "config").splitlines() if line.strip()]
    return f"commit {commit}" + (f" + uncommitted changes in {len(dirty)} app/config files" if dirty else "")


def _proc_field(path: str, name: str) -> str | None:
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _pages(value: str) -> str:
    match = re.fullmatch(r"(\d+)8kB", value)
    return f"{int(match.group(1)) * 8 // 1024} MB" if match else value


def rss_bytes(pid: int) -> int:
    """Resident set size of a process now (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class PeakRss(Background):
    """Samples the VmRSS of one process or several (a web tier's workers: whichever serves the request) every
    `interval` seconds on a thread, keeping each one's maximum; `growth` is the largest rise of any of them."""

    def __init__(self, pids: int | list[int], interval: float = 0.005):
        self.pids = [pids] if isinstance(pids, int) else list(pids)
        self.interval = interval
        self.baselines = {pid: rss_bytes(pid) for pid in self.pids}
        self.peaks = dict(self.baselines)
        super().__init__()

    def _sample(self) -> None:
        for pid in self.pids:
            try:
                self.peaks[pid] = max(self.peaks[pid], rss_bytes(pid))
            except (OSError, RuntimeError):
                continue  # a worker that exited meanwhile

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        self._sample()

    @property
    def baseline(self) -> int:
        """The resident size, before, of the process that grew most."""
        return self.baselines[self._grown_most()]

    @property
    def growth(self) -> int:
        pid = self._grown_most()
        return self.peaks[pid] - self.baselines[pid]

    def _grown_most(self) -> int:
        return max(self.pids, key=lambda pid: self.peaks[pid] - self.baselines[pid])


def logger(name: str, t0: float, width: int = 7):
    """print() with the run's elapsed seconds since `t0`: `[NAME   12.3s] message`."""

    def log(message: str) -> None:
        print(f"[{name} {time.monotonic() - t0:{width}.1f}s] {message}", flush=True)

    return log
