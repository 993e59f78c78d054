"""gunicorn's configuration for the web tier (`python -m config.serve` passes `-c python:config.gunicorn`, the bind
address and the worker count). nginx in front bounds the request line, headers and body first
(config/nginx/crm.conf.template), so gunicorn's own, smaller limits are lifted rather than answering differently.

gunicorn answers a request it cannot parse itself (a header value with a control character nginx lets through, say)
with an HTML page; here that answer is the service's JSON envelope, like every other error. gunicorn is pinned in
requirements/base.txt because this replaces its `util.write_error`; tests/e2e/test_server_edges.py covers it.
"""

import json
import os

from gunicorn import util

workers = int(os.environ.get("SVC_WEB_WORKERS") or os.cpu_count() or 1)  # a process per core
worker_class = "gthread"  # measured fastest here with nginx in front: docs/serving.md
threads = 4
keepalive = 75  # longer than nginx keeps an idle upstream connection (60 s), so nginx is the one that closes it
timeout = 120
graceful_timeout = 8  # within config.serve's STOP_TIMEOUT
limit_request_line = 0  # unlimited here: nginx refuses a line over 128 KiB (414)
limit_request_field_size = 256 * 1024  # above nginx's 128 KiB per header line (0 would mean gunicorn's 8190)
limit_request_fields = 32768  # gunicorn's maximum; nginx bounds the headers' total size
control_socket_disable = True

CODES = {
    400: "BAD_REQUEST",
    403: "FORBIDDEN",
    414: "URI_TOO_LONG",
    417: "EXPECTATION_FAILED",
    431: "HEADERS_TOO_LARGE",
    500: "INTERNAL_ERROR",
    501: "NOT_IMPLEMENTED",
}


def write_envelope(sock, status_int, reason, mesg):
    """gunicorn's error answer as the envelope. `mesg` is not echoed: it can quote the request line's query."""
    code = CODES.get(status_int, f"HTTP_{status_int}")
    message = "The request is not valid HTTP." if status_int < 500 else "The server could not answer this request."
    body = json.dumps({"code": code, "message": message, "details": {}}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


util.write_error = write_envelope
