"""The whole web tier on one port: `python -m config.serve --bind 127.0.0.1 --port 8787`.

Starts, with a run directory `.local/serve-<port>/` for sockets, configuration, pid and temp files:
- nginx on the public address, configured from config/nginx/crm.conf.template (the template docker/compose.yaml's
  nginx service renders too): it answers the protocol's edges in the JSON envelope and routes by path;
- the WSGI server (gunicorn, SVC_WEB_WORKERS worker processes, default one per core) for all plain HTTP, on a unix
  socket;
- daphne (`config.server`, with --proxy-headers) for the websocket paths: SVC_SOCKET_WORKERS processes (default one
  per core) accepting on another unix socket, which the launcher binds and hands to each.

It waits until all three answer, then supervises nothing beyond this: when any of them exits, it stops the others and
exits 1 (scripts/run.sh, like compose's restart policy, starts the whole web tier again). SIGTERM or SIGINT stops
every child and its process group (SIGKILL after STOP_TIMEOUT seconds) and exits 0. docs/serving.md says why this
shape and this WSGI server (measured).
"""

import argparse
import http.client
import os
import pwd
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "config" / "nginx" / "crm.conf.template"
# What nginx accepts (config/nginx/crm.conf.template; docs/serving.md; tests/e2e/test_server_edges.py): a request
# line of up to 128 KiB, each header line up to as much, in at most HEADER_BUFFERS buffers of that size.
MAX_REQUEST_LINE_BYTES = 128 * 1024
MAX_HEADER_LINE_BYTES = 128 * 1024
HEADER_BUFFERS = 4
START_TIMEOUT = 120  # seconds; a loaded machine imports the whole project in each process
STOP_TIMEOUT = 10  # well under scripts/run.sh's STOP_TIMEOUT (20), which kills this process's group after it

NGINX_MAIN = """\
# Written by config/serve.py: nginx as the current user, everything under the run directory.
{user}daemon off;
master_process on;
worker_processes 1;  # measured against auto on 2 cores: docs/serving.md
pid {run}/nginx.pid;
error_log stderr warn;
events {{
    worker_connections 4096;  # each proxied websocket holds two (client and daphne): 500 widget sockets need 1000+
}}
http {{
    client_body_temp_path {run}/tmp/body;
    proxy_temp_path {run}/tmp/proxy;
    fastcgi_temp_path {run}/tmp/fastcgi;
    uwsgi_temp_path {run}/tmp/uwsgi;
    scgi_temp_path {run}/tmp/scgi;
    include {run}/crm.conf;
}}
"""


def render_template(text: str, values: dict[str, str]) -> str:
    """envsubst as the nginx image runs it: only the named ${VARIABLES}; nginx's own $variables stay."""
    return string.Template(text).safe_substitute(values)


def web_command(socket_path: Path, workers: int) -> list[str]:
    """gunicorn; its settings, and why gthread: config/gunicorn.py and docs/serving.md."""
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    return [
        gunicorn,
        "-c",
        "python:config.gunicorn",
        "-b",
        f"unix:{socket_path}",
        "-w",
        str(workers),
        "config.wsgi:application",
    ]


# The daphne processes read the channel layer with a Redis read timeout longer than its 5-second blocking pop
# (redis-py's default is also 5 s: under load the read lost the race and the socket closed 1011; bench/widget).
SOCKETS_ENV = {"SVC_CHANNEL_LAYER_SOCKET_TIMEOUT": os.environ.get("SVC_CHANNEL_LAYER_SOCKET_TIMEOUT") or "30"}


def sockets_command(listener_fd: int) -> list[str]:
    """One daphne process accepting on the shared listening unix socket (descriptor `listener_fd`, inherited)."""
    return [
        sys.executable,
        "-m",
        "config.server",
        "-e",
        f"fd:fileno={listener_fd}:domain=UNIX",
        "--proxy-headers",  # the client's address from nginx's X-Forwarded-For (only nginx reaches the socket)
        "config.asgi:application",
    ]


def answers(path: Path | tuple[str, int]) -> bool:
    """Does the server on this unix socket (or host and port) answer GET /health/runtime with 204?"""
    try:
        if isinstance(path, Path):
            connection = http.client.HTTPConnection("localhost", timeout=2)
            connection.sock = socket.socket(socket.AF_UNIX)
            connection.sock.settimeout(2)
            connection.sock.connect(str(path))
        else:
            connection = http.client.HTTPConnection(*path, timeout=2)
        connection.request("GET", "/health/runtime")
        status = connection.getresponse().status
        connection.close()
    except OSError:
        return False
    return status == 204


class Stop(Exception):
    pass


def say(message: str) -> None:
    print(f"[serve] {message}", file=sys.stderr, flush=True)


