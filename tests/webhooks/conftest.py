"""Webhook tests deliver to a real local HTTP receiver (pytest-httpserver on 127.0.0.1). Loopback receivers are a
development-only allowance (SVC_WEBHOOKS_ALLOW_LOOPBACK with DEBUG), switched on here. DNS for public-looking
names is a table in the test (no network here): apps.webhooks.sender.resolve is replaced by it."""

import pytest

from apps.webhooks import sender

FAKE_DNS = {
    "hooks.example.com": ["93.184.216.34"],
    "alias.example.com": ["93.184.216.34", "2606:2800:220:1::1"],
    "internal.example.com": ["10.0.0.5"],
    "mixed.example.com": ["93.184.216.34", "127.0.0.1"],
    "metadata.example.com": ["169.254.169.254"],
    "v6local.example.com": ["::1"],
    "ula.example.com": ["fd00::1"],
    "mapped.example.com": ["::ffff:127.0.0.1"],
    "cgnat.example.com": ["100.64.0.1"],
}


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch):
    def resolve(host, port):
        if host not in FAKE_DNS:
            raise sender.UnsafeDestination(f"{host} does not resolve")
        return FAKE_DNS[host]

    monkeypatch.setattr(sender, "resolve", resolve)
    return FAKE_DNS


@pytest.fixture
def loopback(settings):
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True


@pytest.fixture
def receiver(httpserver, loopback):
    """A real HTTP server on 127.0.0.1; its URL is accepted as a webhook destination."""
    return httpserver
