"""What every benchmark runs against, set up in one place: its database (URL, creating, migrating, raw psycopg
connections shaped like Django's), its Redis database, Django in this process, and the processes it starts —
the web tier (config.serve, or the old daphne-only server), Celery workers — with how they are stopped."""

import os
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.client_cursor import ClientCursorMixin

from bench.client import Http
from bench.paths import RESULTS, ROOT, VENV_BIN

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/practice_crm_bench"
SETTINGS_MODULE = "bench.settings"

# --- the database ---------------------------------------------------------------------------------------------------


def database_url(variable: str = "BENCH_DATABASE_URL", default: str = DEFAULT_URL) -> str:
    """A benchmark's database URL: the environment variable `variable`, else `default`."""
    return os.environ.get(variable) or default


def database_name(url: str) -> str:
    name = urlsplit(url).path.lstrip("/")
    if not name:
        raise SystemExit(f"bench: the database URL names no database: {url}")
    return name


def _admin_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/postgres", parts.query, parts.fragment))


def server_env(url: str) -> dict[str, str]:
    """Environment for every process that runs the app against the benchmark database."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE=SETTINGS_MODULE,
        DEBUG="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")])),
    )
    return env


def exists(url: str) -> bool:
    with psycopg.connect(_admin_url(url), autocommit=True, connect_timeout=5) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database_name(url)]).fetchone() is not None


def create(url: str) -> None:
    with psycopg.connect(_admin_url(url), autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database_name(url))))


def drop(url: str) -> None:
    name = database_name(url)
    if "bench" not in name:
        raise SystemExit(f"bench: refusing to drop {name!r}: a benchmark database's name must contain 'bench'")
    with psycopg.connect(_admin_url(url), autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def migrate(url: str, env: dict[str, str] | None = None) -> None:
    """manage.py migrate, with the benchmark's settings (or the environment `env` of a benchmark's own)."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=env or server_env(url),
        check=True,
    )


def rebuild(url: str, env: dict[str, str] | None = None) -> float:
    """The database dropped when there, created and migrated afresh; the seconds migrating took."""
    if exists(url):
        drop(url)
    create(url)
    t0 = time.monotonic()
    migrate(url, env)
    return time.monotonic() - t0


def manage(url: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=server_env(url), check=True, capture_output=True, text=True
    )
    return result.stdout


def connect(url: str, *, options: str = "", autocommit: bool = True) -> psycopg.Connection:
    """A raw connection shaped like Django's: client-side binding (ClientCursor), never prepared statements."""
    conn = psycopg.connect(
        url,
        autocommit=autocommit,
        options=f"-c TimeZone=UTC {options}".strip(),
        connect_timeout=5,
        prepare_threshold=None,
        cursor_factory=psycopg.ClientCursor,
    )
    return conn


class ServerSideCursor(ClientCursorMixin, psycopg.ServerCursor):
    """What Django's QuerySet.iterator() opens on PostgreSQL with psycopg 3 (client-side binding, named cursor)."""


# --- Redis and Django in this process -------------------------------------------------------------------------------


def flushable_redis_url(variable: str, default: str) -> str:
    """A benchmark's Redis URL (from `variable`, else `default`); it must name a database other than 0, because the
    benchmark flushes it."""
    url = os.environ.get(variable) or default
    number = urlsplit(url).path.lstrip("/")
    if not number.isdigit() or int(number) == 0:
        raise SystemExit(f"bench: the benchmark Redis URL must name a database other than 0 (it is flushed): {url}")
    return url


def flush_redis(url: str) -> None:
    """Empty the benchmark's Redis database (broker, cache, channel layer, rate-limit buckets)."""
    import redis

    redis.Redis.from_url(url).flushdb()


def setup_django(url: str, environ: dict[str, str] | None = None) -> None:
    """Django in this process, on the benchmark database: the environment of server_env(url), or `environ`."""
    os.environ.update(environ or server_env(url))
    import django

    django.setup()


# --- processes ------------------------------------------------------------------------------------------------------


def stop_processes(processes: list[subprocess.Popen], timeout: float) -> None:
    """Terminate every process still running, then wait for each, killing one that takes longer than `timeout`."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SERVED_APP = ["config.asgi:application"]


class Server:
    """The real HTTP stack against the benchmark database, as `make run` serves it: `python -m config.serve` (nginx on
    the port, gunicorn for HTTP, daphne for the websockets). `legacy=True` starts the server that served everything
    before issue 16 instead: one daphne process (`python -m config.server` serving config.asgi:application), for
    comparisons."""

    def __init__(self, url: str, log_path=None, *, legacy: bool = False):
        self.url = url
        self.legacy = legacy
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = log_path or RESULTS / ("daphne.log" if legacy else "serve.log")

    def command(self) -> list[str]:
        python = str(VENV_BIN / "python")
        if self.legacy:
            return [python, "-m", "config.server", "-b", "127.0.0.1", "-p", str(self.port), *SERVED_APP]
        return [python, "-m", "config.serve", "--bind", "127.0.0.1", "--port", str(self.port)]

    def start(self, timeout: float = 60.0) -> None:
        RESULTS.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            self.command(), cwd=ROOT, env=server_env(self.url), stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"bench: the server exited with {self.process.returncode}; see {self.log_path}")
            try:
                status, _, _ = Http("127.0.0.1", self.port).request("GET", "/health/runtime")
                if status == 204:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise SystemExit(f"bench: the server did not answer /health/runtime within {timeout:.0f}s; see {self.log_path}")

    @property
    def pid(self) -> int:
        """The process started: daphne itself (legacy), else the launcher (its children serve; see `pids`)."""
        assert self.process is not None
        return self.process.pid

    @property
    def pids(self) -> list[int]:
        """Every process of the stack: the one started and all its descendants (nginx, gunicorn and its workers,
        daphne), for CPU and memory readings."""
        found, queue = [], [self.pid]
        while queue:
            pid = queue.pop()
            found.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as children:
                        queue.extend(int(child) for child in children.read().split())
            except OSError:
                continue  # gone meanwhile
        return found

    def stop(self) -> None:
        if self.process is not None:
            stop_processes([self.process], timeout=20)
        if getattr(self, "_log", None):
            self._log.close()


def worker_arguments(name: str, *, pool: str, concurrency: int) -> list[str]:
    """`celery worker` arguments of a benchmark worker: its pool, hostname NAME@host, warnings only, and none of the
    heartbeat/gossip/mingle chatter between workers."""
    return [
        "worker",
        "--pool",
        pool,
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


class CeleryWorkers:
    """Celery worker processes of a benchmark, each started with `command(name)` and logging to a file of its own:
    ready once each answers a ping, checked for having exited, stopped (warm shutdown) at the end."""

    def __init__(self, names: list[str], *, env: dict[str, str], log_paths: list, commands: list[list[str]]):
        self.names = names
        self.processes: list[subprocess.Popen] = []
        self.logs = []
        for command, log_path in zip(commands, log_paths, strict=True):
            log_path.parent.mkdir(parents=True, exist_ok=True)  # bench/results is not in a fresh clone
            log_file = log_path.open("w")
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

    def stop(self, timeout: float = 30) -> None:
        stop_processes(self.processes, timeout)
        for log_file in self.logs:
            log_file.close()
