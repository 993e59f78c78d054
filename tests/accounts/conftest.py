"""Fixtures of the account tests: a real local SMTP server (aiosmtpd) that Django's SMTP backend delivers to."""

import email
import socket

import pytest
from aiosmtpd.controller import Controller


class Mailbox:
    """aiosmtpd handler: keeps what the server received."""

    def __init__(self):
        self.messages: list[email.message.Message] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.original_content))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp(settings):
    """A real SMTP server on a free local port; Django's SMTP backend sends to it."""
    mailbox = Mailbox()
    with socket.socket() as probe:  # a free port (aiosmtpd checks readiness by connecting to the one it is given)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS = False
    yield mailbox
    controller.stop()
