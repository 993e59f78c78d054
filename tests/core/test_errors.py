"""Every failure is the JSON envelope {"code", "message", "details"}: routing, methods, bodies, crashes, sizes."""

import asyncio
import io
import json
import logging
import re

import pytest
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.test import Client, RequestFactory

from apps.core.asgi import BodySizeGuard
from apps.core.middleware import BodySizeLimitMiddleware
from tests.core.urls_for_tests import CappedView

ENVELOPE_KEYS = {"code", "message", "details"}
TEST_URLS = pytest.mark.urls("tests.core.urls_for_tests")


def _envelope(response) -> dict:
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == ENVELOPE_KEYS, body
    return body


def _sign_in(client: Client, body: bytes, content_type: str = "application/json"):
    return client.generic("POST", "/auth/sign-in/email", body, content_type=content_type)


# --- routing and methods ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", ["application/json", "text/html"])
def test_unknown_route_is_a_json_404(client, accept):
    response = client.get("/no/such/route", headers={"Accept": accept})

    assert response.status_code == 404
    assert _envelope(response) == {"code": "NOT_FOUND", "message": "The resource does not exist.", "details": {}}


def test_unknown_route_is_a_json_404_even_with_debug_on(client, settings):
    settings.DEBUG = True

    response = client.get("/no/such/route")

    assert response.status_code == 404
    assert _envelope(response) == {"code": "NOT_FOUND", "message": "The resource does not exist.", "details": {}}


def test_wrong_method_is_a_json_405(api):
    response = api.delete("/auth/me")

    assert response.status_code == 405
    assert _envelope(response) == {
        "code": "METHOD_NOT_ALLOWED",
        "message": 'Method "DELETE" not allowed.',
        "details": {},
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", "/patients"), ("TRACE", "/tasks"), ("DELETE", "/auth/organization/accept-invitation")],
)
def test_a_method_the_route_lacks_is_405_before_permissions_are_weighed(api, method, path):
    # /patients declares permissions for GET and POST only, and accept-invitation wants a browser session: a method
    # the route does not have is still 405 with its Allow header, not 403.
    response = api.generic(method, path)

    assert response.status_code == 405, response.content
    assert _envelope(response)["code"] == "METHOD_NOT_ALLOWED"
    assert method not in response["Allow"]


def test_a_django_view_405_becomes_the_envelope_and_keeps_its_allow_header(client):
    # The OAuth discovery documents are plain Django views: their HTML 405 is re-rendered by the middleware.
    response = client.delete("/.well-known/oauth-protected-resource/mcp")

    assert response.status_code == 405
    assert _envelope(response)["code"] == "METHOD_NOT_ALLOWED"
    assert {method.strip() for method in response["Allow"].split(",")} >= {"GET"}
    assert "DELETE" not in response["Allow"]


