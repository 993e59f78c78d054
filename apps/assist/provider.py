"""The AI provider adapter: one call to an OpenAI-compatible chat-completions API (POST {base}/chat/completions),
configured by SVC_AI_ASSIST_PROVIDER_URL, SVC_AI_ASSIST_PROVIDER_KEY and SVC_AI_ASSIST_PROVIDER_MODEL. Off (all
three needed) by default.

httpx with a connect timeout of 5 s and SVC_AI_ASSIST_TIMEOUT for the whole answer; no redirects; the answer is read
up to MAX_RESPONSE_BYTES. No retry here: the member is waiting and may ask again (a provider 429 or 5xx is
AI_ASSIST_UNAVAILABLE with Retry-After). Logs carry the status and the error's class, never the prompt or the
answer (they hold patient messages).
"""

import json
import logging
from dataclasses import dataclass

import httpx
from django.conf import settings

from apps.assist.errors import AssistNotConfigured, AssistUnavailable

logger = logging.getLogger("apps.assist")

MAX_RESPONSE_BYTES = 1024 * 1024
USER_AGENT = "PracticeCRM-Assist/1.0"


@dataclass(frozen=True)
class ProviderConfig:
    url: str
    key: str
    model: str
    timeout: float


def configuration() -> ProviderConfig | None:
    url, key, model = (
        settings.SVC_AI_ASSIST_PROVIDER_URL.rstrip("/"),
        settings.SVC_AI_ASSIST_PROVIDER_KEY,
        settings.SVC_AI_ASSIST_PROVIDER_MODEL,
    )
    if not (url and key and model):
        return None
    return ProviderConfig(url=url, key=key, model=model, timeout=float(settings.SVC_AI_ASSIST_TIMEOUT))


def require_configuration() -> ProviderConfig:
    config = configuration()
    if config is None:
        raise AssistNotConfigured()
    return config


def _unavailable(reason: str, **facts) -> AssistUnavailable:
    logger.warning("AI assist provider: %s %s", reason, " ".join(f"{k}={v}" for k, v in facts.items()))
    return AssistUnavailable()


def complete(config: ProviderConfig, messages: list[dict], *, max_tokens: int, temperature: float = 0.3) -> str:
    """The assistant's text for these chat messages. Raises AssistUnavailable on any failure."""
    body = {"model": config.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature}
    headers = {"Authorization": f"Bearer {config.key}", "User-Agent": USER_AGENT, "Accept": "application/json"}
    timeout = httpx.Timeout(config.timeout, connect=min(5.0, config.timeout))
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False) as client,
            client.stream("POST", f"{config.url}/chat/completions", json=body, headers=headers) as response,
        ):
            raw = bytearray()
            for chunk in response.iter_bytes():
                raw.extend(chunk)
                if len(raw) > MAX_RESPONSE_BYTES:
                    raise _unavailable("answer too large", bytes=len(raw))
            status = response.status_code
    except httpx.HTTPError as exc:
        raise _unavailable("request failed", error=type(exc).__name__) from None
    if status != 200:
        raise _unavailable("refused", status=status)
    try:
        answer = json.loads(bytes(raw))
        text = answer["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise _unavailable("unreadable answer", status=status) from None
    if not isinstance(text, str) or not text.strip():
        raise _unavailable("empty answer", status=status)
    return text.strip()
