"""Outbound provider calls: one adapter per reference provider (research/providers.md) turns a provider-neutral
`Envelope` into that provider's documented send request and reads its answer; a transport carries the request.

- SMS, Twilio: POST {api}/2010-04-01/Accounts/{AccountSid}/Messages.json, HTTP basic auth (account SID, auth
  token), form To, From, Body, StatusCallback → 201 {"sid"}; errors {"code", "message"}.
- Messaging app, WhatsApp Cloud: POST {graph}/{phone-number-id}/messages, bearer access token, JSON text message (or
  an approved template) → {"messages": [{"id": "wamid…"}]}; errors {"error": {"code", "message"}}.
- E-mail, Resend: POST {api}/emails, bearer platform API key, `Idempotency-Key` (our message id: a retried call
  never sends twice) → {"id"}; errors {"name", "message"}.
- Telephony messaging, Telnyx: POST {api}/v2/messages, bearer API key, JSON from, to, text, webhook_url →
  {"data": {"id"}}; errors {"errors": [{"code", "detail"}]}.
- Short-video messages, TikTok Business Messaging: POST {api}/business/message/send/, header Access-Token, JSON
  business_id, recipient_type CONVERSATION, recipient (the platform's conversation id), message_type TEXT, text.body
  → {"code": 0, "data": {"message": {"message_id"}}}; a refusal is a non-zero code, usually with HTTP 200.

The provider transport sends with httpx (connect 5 s, read 15 s). The sandbox transport (`make run`, tests by default)
records the request it would have sent (never the credentials) and answers like the provider accepting it.
Failures come back as SendFailed: retryable (timeouts, 429, 5xx) or final, with a short code safe to store."""

import base64
import email.utils
import logging
import uuid
from dataclasses import dataclass, field
from email.headerregistry import Address

import httpx
from django.conf import settings

from apps.conversations.models import Kind

logger = logging.getLogger("apps.conversations")

TIMEOUT = httpx.Timeout(15.0, connect=5.0)
CARE_WINDOW_CLOSED = "131047"  # WhatsApp: more than 24 hours since the patient last wrote (a template is needed)


@dataclass(frozen=True)
class Envelope:
    """One message as every provider needs it. `message_id` is ours: the idempotency key where one is offered."""

    message_id: uuid.UUID
    kind: str
    from_address: str  # our number, phone number id or e-mail address
    to_address: str  # the patient's E.164 number or e-mail address
    body: str
    subject: str = ""
    html: str = ""
    unsubscribe_url: str = ""
    template: dict | None = None
    sender_name: str = ""  # e-mail display name (the practice)
    status_callback_url: str = ""  # where the provider posts delivery statuses (routing token URL)
    thread_id: str = ""  # short_video: the platform's conversation id the reply goes to


@dataclass(frozen=True)
class ProviderRequest:
    method: str
    url: str
    headers: dict = field(default_factory=dict)
    json: dict | None = None
    form: dict | None = None
    auth: tuple[str, str] | None = None

    def recordable(self) -> dict:
        """The request as the sandbox keeps it: body only, no credentials."""
        return {"json": self.json} if self.json is not None else {"form": self.form}


class SendFailed(Exception):
    """`code` is short and safe to store (the provider's error code, or ours); `retryable` says a later attempt may
    succeed; `credentials_refused` marks the connection unhealthy."""

    def __init__(self, code: str, *, retryable: bool = False, retry_after: int | None = None, refused=False):
        super().__init__(code)
        self.code = code[:32]
        self.retryable = retryable
        self.retry_after = retry_after
        self.credentials_refused = refused


def _base(setting: str) -> str:
    url = (getattr(settings, setting, "") or "").rstrip("/")
    if not url:
        raise SendFailed("PROVIDER_NOT_CONFIGURED")
    return url


def _json(response: httpx.Response) -> dict:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class TwilioSend:
    @staticmethod
    def request(envelope: Envelope, credentials: dict) -> ProviderRequest:
        sid = credentials.get("account_sid", "")
        form = {"To": envelope.to_address, "From": envelope.from_address, "Body": envelope.body}
        if envelope.status_callback_url:
            form["StatusCallback"] = envelope.status_callback_url
        return ProviderRequest(
            "POST",
            f"{_base('SVC_SMS_API_URL')}/2010-04-01/Accounts/{sid}/Messages.json",
            form=form,
            auth=(sid, credentials.get("auth_token", "")),
        )

    @staticmethod
    def accepted(data: dict) -> str:
        return str(data.get("sid") or "")

    @staticmethod
    def error_code(data: dict) -> str:
        return str(data.get("code") or "")