# --- request bodies ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{", id="truncated"),
        pytest.param(b"{'email': 'a@example.com'}", id="single-quotes"),
        pytest.param(b'{"email": "a@example.com",}', id="trailing-comma"),
        pytest.param(b'{"email": "a@example.com", "password": NaN}', id="nan"),
        pytest.param(b'{"email": "a@example.com", "password": Infinity}', id="infinity"),
        pytest.param(b'{"email": "a@example.com", "password": -Infinity}', id="minus-infinity"),
        pytest.param(b'{"email": "\xff\xfe@example.com", "password": "x"}', id="not-utf8"),
        pytest.param(b"\xc3\x28", id="invalid-utf8-sequence"),
    ],
)
def test_malformed_json_body_is_a_validation_error_on_body(client, raw):
    response = _sign_in(client, raw)

    assert response.status_code == 400
    body = _envelope(response)
    assert body["code"] == "VALIDATION_ERROR"
    assert list(body["details"]) == ["fields"]
    assert list(body["details"]["fields"]) == ["body"]
    [problem] = body["details"]["fields"]["body"]
    assert problem.startswith("the body is not valid JSON (")
    assert body["message"] == f"body: {problem}"


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=xyz"],
)
def test_wrong_content_type_is_415(client, content_type):
    response = _sign_in(client, b'{"email": "a@example.com", "password": "x"}', content_type=content_type)

    assert response.status_code == 415
    media_type = content_type.split(";")[0] if content_type.startswith("multipart") else content_type
    body = _envelope(response)
    assert body["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert body["details"] == {}
    assert body["message"].startswith(f'Unsupported media type "{media_type}')


def test_validation_errors_are_keyed_in_camel_case(owner):
    session = owner.session_client()

    response = session.post("/auth/api-key/delete", {"keyId": "nope"}, content_type="application/json")

    assert response.status_code == 400
    assert _envelope(response) == {
        "code": "VALIDATION_ERROR",
        "message": "keyId: Must be a valid UUID.",
        "details": {"fields": {"keyId": ["Must be a valid UUID."]}},
    }


def test_missing_field_is_keyed_in_camel_case(owner):
    session = owner.session_client()

    response = session.post("/auth/api-key/delete", {}, content_type="application/json")

    assert response.status_code == 400
    assert _envelope(response) == {
        "code": "VALIDATION_ERROR",
        "message": "keyId: This field is required.",
        "details": {"fields": {"keyId": ["This field is required."]}},
    }


# --- unexpected failures ----------------------------------------------------------------------------------------


def _assert_internal_error(response, caplog) -> None:
    assert response.status_code == 500
    body = _envelope(response)
    assert body["code"] == "INTERNAL_ERROR"
    assert body["message"] == "Something went wrong on our side."
    assert list(body["details"]) == ["errorId"]
    error_id = body["details"]["errorId"]
    assert re.fullmatch(r"[0-9a-f]{32}", error_id)
    text = response.content.decode()
    for leak in ("Traceback", "RuntimeError", "hunter2", "secret internals", 'File "', "urls_for_tests"):
        assert leak not in text
    # The same errorId is in the log, with the stack trace kept server-side.
    [record] = [r for r in caplog.records if r.name == "apps.errors" and error_id in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


@TEST_URLS
@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("route", ["/test/boom", "/test/plain-boom"], ids=["drf-view", "plain-django-view"])
def test_unexpected_exception_is_a_json_500_with_error_id(settings, caplog, route, debug):
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)

    with caplog.at_level(logging.ERROR, logger="apps.errors"):
        response = client.get(route, headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})

    _assert_internal_error(response, caplog)


@TEST_URLS
def test_each_500_gets_its_own_error_id(caplog):
    client = Client(raise_request_exception=False)

    with caplog.at_level(logging.ERROR, logger="apps.errors"):
        first = client.get("/test/boom").json()["details"]["errorId"]
        second = client.get("/test/boom").json()["details"]["errorId"]

    assert first != second


# --- body size: 413 before parsing ------------------------------------------------------------------------------


def test_body_over_the_default_cap_is_413(client):
    cap = settings.SVC_DEFAULT_JSON_BODY_BYTES
    assert cap == 1024 * 1024
    raw = b'{"email": "a@example.com", "password": "' + b"x" * cap + b'"}'

    response = _sign_in(client, raw)

    assert response.status_code == 413
    assert _envelope(response) == {
        "code": "PAYLOAD_TOO_LARGE",
        "message": "The request body is larger than this route accepts.",
        "details": {"maxBytes": cap},
    }


def _padded(size: int) -> bytes:
    raw = b'{"pad": "' + b"x" * (size - len(b'{"pad": ""}')) + b'"}'
    assert len(raw) == size
    return raw


@TEST_URLS
def test_per_route_cap_refuses_one_byte_over(client):
    response = client.generic("POST", "/test/capped", _padded(101), content_type="application/json")

    assert response.status_code == 413
    assert _envelope(response) == {
        "code": "PAYLOAD_TOO_LARGE",
        "message": "The request body is larger than this route accepts.",
        "details": {"maxBytes": 100},
    }


@TEST_URLS
def test_per_route_cap_accepts_exactly_the_cap(client):
    response = client.generic("POST", "/test/capped", _padded(100), content_type="application/json")

    assert response.status_code == 200
    assert response.json() == {"keys": ["pad"], "padLength": 100 - len(b'{"pad": ""}')}


