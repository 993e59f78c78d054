"""WSGI entry point: the application the WSGI server behind nginx serves (`python -m config.serve`).

REMOTE_ADDR keys the rate limits (apps/core/limits.py) and the session records, so behind the proxy it must still be
the real client. The WSGI server listens on a unix socket that only nginx can reach (a private run directory, or a
volume shared with the nginx container), and nginx overwrites X-Real-IP with the address it saw. A request arriving
over such a socket takes its REMOTE_ADDR from X-Real-IP; one arriving from a network peer (a server started on a
port, `manage.py runserver`) keeps its peer's address, whatever X-Real-IP or X-Forwarded-For it carries.
"""

import ipaddress
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
django_application = get_wsgi_application()


def is_ip_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def application(environ, start_response):
    peer = environ.get("REMOTE_ADDR") or ""
    forwarded = (environ.get("HTTP_X_REAL_IP") or "").strip()
    if not is_ip_address(peer) and is_ip_address(forwarded):  # a unix-socket peer: the proxy
        environ["REMOTE_ADDR"] = forwarded
    return django_application(environ, start_response)
