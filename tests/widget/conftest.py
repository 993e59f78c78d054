"""Fixtures of the widget tests: a widget (through HTTP) and a visitor with an open thread."""

import pytest

from tests.e2e.conftest import worker_env  # noqa: F401  (the real web tier: test_socket.py)
from tests.live import start_server, web_server  # noqa: F401

ORIGIN = "https://www.smiles.example"


def post_json(client, path, data=None, **extra):
    return client.post(path, {} if data is None else data, content_type="application/json", **extra)


def make_widget(api, **fields) -> dict:
    body = {"name": "Website chat", "allowedOrigins": [ORIGIN], "greeting": "Hi! How can we help?"} | fields
    response = post_json(api, "/widget-connections", body)
    assert response.status_code == 201, response.content
    return response.json()


def start_visitor(client, key: str) -> str:
    response = client.post(f"/widget/{key}/visitors", HTTP_ORIGIN=ORIGIN)
    assert response.status_code == 201, response.content
    return response.json()["visitorToken"]


def open_thread(client, key: str, token: str, **details):
    body = {"name": "Vera Visitor", "email": "vera@example.com"} | details
    return post_json(client, f"/widget/{key}/thread", body, HTTP_ORIGIN=ORIGIN, HTTP_X_WIDGET_VISITOR=token)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


@pytest.fixture
def widget(api) -> dict:
    return make_widget(api)


@pytest.fixture
def visitor(client, widget) -> str:
    token = start_visitor(client, widget["embedKey"])
    assert open_thread(client, widget["embedKey"], token).status_code == 201
    return token