class _CountingStream:
    """A request body stream that records how many bytes were read from it."""

    def __init__(self, data: bytes):
        self._buffer = io.BytesIO(data)
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._buffer.read(size)
        self.bytes_read += len(chunk)
        return chunk


def _request_without_content_length(body: bytes):
    request = RequestFactory().generic("POST", "/test/capped", body, content_type="application/json")
    del request.META["CONTENT_LENGTH"]
    stream = _CountingStream(body)
    request._stream = stream
    return request, stream


def test_body_without_content_length_is_read_at_most_cap_plus_one_then_refused():
    request, stream = _request_without_content_length(_padded(5000))
    middleware = BodySizeLimitMiddleware(lambda request: pytest.fail("the view must not run"))

    response = middleware.refuse(request, CappedView.as_view())

    assert response.status_code == 413
    assert json.loads(response.content) == {
        "code": "PAYLOAD_TOO_LARGE",
        "message": "The request body is larger than this route accepts.",
        "details": {"maxBytes": 100},
    }
    assert stream.bytes_read == 101


def test_body_without_content_length_under_the_cap_reaches_the_view():
    request, stream = _request_without_content_length(_padded(100))
    view = CappedView.as_view()
    middleware = BodySizeLimitMiddleware(lambda request: pytest.fail("not called by refuse"))

    assert middleware.refuse(request, view) is None
    assert stream.bytes_read == 100
    assert request.META["CONTENT_LENGTH"] == "100"

    response = view(request)
    response.render()
    assert response.status_code == 200
    assert json.loads(response.content) == {"keys": ["pad"], "padLength": 100 - len(b'{"pad": ""}')}


# Through Django's real ASGI handler: a chunked upload (no content-length header) to a route with a 100-byte cap.


async def _asgi_request(app, path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]):
    pending = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]
    sent = []
    received = []

    async def receive():
        if pending:
            message = pending.pop(0)
            received.append(message)
            return message
        await asyncio.Event().wait()  # the client stays connected until the response is sent

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("203.0.113.9", 50000),
        "server": ("testserver", 80),
    }
    await asyncio.wait_for(app(scope, receive, send), timeout=10)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body, received


def _chunks(raw: bytes, size: int = 7) -> list[bytes]:
    return [raw[i : i + size] for i in range(0, len(raw), size)]


@TEST_URLS
def test_asgi_chunked_body_over_the_route_cap_is_413():
    content_type = [(b"content-type", b"application/json")]

    status, headers, body, _ = asyncio.run(
        _asgi_request(ASGIHandler(), "/test/capped", _chunks(_padded(101)), content_type)
    )

    assert status == 413
    assert headers[b"Content-Type"].startswith(b"application/json")
    assert json.loads(body) == {
        "code": "PAYLOAD_TOO_LARGE",
        "message": "The request body is larger than this route accepts.",
        "details": {"maxBytes": 100},
    }


@TEST_URLS
def test_asgi_chunked_body_at_the_route_cap_is_parsed():
    content_type = [(b"content-type", b"application/json")]

    status, _, body, _ = asyncio.run(_asgi_request(ASGIHandler(), "/test/capped", _chunks(_padded(100)), content_type))

    assert status == 200
    assert json.loads(body) == {"keys": ["pad"], "padLength": 100 - len(b'{"pad": ""}')}


# --- the ASGI guard in front of Django --------------------------------------------------------------------------


class _FakeApp:
    """An ASGI app that reads the whole body, then answers 200 with the byte count."""

    def __init__(self):
        self.called = False
        self.body = b""
        self.messages = []

    async def __call__(self, scope, receive, send):
        self.called = True
        while True:
            message = await receive()
            self.messages.append(message)
            self.body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-app", b"yes")]})
        await send({"type": "http.response.body", "body": str(len(self.body)).encode()})


def _stream(chunks: list[bytes]):
    messages = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]
    handed = []

    async def receive():
        message = messages.pop(0)
        handed.append(message)
        return message

    return receive, handed


def _run_guard(guard, chunks: list[bytes], headers: list[tuple[bytes, bytes]] = ()):
    receive, handed = _stream(chunks)
    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(guard({"type": "http", "method": "POST", "path": "/x", "headers": list(headers)}, receive, send))
    return sent, handed