class WhatsAppSend:
    @staticmethod
    def request(envelope: Envelope, credentials: dict) -> ProviderRequest:
        message = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": envelope.to_address}
        if envelope.template:
            parameters = [{"type": "text", "text": str(value)} for value in envelope.template.get("parameters", [])]
            message |= {
                "type": "template",
                "template": {
                    "name": envelope.template["name"],
                    "language": {"code": envelope.template["language"]},
                    "components": [{"type": "body", "parameters": parameters}] if parameters else [],
                },
            }
        else:
            message |= {"type": "text", "text": {"preview_url": False, "body": envelope.body}}
        return ProviderRequest(
            "POST",
            f"{_base('SVC_MESSAGING_APP_GRAPH_URL')}/{envelope.from_address}/messages",
            headers={"Authorization": f"Bearer {credentials.get('access_token', '')}"},
            json=message,
        )

    @staticmethod
    def accepted(data: dict) -> str:
        messages = data.get("messages")
        first = messages[0] if isinstance(messages, list) and messages and isinstance(messages[0], dict) else {}
        return str(first.get("id") or "")

    @staticmethod
    def error_code(data: dict) -> str:
        error = data.get("error")
        return str(error.get("code") or "") if isinstance(error, dict) else ""


class ResendSend:
    @staticmethod
    def request(envelope: Envelope, credentials: dict) -> ProviderRequest:
        sender = str(Address(display_name=envelope.sender_name, addr_spec=envelope.from_address))
        message = {
            "from": sender,
            "to": [envelope.to_address],
            "reply_to": envelope.from_address,  # replies come back to the practice's inbound address
            "subject": envelope.subject,
            "text": envelope.body,
        }
        if envelope.html:
            message["html"] = envelope.html
        headers = {"Message-ID": email.utils.make_msgid(domain=envelope.from_address.rpartition("@")[2])}
        if envelope.unsubscribe_url:
            # RFC 8058 one-click: mail clients show "Unsubscribe" and POST to the URL themselves.
            headers |= {
                "List-Unsubscribe": f"<{envelope.unsubscribe_url}>",
                "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            }
        message["headers"] = headers
        return ProviderRequest(
            "POST",
            f"{_base('SVC_EMAIL_PROVIDER_API_URL')}/emails",
            headers={
                "Authorization": f"Bearer {settings.SVC_EMAIL_PROVIDER_API_KEY}",
                "Idempotency-Key": str(envelope.message_id),
            },
            json=message,
        )

    @staticmethod
    def accepted(data: dict) -> str:
        return str(data.get("id") or "")

    @staticmethod
    def error_code(data: dict) -> str:
        return str(data.get("name") or "")


class TelnyxSend:
    @staticmethod
    def request(envelope: Envelope, credentials: dict) -> ProviderRequest:
        if not credentials.get("api_key"):
            raise SendFailed("API_KEY_MISSING")  # the connection was set up for receiving only
        message = {"from": envelope.from_address, "to": envelope.to_address, "text": envelope.body}
        if envelope.status_callback_url:
            message["webhook_url"] = envelope.status_callback_url
        return ProviderRequest(
            "POST",
            f"{_base('SVC_TELEPHONY_API_URL')}/v2/messages",
            headers={"Authorization": f"Bearer {credentials['api_key']}"},
            json=message,
        )

    @staticmethod
    def accepted(data: dict) -> str:
        inner = data.get("data")
        return str(inner.get("id") or "") if isinstance(inner, dict) else ""

    @staticmethod
    def error_code(data: dict) -> str:
        errors = data.get("errors")
        first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
        return str(first.get("code") or "")


# TikTok Business API codes: rate limited or a fault of theirs is worth another attempt; a token it no longer accepts
# marks the connection unhealthy (the practice connects again); any other code fails the message with it.
TIKTOK_RETRYABLE = frozenset({"40100", "50000", "50002"})
TIKTOK_TOKEN_REFUSED = frozenset({"40102", "40104", "40105"})


class ShortVideoSend:
    @staticmethod
    def request(envelope: Envelope, credentials: dict) -> ProviderRequest:
        if not envelope.thread_id:
            raise SendFailed("NO_PLATFORM_CONVERSATION")  # the platform only takes replies in a conversation
        message = {
            "business_id": envelope.from_address,
            "recipient_type": "CONVERSATION",
            "recipient": envelope.thread_id,
            "message_type": "TEXT",
            "text": {"body": envelope.body},
        }
        return ProviderRequest(
            "POST",
            f"{_base('SVC_SHORT_VIDEO_API_URL')}/business/message/send/",
            headers={"Access-Token": credentials.get("access_token", "")},
            json=message,
        )

    @staticmethod
    def refusal(data: dict) -> SendFailed | None:
        """An answer with a non-zero code is a refusal whatever the HTTP status."""
        code = str(data.get("code", ""))
        if code in ("0", ""):
            return None
        return SendFailed(code, retryable=code in TIKTOK_RETRYABLE, refused=code in TIKTOK_TOKEN_REFUSED)

    @staticmethod
    def accepted(data: dict) -> str:
        inner = data.get("data")
        message = inner.get("message") if isinstance(inner, dict) else None
        return str(message.get("message_id") or "") if isinstance(message, dict) else ""

    @staticmethod
    def error_code(data: dict) -> str:
        return str(data.get("code") or "")


ADAPTERS = {
    Kind.SMS: TwilioSend,
    Kind.MESSAGING_APP: WhatsAppSend,
    Kind.EMAIL: ResendSend,
    Kind.TELEPHONY_MESSAGING: TelnyxSend,
    Kind.SHORT_VIDEO: ShortVideoSend,
}
PROVIDER_NAMES = {
    Kind.SMS: "twilio",
    Kind.MESSAGING_APP: "whatsapp_cloud",
    Kind.EMAIL: "resend",
    Kind.TELEPHONY_MESSAGING: "telnyx",
    Kind.SHORT_VIDEO: "tiktok_business_messaging",
}


# The chat widget is our own channel: "sending" hands the message to the widget app (registered in its ready()),
# which pushes it to the visitor's open sockets; a visitor with none reads it on their next poll.
WIDGET_DELIVERY: list = []


def on_widget_message(deliver) -> None:
    """Register deliver(envelope): push an outbound widget message to its visitor (never raises)."""
    WIDGET_DELIVERY.append(deliver)


def deliver_to_widget(envelope: Envelope) -> tuple[str, ProviderRequest]:
    for deliver in WIDGET_DELIVERY:
        deliver(envelope)
    return f"widget-{envelope.message_id}", ProviderRequest("PUSH", f"widget://{envelope.from_address}")


def _retry_after(response: httpx.Response) -> int | None:
    try:
        return max(1, min(3600, int(response.headers.get("Retry-After", ""))))
    except ValueError:
        return None


class ProviderTransport:
    """The real providers, over one pooled httpx client per batch."""

    sandbox = False

    def __init__(self):
        self.client = httpx.Client(timeout=TIMEOUT, follow_redirects=False)

    def close(self) -> None:
        self.client.close()

    def send(self, envelope: Envelope, credentials: dict) -> tuple[str, ProviderRequest]:
        if envelope.kind == Kind.WIDGET:
            return deliver_to_widget(envelope)
        adapter = ADAPTERS[envelope.kind]
        request = adapter.request(envelope, credentials)
        try:
            response = self.client.request(
                request.method,
                request.url,
                headers=request.headers,
                json=request.json,
                data=request.form,
                auth=request.auth,
            )
        except httpx.TimeoutException:
            raise SendFailed("PROVIDER_TIMEOUT", retryable=True) from None
        except httpx.HTTPError:
            raise SendFailed("PROVIDER_UNREACHABLE", retryable=True) from None
        data = _json(response)
        if response.status_code in (200, 201, 202):
            refusal = getattr(adapter, "refusal", None)  # a provider that refuses with a 200 (TikTok's codes)
            failed = refusal(data) if refusal is not None else None
            if failed is not None:
                raise failed
            provider_id = adapter.accepted(data)
            if not provider_id:
                raise SendFailed("PROVIDER_ANSWER_INVALID", retryable=True)
            return provider_id[:128], request
        code = adapter.error_code(data) or f"HTTP_{response.status_code}"
        if response.status_code == 429 or response.status_code >= 500:
            raise SendFailed(code, retryable=True, retry_after=_retry_after(response))
        raise SendFailed(code, refused=response.status_code in (401, 403))


class SandboxTransport:
    """Records what would have been sent; nothing leaves the machine."""

    sandbox = True

    def close(self) -> None:
        pass

    def send(self, envelope: Envelope, credentials: dict) -> tuple[str, ProviderRequest]:
        if envelope.kind == Kind.WIDGET:
            return deliver_to_widget(envelope)  # not a provider: delivered for real in the sandbox too
        request = ADAPTERS[envelope.kind].request(envelope, credentials) if _configured(envelope.kind) else None
        request = request or ProviderRequest("POST", f"sandbox://{PROVIDER_NAMES[envelope.kind]}", json={})
        return f"sandbox-{base64.b32encode(envelope.message_id.bytes).decode().rstrip('=').lower()}", request


def _configured(kind: str) -> bool:
    setting = {
        Kind.SMS: "SVC_SMS_API_URL",
        Kind.MESSAGING_APP: "SVC_MESSAGING_APP_GRAPH_URL",
        Kind.EMAIL: "SVC_EMAIL_PROVIDER_API_URL",
        Kind.TELEPHONY_MESSAGING: "SVC_TELEPHONY_API_URL",
        Kind.SHORT_VIDEO: "SVC_SHORT_VIDEO_API_URL",
    }[kind]
    return bool(getattr(settings, setting, ""))


def transport():
    return SandboxTransport() if settings.SVC_OUTBOUND_TRANSPORT == "sandbox" else ProviderTransport()
