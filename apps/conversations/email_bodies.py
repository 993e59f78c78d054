"""Inbound e-mail text. The e-mail provider's email.received webhook carries metadata only (sender, recipients,
subject, attachment ids); the text is read from its Received emails API (Resend: GET /emails/receiving/{id} with
the platform's API key) while the message is processed."""

import dataclasses
import logging
import re
from html import unescape

import httpx
from django.conf import settings
from django.utils.html import strip_tags

from apps.conversations.providers import InboundText

logger = logging.getLogger("apps.conversations")

MAX_TEXT_CHARS = 100_000
TIMEOUT = httpx.Timeout(10.0, connect=5.0)


class EmailBodyUnavailable(RuntimeError):
    """The provider did not answer with the e-mail: the delivery is retried (five attempts)."""


def completed(message: InboundText) -> InboundText:
    """The message with its text (plain text, or the HTML part as text when there is no plain one). Without an API key
    (a development machine) the message keeps its subject and an empty text."""
    if not settings.SVC_EMAIL_PROVIDER_API_KEY:
        logger.info("e-mail %s stored without its text: no e-mail provider API key", "received")
        return message
    url = f"{settings.SVC_EMAIL_PROVIDER_API_URL.rstrip('/')}/emails/receiving/{message.provider_message_id}"
    try:
        response = httpx.get(
            url, headers={"Authorization": f"Bearer {settings.SVC_EMAIL_PROVIDER_API_KEY}"}, timeout=TIMEOUT
        )
    except httpx.HTTPError as error:
        raise EmailBodyUnavailable(type(error).__name__) from None
    if response.status_code != 200:
        raise EmailBodyUnavailable(f"provider answered {response.status_code}")
    try:
        email = response.json()
    except ValueError:
        raise EmailBodyUnavailable("provider answered no JSON") from None
    if not isinstance(email, dict):
        raise EmailBodyUnavailable("provider answered no e-mail object")
    text = email.get("text") or _html_as_text(str(email.get("html") or ""))
    return dataclasses.replace(message, body=str(text)[:MAX_TEXT_CHARS])


def _html_as_text(html: str) -> str:
    """An HTML-only e-mail as plain text: the inbox stores and shows text, never the sender's markup (scripts,
    tracking pixels, inline images). Block ends become line breaks; entities are decoded."""
    html = re.sub(r"(?is)<(script|style|head)\b.*?</\1\s*>", "", html)
    html = re.sub(r"(?i)<br\s*/?>|</(p|div|li|tr|h[1-6])\s*>", "\n", html)
    text = unescape(strip_tags(html))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.strip() for line in text.splitlines())).strip()