_GUARD_413 = {
    "code": "PAYLOAD_TOO_LARGE",
    "message": "The request body is larger than this service accepts.",
    "details": {},
}


def _assert_guard_refused(sent) -> None:
    start, body = sent
    assert start["type"] == "http.response.start"
    assert start["status"] == 413
    assert dict(start["headers"])[b"content-type"] == b"application/json"
    assert int(dict(start["headers"])[b"content-length"]) == len(body["body"])
    assert body["type"] == "http.response.body"
    assert json.loads(body["body"]) == _GUARD_413


def test_asgi_guard_refuses_a_declared_content_length_over_the_max_without_calling_the_app():
    app = _FakeApp()

    sent, handed = _run_guard(BodySizeGuard(app, max_bytes=10), [b"x" * 11], [(b"content-length", b"11")])

    _assert_guard_refused(sent)
    assert app.called is False
    assert handed == []  # not a byte of the body was read


def test_asgi_guard_refuses_a_non_numeric_content_length_without_calling_the_app():
    app = _FakeApp()

    sent, _ = _run_guard(BodySizeGuard(app, max_bytes=10), [b"x"], [(b"content-length", b"abc")])

    _assert_guard_refused(sent)
    assert app.called is False


def test_asgi_guard_refuses_a_chunked_stream_once_it_passes_the_max():
    app = _FakeApp()

    sent, handed = _run_guard(BodySizeGuard(app, max_bytes=10), [b"x" * 4, b"x" * 4, b"x" * 4, b"x" * 4])

    _assert_guard_refused(sent)
    assert len(handed) == 3  # reading stopped at the chunk that crossed the limit
    assert app.body == b"x" * 8  # the app never saw the chunk over the limit


def test_asgi_guard_refuses_a_stream_longer_than_its_declared_length():
    app = _FakeApp()

    sent, _ = _run_guard(BodySizeGuard(app, max_bytes=10), [b"x" * 6, b"x" * 6], [(b"content-length", b"6")])

    _assert_guard_refused(sent)


@pytest.mark.parametrize(
    ("chunks", "headers"),
    [
        pytest.param([b"x" * 4, b"x" * 6], [], id="chunked-at-max"),
        pytest.param([b"x" * 10], [(b"content-length", b"10")], id="declared-at-max"),
        pytest.param([b""], [], id="empty"),
    ],
)
def test_asgi_guard_passes_bodies_up_to_the_max_untouched(chunks, headers):
    app = _FakeApp()

    sent, handed = _run_guard(BodySizeGuard(app, max_bytes=10), chunks, headers)

    assert app.called is True
    assert app.messages == handed  # the very same messages, unchanged
    assert app.body == b"".join(chunks)
    assert sent == [
        {"type": "http.response.start", "status": 200, "headers": [(b"x-app", b"yes")]},
        {"type": "http.response.body", "body": str(len(app.body)).encode()},
    ]


def test_asgi_guard_defaults_to_the_platform_maximum(settings):
    settings.SVC_MAX_BODY_BYTES = 5
    app = _FakeApp()

    sent, _ = _run_guard(BodySizeGuard(app), [b"x" * 3, b"x" * 3])

    _assert_guard_refused(sent)


def test_asgi_guard_leaves_other_scopes_alone():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    async def never(*args):
        raise AssertionError("not used")

    asyncio.run(BodySizeGuard(app, max_bytes=1)({"type": "websocket", "headers": []}, never, never))

    assert seen == ["websocket"]


def test_asgi_guard_in_front_of_django_refuses_a_chunked_upload():
    status, headers, body, received = asyncio.run(
        _asgi_request(
            BodySizeGuard(ASGIHandler(), max_bytes=1000),
            "/auth/sign-in/email",
            [b"x" * 600, b"x" * 600, b"x" * 600],
            [(b"content-type", b"application/json")],
        )
    )

    assert status == 413
    assert headers[b"content-type"] == b"application/json"
    assert json.loads(body) == _GUARD_413
    assert len(received) == 2
