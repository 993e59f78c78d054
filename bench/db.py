"""The benchmark database: its URL, creating it, migrating it, and raw psycopg connections to it."""

import os
import subprocess
import sys
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.client_cursor import ClientCursorMixin

from bench.paths import ROOT

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/practice_crm_bench"
SETTINGS_MODULE = "bench.settings"


def database_url() -> str:
    return os.environ.get("BENCH_DATABASE_URL") or DEFAULT_URL


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


def migrate(url: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=server_env(url), check=True
    )


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


def uptime() -> str:
    """The `uptime` line (load averages), recorded beside each run's figures."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "uptime unavailable"


def flushable_redis_url(variable: str, default: str) -> str:
    """A benchmark's Redis URL (from `variable`, else `default`); it must name a database other than 0, because the
    benchmark flushes it."""
    url = os.environ.get(variable) or default
    number = urlsplit(url).path.lstrip("/")
    if not number.isdigit() or int(number) == 0:
        raise SystemExit(f"bench: the benchmark Redis URL must name a database other than 0 (it is flushed): {url}")
    return url