class Launcher:
    def __init__(self, bind: str, port: int, workers: int, socket_workers: int = 1):
        self.bind, self.port, self.workers, self.socket_workers = bind, port, workers, socket_workers
        self.listener: socket.socket | None = None
        self.run = ROOT / ".local" / f"serve-{port}"
        self.children: dict[str, subprocess.Popen] = {}

    def prepare(self) -> None:
        shutil.rmtree(self.run, ignore_errors=True)  # stale sockets and pid files of an earlier run
        (self.run / "tmp").mkdir(parents=True, mode=0o700)
        self.run.chmod(0o700)  # only this user (and so only nginx) reaches the sockets
        listen = f"[{self.bind}]:{self.port}" if ":" in self.bind else f"{self.bind}:{self.port}"
        conf = render_template(
            TEMPLATE.read_text(),
            {
                "SVC_LISTEN": listen,
                "SVC_WEB_UPSTREAM": f"unix:{self.run / 'web.sock'}",
                "SVC_SOCKETS_UPSTREAM": f"unix:{self.run / 'sockets.sock'}",
            },
        )
        (self.run / "crm.conf").write_text(conf)
        # A root master would hand its workers to `nobody`, who cannot enter the run directory.
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
        (self.run / "nginx.conf").write_text(NGINX_MAIN.format(run=self.run, user=user))

    def spawn(self, name: str, command: list[str], pass_fds: tuple[int, ...] = (), env: dict | None = None) -> None:
        # Its own process group, so stopping it reaches its workers; SIGINT from a terminal reaches only us.
        self.children[name] = subprocess.Popen(  # noqa: S603 (our own commands)
            command, cwd=ROOT, process_group=0, pass_fds=pass_fds, env={**os.environ, **(env or {})}
        )
        say(f"started {name} (pid {self.children[name].pid})")

    def check(self) -> None:
        for name, child in self.children.items():
            if child.poll() is not None:
                raise RuntimeError(f"{name} exited (status {child.returncode})")

    def wait_until(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            self.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer within {START_TIMEOUT} s")
            time.sleep(0.2)

    def nginx_command(self, *options: str) -> list[str]:
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"  # /usr/sbin is not on every user's PATH
        # -e: the error log before the configuration is read (the compiled-in path is root's /var/log/nginx).
        return [nginx, *options, "-e", "stderr", "-p", str(self.run), "-c", "nginx.conf"]

    def start(self) -> None:
        self.prepare()
        # A broken configuration fails here, plainly.
        subprocess.run(self.nginx_command("-t", "-q"), check=True)  # noqa: S603 (our own command)
        self.spawn("web", web_command(self.run / "web.sock", self.workers))
        # daphne is one process on one core: SVC_SOCKET_WORKERS of them accept on one listening socket that this
        # launcher binds (the kernel spreads connections, as gunicorn's workers share theirs), so nginx keeps one
        # upstream and a socket lives in one process for its whole life (bench/widget measured 1 against 2).
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.run / "sockets.sock"))
        self.listener.listen(1024)
        for number in range(self.socket_workers):
            fd = self.listener.fileno()
            self.spawn(f"sockets-{number + 1}", sockets_command(fd), pass_fds=(fd,), env=SOCKETS_ENV)
        self.wait_until(lambda: answers(self.run / "web.sock"), "web")
        self.wait_until(lambda: answers(self.run / "sockets.sock"), "sockets")
        # nginx last: once the port accepts connections, everything behind it answers (no 502 while booting).
        self.spawn("nginx", self.nginx_command())
        host = "127.0.0.1" if self.bind in ("0.0.0.0", "::") else self.bind  # noqa: S104 (a check, not a bind)
        self.wait_until(lambda: answers((host, self.port)), "nginx")
        say(
            f"serving on http://{self.bind}:{self.port} (web: {self.workers} gunicorn workers; "
            f"sockets: {self.socket_workers} daphne processes)"
        )

    def stop(self) -> None:
        for child in self.children.values():
            with _gone():
                os.killpg(child.pid, signal.SIGTERM)  # nginx: fast shutdown; gunicorn: graceful; daphne: stop
        deadline = time.monotonic() + STOP_TIMEOUT
        for name, child in self.children.items():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{name} did not stop in time; killing it")
        for child in self.children.values():  # the group too: workers outliving their master
            with _gone():
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        if self.listener is not None:
            self.listener.close()
        shutil.rmtree(self.run, ignore_errors=True)  # sockets, configuration and temp files of this run


class _gone:
    """Context: a process (group) that has already gone is not an error."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        return kind is ProcessLookupError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--check", metavar="SOCKET", help="only check that the server on this unix socket answers")
    args = parser.parse_args(argv)
    if args.check:  # docker/compose.yaml's health check of web and sockets
        return 0 if answers(Path(args.check)) else 1
    workers = int(os.environ.get("SVC_WEB_WORKERS") or os.cpu_count() or 1)
    socket_workers = int(os.environ.get("SVC_SOCKET_WORKERS") or os.cpu_count() or 1)

    def on_signal(signum, frame):
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    launcher = Launcher(args.bind, args.port, workers, socket_workers)
    status = 0
    try:
        launcher.start()
        while True:
            launcher.check()
            time.sleep(0.5)
    except Stop as stop:
        say(f"received {stop}, stopping nginx, web and sockets")
    except (RuntimeError, subprocess.CalledProcessError) as error:
        say(f"{error}; stopping the others")
        status = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not interrupt the stop
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        launcher.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
