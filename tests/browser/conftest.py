"""Headless Chromium (Debian's /usr/bin/chromium, driven by the `playwright` package; never `playwright install`)
against the real web tier (config.serve) on the test database. scripts/ensure-browser.sh (make test) installs Chromium
on a fresh machine."""

import os
from pathlib import Path

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

from tests.e2e.conftest import start_worker, worker_env  # noqa: F401
from tests.live import start_server, web_server  # noqa: F401

CHROMIUM = Path(os.environ.get("SVC_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(os.environ.get("SVC_TEST_SCREENSHOTS", "/tmp"))


@pytest.fixture
def browser(monkeypatch):
    """A fresh Chromium for the test. Playwright's sync API keeps an event loop running in this thread, which
    Django's ORM takes for async code: the test's own database reads are allowed explicitly, and the connections
    they opened (kept per context while that loop runs) are closed before it stops."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure-browser.sh (apt-get install chromium)")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            connections.close_all()
            chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 900, "height": 1000})
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def screenshot(page, name: str) -> Path:
    """Saved under /tmp (SVC_TEST_SCREENSHOTS) for a person to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"practice-crm-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture(scope="session")
def httpserver_listen_address():
    """pytest-httpserver (the OAuth client's redirect receiver) on IPv4 loopback, where Chromium reaches it."""
    return ("127.0.0.1", 0)
