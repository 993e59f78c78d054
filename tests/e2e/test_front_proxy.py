"""Issue 16: the web tier behind nginx (`python -m config.serve`) through HTTP — the client's address is the one nginx
saw whatever the client claims, nginx's own gateway errors are the envelope, and the launcher stops everything it
started (and exits non-zero when a part dies, so scripts/run.sh starts the tier again)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from apps.accounts.models import UserSession
from config.serve import Launcher
from tests.e2e.test_run_script import alive, descendants
from tests.live import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_client_sent_forwarded_for_does_not_spoof_the_address(owner, web_server):
    """REMOTE_ADDR (rate-limit keys, session records) is nginx's $remote_addr: X-Forwarded-For and X-Real-IP from the
    client are overwritten by nginx, and the WSGI side believes them only from nginx's unix socket."""
    response = httpx.post(
        f"http://{web_server}/auth/sign-in/email",
        json={"email": owner.user.email, "password": "correct-horse-battery-9"},
        headers={"X-Forwarded-For": "203.0.113.7", "X-Real-IP": "203.0.113.8", "Forwarded": "for=203.0.113.9"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert [record.ip_address for record in UserSession.objects.filter(user=owner.user)] == ["127.0.0.1"]


def test_nginx_answers_an_unreachable_upstream_in_the_envelope(tmp_path):
    """nginx on the real template, with nothing behind its sockets: 502 in the envelope, for HTTP and sockets."""
    port = free_port()
    launcher = Launcher("127.0.0.1", port, workers=1)
    launcher.prepare()
    launcher.spawn("nginx", launcher.nginx_command())
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                response = httpx.get(f"http://127.0.0.1:{port}/patients?q=Featherstonehaugh", timeout=5)
                break
            assert time.monotonic() < deadline, "nginx did not answer"
            time.sleep(0.1)
        for answer in (response, httpx.get(f"http://127.0.0.1:{port}/today/ws", timeout=5)):
            assert answer.status_code == 502
            assert answer.headers["content-type"] == "application/json"
            assert answer.headers["retry-after"] == "5"
            assert answer.json() == {
                "code": "BAD_GATEWAY",
                "message": "The service is not answering; try again shortly.",
                "details": {},
            }
    finally:
        launcher.stop()
    assert not alive(launcher.children["nginx"].pid)


def start_launcher(env: dict, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    address = f"127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "config.serve", "--bind", "127.0.0.1", "--port", str(port)],
        env={**env, "SVC_BASE_URL": f"http://{address}"},
        stdout=(log := log_path.open("wb")),
        stderr=log,
    )
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, log_path.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "the web tier did not answer in time"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://{address}/health/runtime", timeout=2).status_code == 204:
                return process, address
        time.sleep(0.2)


def test_sigterm_stops_every_process_of_the_tier(worker_env, tmp_path):
    process, _ = start_launcher(worker_env, tmp_path / "serve.log")
    tier = descendants(process.pid)
    commands = " | ".join(tier.values())
    assert "nginx: master" in commands and "nginx: worker" in commands and "config.server" in commands, commands
    assert sum("gunicorn" in command for command in tier.values()) == 1 + os.cpu_count(), commands

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert not [pid for pid in tier if alive(pid)]


def test_when_a_part_dies_the_launcher_stops_the_rest_and_exits_non_zero(worker_env, tmp_path):
    process, address = start_launcher(worker_env, tmp_path / "serve.log")
    tier = descendants(process.pid)
    arbiter = next(pid for pid, command in tier.items() if "gunicorn" in command)  # the launcher's child comes first
    os.kill(arbiter, signal.SIGKILL)
    assert process.wait(timeout=30) == 1
    assert "web exited" in (tmp_path / "serve.log").read_text(errors="replace")
    assert not [pid for pid in tier if alive(pid)]
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://{address}/health/runtime", timeout=2)


def test_the_nginx_template_is_the_one_compose_mounts():
    """docker/compose.yaml's nginx renders the same template with the same three variables, on the one public port;
    web and sockets listen on the sockets it names."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    compose = yaml.safe_load((root / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    nginx = services["nginx"]
    assert "../config/nginx/crm.conf.template:/etc/nginx/templates/default.conf.template:ro" in nginx["volumes"]
    template = (root / "config" / "nginx" / "crm.conf.template").read_text()
    for variable in nginx["environment"]:
        assert "${" + variable + "}" in template
    assert [name for name, service in services.items() if "8787" in json.dumps(service.get("ports", []))] == ["nginx"]
    web_socket = nginx["environment"]["SVC_WEB_UPSTREAM"].removeprefix("unix:")
    sockets_socket = nginx["environment"]["SVC_SOCKETS_UPSTREAM"].removeprefix("unix:")
    assert services["web"]["command"][services["web"]["command"].index("--bind") + 1] == f"unix:{web_socket}"
    assert "python:config.gunicorn" in services["web"]["command"]
    sockets = services["sockets"]["command"]
    assert sockets[sockets.index("-u") + 1] == sockets_socket and "--proxy-headers" in sockets
