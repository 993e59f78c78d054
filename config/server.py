"""The HTTP server: daphne with the edges of the protocol answered in the JSON error envelope.

Run it as daphne is run: `python -m config.server -b 127.0.0.1 -p 8787 config.asgi:application`.

Stock daphne (Twisted's HTTP channel underneath) has three behaviours this service cannot keep:
- Twisted parses every urlencoded and multipart POST body into `request.args` before the application runs, so an
  unauthenticated client could make the web process parse megabytes of tiny parts before any route cap or
  authentication applied (and daphne never reads `request.args`). Parsing is switched off here: Django parses a body
  only after the route's body cap (core.middleware.BodySizeLimitMiddleware) has accepted it.
- A request it cannot parse (a malformed request line, header or chunked body) got a bare `HTTP/1.1 400` with no
  headers and no body, daphne's own refusals (a header name or query it cannot decode, an application that crashed
  or timed out) an HTML page, and a request line or header over 16 KiB had its connection closed with no answer at all.
  Every such answer is the JSON envelope here, with 414 for a long request line and 431 for long headers.
- Its access log wrote each request's query string, where searches carry patients' names, e-mails and phones; the
  log here keeps the path and drops the query.
- The request line limit is raised to SVC_MAX_REQUEST_LINE_BYTES, so every query the OpenAPI schema documents
  (a 4000-character `filters` of any script, an export's `ids`) fits.
- A websocket closed by the application lost its reason (daphne sends the code only), and the protocol's own codes
  1003 and 1009 made autobahn raise (it lets an application send only 1000 and 3000-4999), which closed the socket
  with 1011 instead: here the close frame carries the application's code and reason (the chat widget's refusals).
"""

import json
import socket

from daphne import cli as daphne_cli
from daphne import server as daphne_server
from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from django.conf import settings
from twisted.internet import endpoints
from twisted.plugins import fd_endpoint  # daphne's `fd:` endpoint parser, installed into Twisted's plugins
from twisted.web import http

# Bytes, not characters: a 4000-character `filters` of 4-byte characters is 48,000 bytes once percent-encoded, and
# the export's 1000 `ids` another 37,000; every documented query at its maximum fits together.
MAX_REQUEST_LINE_BYTES = 128 * 1024
MAX_HEADER_BYTES = 32 * 1024  # all header lines together, beside the request line


def envelope_response(status: int, reason: str, code: str, message: str, details: dict | None = None) -> bytes:
    """A complete HTTP/1.1 response carrying the service's error envelope; the connection closes after it."""
    body = json.dumps({"code": code, "message": message, "details": details or {}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n"
        "Cache-Control: no-store\r\n"
        "\r\n"
    ).encode()
    return head + body


BAD_REQUEST = envelope_response(
    400, "Bad Request", "BAD_REQUEST", "The request is not valid HTTP (request line, headers or body framing)."
)
URI_TOO_LONG = envelope_response(
    414,
    "URI Too Long",
    "URI_TOO_LONG",
    "The request line is longer than this service accepts; send long selections in a request body.",
    {"maxBytes": MAX_REQUEST_LINE_BYTES},
)


def payload_too_large(max_bytes: int) -> bytes:
    return envelope_response(
        413,
        "Content Too Large",
        "PAYLOAD_TOO_LARGE",
        "The request body is larger than this service accepts.",
        {"maxBytes": max_bytes},
    )


HEADERS_TOO_LARGE = envelope_response(
    431,
    "Request Header Fields Too Large",
    "HEADERS_TOO_LARGE",
    "The request headers are larger than this service accepts.",
    {"maxBytes": MAX_HEADER_BYTES},
)


class EnvelopeHTTPChannel(http.HTTPChannel):
    """Twisted's HTTP/1.1 channel, answering what it refuses in the envelope instead of a bare 400 or silence."""

    MAX_LENGTH = MAX_REQUEST_LINE_BYTES  # LineReceiver: the longest single line (request line or one header)
    totalHeadersSize = MAX_REQUEST_LINE_BYTES + MAX_HEADER_BYTES

    def _awaiting_request_line(self) -> bool:
        return bool(self._HTTPChannel__first_line)

    _header_bytes = 0

    def lineReceived(self, line):
        if self._awaiting_request_line():
            self._header_bytes = 0  # a new request on this connection
        else:
            self._header_bytes += len(line)
            if self._header_bytes > MAX_HEADER_BYTES:
                return self._refuse(HEADERS_TOO_LARGE)
        return super().lineReceived(line)

    def lineLengthExceeded(self, line):
        return self._refuse(URI_TOO_LONG if self._awaiting_request_line() else HEADERS_TOO_LARGE)

    def _respondToBadRequestAndDisconnect(self):
        self._refuse(BAD_REQUEST)

    _refused = False

    def _refuse(self, response: bytes):
        if self._refused:
            return
        self._refused = True
        self.transport.write(response)
        # Half-close: the client may still be sending (a long body or header); closing outright would answer its
        # next bytes with a reset that can discard our response before the client reads it. What it still sends is
        # ignored, and the channel's idle timeout closes the connection if the client never does.
        self.dataReceived = self.lineReceived = self.rawDataReceived = _ignore
        self.transport.loseWriteConnection()


def _ignore(*args):
    return None


class UnparsedBodyRequest(WebRequest):
    """daphne's request without Twisted's own form parsing (daphne hands the raw body to the application), refusing
    a body over the platform-wide maximum while it arrives rather than spooling it to disk first. Each route's own,
    smaller cap is applied by the application before anything parses the body."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._parsePOSTFormSubmission = False
        self._body_bytes = 0
        self._max_body_bytes = settings.SVC_MAX_BODY_BYTES

    def gotLength(self, length):
        if length is not None and length > self._max_body_bytes:
            self.channel._refuse(payload_too_large(self._max_body_bytes))
            length = 0  # nothing of it will be read: the connection is closing
        super().gotLength(length)

    # daphne's own answers (an invalid header, path or query; the application crashed or did not answer in time).
    BASIC_ERROR_CODES = {400: "BAD_REQUEST", 500: "INTERNAL_ERROR", 503: "SERVICE_UNAVAILABLE"}

    def basic_error(self, status, status_text, body):
        """daphne writes these as an HTML page; here they are the envelope like every other error."""
        payload = json.dumps(
            {"code": self.BASIC_ERROR_CODES.get(status, f"HTTP_{status}"), "message": body, "details": {}}
        ).encode()
        headers = [(b"Content-Type", b"application/json"), (b"Content-Length", str(len(payload)).encode())]
        if status == 503:
            headers.append((b"Retry-After", b"5"))
        self.handle_reply({"type": "http.response.start", "status": status, "headers": headers})
        self.handle_reply({"type": "http.response.body", "body": payload})

    def handleContentChunk(self, data):
        self._body_bytes += len(data)
        if self._body_bytes > self._max_body_bytes:  # a chunked body has no length to check up front
            self.channel._refuse(payload_too_large(self._max_body_bytes))
            return
        super().handleContentChunk(data)


class EnvelopeHTTPFactory(HTTPFactory):
    def protocol(self):
        return http._GenericHTTPChannelProtocol(EnvelopeHTTPChannel())

    def buildProtocol(self, addr):
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = UnparsedBodyRequest
        return protocol


# Close codes an endpoint may send (RFC 6455 7.4; 1004-1006 and 1015 are never sent), and the reason's limit in bytes.
SENDABLE_CLOSE_CODES = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, *range(3000, 5000)}
MAX_CLOSE_REASON_BYTES = 123


class ReasonedWebSocketProtocol(WebSocketProtocol):
    """daphne's websocket protocol, closing with the application's code and reason."""

    def handle_reply(self, message):
        if message.get("type") == "websocket.close" and self.state == self.STATE_OPEN:
            code = message.get("code") or 1000
            if code not in SENDABLE_CLOSE_CODES:
                code = 1011
            reason = (message.get("reason") or "").encode("utf-8")[:MAX_CLOSE_REASON_BYTES]
            # A reason cut inside a character would not be UTF-8: drop the partial character.
            reason = reason.decode("utf-8", "ignore").encode("utf-8")
            self.sendCloseFrame(code=code, reasonUtf8=reason or None, isReply=False)
            return
        super().handle_reply(message)


class ReasonedWebSocketFactory(WebSocketFactory):
    protocol = ReasonedWebSocketProtocol


class QuerylessAccessLog(AccessLogGenerator):
    """daphne's access log without query strings (no personal data in logs)."""

    def __call__(self, protocol, action, details):
        path = details.get("path")
        if isinstance(path, str):
            details = details | {"path": path.split("?", 1)[0]}
        return super().__call__(protocol, action, details)


def _adopt_listening_socket(self, reactor, fileno, domain="INET"):
    """daphne's `fd:` endpoint, with `domain=UNIX` understood: its plugin hands the domain string to Twisted as the
    address family, so only TCP descriptors could be adopted. config.serve binds one unix socket that several daphne
    processes accept on (`-e fd:fileno=N:domain=UNIX`)."""
    family = getattr(socket, f"AF_{domain}") if isinstance(domain, str) else domain
    return endpoints.AdoptedStreamServerEndpoint(reactor, int(fileno), family)


def main(argv: list[str] | None = None) -> None:
    # daphne builds its factory and access log from these module globals; the rest of its CLI and server is used
    # as shipped.
    fd_endpoint._FDParser._parseServer = _adopt_listening_socket
    daphne_server.HTTPFactory = EnvelopeHTTPFactory
    daphne_server.WebSocketFactory = ReasonedWebSocketFactory
    daphne_cli.AccessLogGenerator = QuerylessAccessLog
    import sys

    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
