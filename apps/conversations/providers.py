"""Provider adapters: how each kind's reference provider (research/providers.md) signs its callbacks and what a
callback carries, turned into provider-neutral items (an inbound message, a delivery status, an address to
suppress). Verification works on the untouched body; parsing only ever sees verified bytes.

| kind                | provider                      | signature                                                    |
|---------------------|-------------------------------|--------------------------------------------------------------|
| sms                 | Twilio Programmable Messaging | X-Twilio-Signature: base64 HMAC-SHA1(auth token, URL+params) |
| messaging_app       | WhatsApp Business Cloud API   | X-Hub-Signature-256: sha256=hex HMAC-SHA256(app secret, body)|
| email               | Resend (Svix signing)         | svix-signature: v1,base64 HMAC-SHA256(secret, id.ts.body)    |
| telephony_messaging | Telnyx Messaging              | telnyx-signature-ed25519 over "timestamp|body"              |
| short_video         | TikTok Business Messaging     | TikTok-Signature: t=…,s=hex HMAC-SHA256(secret, "t.body")    |

(short_video's adapter is apps.conversations.short_video.)
"""

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import asdict, dataclass, field
from urllib.parse import parse_qsl

import httpx

from apps.core.crypto import Ed25519SignatureRefused, constant_time_equals, verify_telnyx_signature

MAX_FORM_FIELDS = 200
MAX_MEDIA = 10
MAX_ITEMS_PER_BODY = 100  # messages + statuses one callback body may carry
SIGNATURE_WINDOW_SECONDS = 300  # timestamped schemes (Svix, Telnyx): older or newer than this is refused
MAX_EVENT_ID_BYTES = 512  # e-mail provider event ids (svix-id)
URL = 2000  # longest media URL kept


# --- provider-neutral items -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InboundText:
    """A message a patient sent. `recipient` is the practice's address it was sent to (routes the callback)."""

    provider_message_id: str
    sender: str
    recipient: str
    body: str
    media: list[dict] = field(default_factory=list)  # [{"contentType", "providerUrl" or "providerMediaId"}]
    subject: str = ""
    type: str = "message"
    thread: str = ""  # short_video: the platform's conversation id (replies are addressed to it)
    sender_name: str = ""  # short_video: the sender's handle (matched against patients' customFields)


@dataclass(frozen=True)
class StatusUpdate:
    """What became of a message we sent: one of Message.State's outbound values."""

    provider_message_id: str
    recipient: str  # the practice's address the message was sent from (routes the callback)
    status: str
    error_code: str = ""
    type: str = "status"


@dataclass(frozen=True)
class Suppression:
    """An address that must not be e-mailed again (a hard bounce or a complaint)."""

    provider_message_id: str
    recipient: str  # the practice's sending address (routes the callback)
    address: str  # the patient's address
    reason: str  # "bounce" | "complaint"
    type: str = "suppression"


@dataclass(frozen=True)
class TemplateStatus:
    """The messaging platform's review decision on a message template of a business account (not an inbox item:
    applied when the callback arrives, apps.conversations.services.template_statuses_received)."""

    account_id: str  # the WhatsApp Business Account id (the callback's entry.id)
    name: str
    language: str
    status: str  # approved | rejected | pending
    reason: str = ""


# The platform's template events → whether the template may be sent. FLAGGED (quality warning) changes nothing.
TEMPLATE_EVENTS = {
    "APPROVED": "approved",
    "REINSTATED": "approved",
    "PENDING": "pending",
    "IN_APPEAL": "pending",
    "REJECTED": "rejected",
    "PAUSED": "rejected",
    "DISABLED": "rejected",
    "PENDING_DELETION": "rejected",
    "DELETED": "rejected",
}


Item = InboundText | StatusUpdate | Suppression
_ITEM_TYPES = {"message": InboundText, "status": StatusUpdate, "suppression": Suppression}


def item_to_payload(item: Item) -> dict:
    return asdict(item)


def item_from_payload(payload: dict) -> Item:
    return _ITEM_TYPES[payload["type"]](**payload)


class MalformedCallback(ValueError):
    """The body is not what the provider sends: names the field."""

    def __init__(self, field_name: str, problem: str):
        super().__init__(f"{field_name}: {problem}")
        self.field_name, self.problem = field_name, problem


class ProviderUnreachable(RuntimeError):
    """The provider did not answer (network error, timeout or a 5xx)."""


class SignatureRefused(ValueError):
    """The signature is missing, wrong, or its timestamp is outside the window: says which (no secret in it)."""


def receipt_digest(provider_message_id: str) -> str:
    return hashlib.sha256(provider_message_id.encode()).hexdigest()


def normalise_number(value: str) -> str:
    """+ and digits only ("+39 02 1234 5678" → "+390212345678"); WhatsApp's bare wa_id gains its +."""
    digits = re.sub(r"\D", "", value or "")
    return f"+{digits}" if digits else ""


def _text(value, name: str, *, limit: int = 128, required: bool = True) -> str:
    if value is None or value == "":
        if required:
            raise MalformedCallback(name, "is required")
        return ""
    if not isinstance(value, str | int):
        raise MalformedCallback(name, "must be a string")
    value = str(value)
    if len(value) > limit:
        raise MalformedCallback(name, f"is longer than {limit} characters")
    return _storable(value, name)


def _storable(value: str, name: str) -> str:
    """Text PostgreSQL can store: no NUL character and no lone surrogate (JSON's \\ud800 escapes). Refused with a 400
    naming the field, rather than failing the insert on every retry."""
    if "\x00" in value:
        raise MalformedCallback(name, "contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedCallback(name, "is not valid Unicode text") from None
    return value


def _object(value, name: str) -> dict:
    """A JSON object the provider may leave out (then empty); anything else is malformed."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedCallback(name, "must be an object")
    return value


def _first_error_code(errors, name: str) -> str:
    errors = _list(errors, name)
    return str(_object(errors[0], name).get("code", ""))[:32] if errors else ""


def _media(content_type, **reference: str) -> dict:
    return {"contentType": _storable(str(content_type or "")[:100], "contentType"), **reference}


def _json_object(raw: bytes) -> dict:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise MalformedCallback("body", "is not JSON") from None
    except RecursionError:
        raise MalformedCallback("body", "is nested too deeply") from None
    if not isinstance(data, dict):
        raise MalformedCallback("body", "must be a JSON object")
    return data


def _list(value, name: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedCallback(name, "must be a list")
    return value


def _in_window(timestamp: str, now: float) -> bool:
    try:
        return abs(now - int(timestamp)) <= SIGNATURE_WINDOW_SECONDS
    except (TypeError, ValueError):
        return False


# --- SMS: Twilio Programmable Messaging ---------------------------------------------------------------------------

# Twilio MessageStatus → our outbound states; statuses not listed (receiving, received) say nothing about ours.
TWILIO_STATUSES = {
    "accepted": "queued",
    "scheduled": "queued",
    "queued": "queued",
    "sending": "sent",
    "sent": "sent",
    "delivered": "delivered",
    "read": "read",
    "undelivered": "undelivered",
    "failed": "failed",
    "canceled": "failed",
}
TWILIO_IGNORED_STATUSES = frozenset({"receiving", "received", "partially_delivered"})


class TwilioSms:
    """Callbacks are form-encoded; X-Twilio-Signature is the base64 HMAC-SHA1, keyed with the account's auth
    token, of the full callback URL followed by every POST parameter's name and value, sorted by name (twilio-python's
    RequestValidator). MessageSid is the receipt."""

    signature_header = "X-Twilio-Signature"

    @staticmethod
    def form(raw: bytes) -> list[tuple[str, str]]:
        try:
            return parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
        except UnicodeDecodeError:
            raise MalformedCallback("body", "is not UTF-8") from None
        except ValueError:
            raise MalformedCallback("body", f"has more than {MAX_FORM_FIELDS} fields") from None

    @staticmethod
    def signature(auth_token: str, url: str, params: list[tuple[str, str]]) -> str:
        values: dict[str, set[str]] = {}
        for name, value in params:
            values.setdefault(name, set()).add(value)
        signed = url + "".join(name + value for name in sorted(values) for value in sorted(values[name]))
        digest = hmac.new(auth_token.encode(), signed.encode(), hashlib.sha1).digest()
        return base64.b64encode(digest).decode()

    @classmethod
    def verify(cls, auth_token: str, url: str, params: list[tuple[str, str]], header: str) -> None:
        if not header or not constant_time_equals(cls.signature(auth_token, url, params), header):
            raise SignatureRefused("X-Twilio-Signature is missing or does not match")

    @staticmethod
    def inbound(params: list[tuple[str, str]]) -> InboundText:
        form = dict(params)
        sid = _text(form.get("MessageSid"), "MessageSid")
        sender, recipient = _text(form.get("From"), "From"), _text(form.get("To"), "To")
        try:
            count = min(int(form.get("NumMedia") or 0), MAX_MEDIA)
        except ValueError:
            raise MalformedCallback("NumMedia", "is not a number") from None
        media = [
            _media(form.get(f"MediaContentType{n}"), providerUrl=_text(form[f"MediaUrl{n}"], f"MediaUrl{n}", limit=URL))
            for n in range(count)
            if form.get(f"MediaUrl{n}")
        ]
        body = _text(form.get("Body"), "Body", limit=10_000, required=False)
        return InboundText(sid, normalise_number(sender), normalise_number(recipient), body, media)

    @staticmethod
    def status(params: list[tuple[str, str]]) -> StatusUpdate | None:
        """None for Twilio's statuses that say nothing about a message we sent (receiving, received,
        partially_delivered): acknowledged, nothing stored."""
        form = dict(params)
        sid = _text(form.get("MessageSid"), "MessageSid")
        reported = _text(form.get("MessageStatus"), "MessageStatus", limit=32)
        if reported in TWILIO_IGNORED_STATUSES:
            return None
        if reported not in TWILIO_STATUSES:
            raise MalformedCallback("MessageStatus", f"is not one of {', '.join(sorted(TWILIO_STATUSES))}")
        error_code = _text(form.get("ErrorCode"), "ErrorCode", limit=32, required=False)
        return StatusUpdate(
            sid, normalise_number(_text(form.get("From"), "From")), TWILIO_STATUSES[reported], error_code
        )


# --- messaging app: WhatsApp Business Cloud API ---------------------------------------------------------------------

WHATSAPP_STATUSES = {"sent": "sent", "delivered": "delivered", "read": "read", "failed": "failed"}
WHATSAPP_MEDIA = ("image", "audio", "video", "document", "sticker")


@dataclass
class WhatsAppBody:
    items: list = field(default_factory=list)
    templates: list = field(default_factory=list)
    accounts: dict = field(default_factory=dict)  # phone number id → business account id


class WhatsAppCloud:
    """One app-level webhook for every connected number: the GET handshake echoes hub.challenge when
    hub.verify_token is the platform's; each POST is signed X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256 of
    the raw body with the app secret, and may carry messages and statuses of several phone number ids
    (entry[].changes[].value.metadata.phone_number_id routes each). wamid ids are the receipts."""

    signature_header = "X-Hub-Signature-256"

    @staticmethod
    def signature(app_secret: str, raw: bytes) -> str:
        return "sha256=" + hmac.new(app_secret.encode(), raw, hashlib.sha256).hexdigest()

    @staticmethod
    def number_reachable(graph_url: str, phone_number_id: str, access_token: str) -> bool:
        """Graph GET /{phone-number-id} with the token: True when the platform answers with that number."""
        try:
            response = httpx.get(
                f"{graph_url.rstrip('/')}/{phone_number_id}",
                params={"fields": "id,display_phone_number,verified_name"},
                headers={"Authorization": f"Bearer {access_token}"},
                timeout=httpx.Timeout(10.0, connect=5.0),
            )
        except httpx.HTTPError:
            raise ProviderUnreachable() from None
        if response.status_code >= 500:
            raise ProviderUnreachable()
        try:
            return response.status_code == 200 and str(response.json().get("id")) == phone_number_id
        except (ValueError, AttributeError):
            return False

    @classmethod
    def verify(cls, app_secret: str, raw: bytes, header: str) -> None:
        if not header or not constant_time_equals(cls.signature(app_secret, raw), header.strip().lower()):
            raise SignatureRefused("X-Hub-Signature-256 is missing or does not match")

    @classmethod
    def items(cls, raw: bytes) -> list[Item]:
        return cls.parse(raw).items

    @classmethod
    def parse(cls, raw: bytes) -> "WhatsAppBody":
        """The inbox items (messages and statuses, routed by phone number id), the template review decisions, and
        which business account each phone number id belongs to (entry.id: the platform says so, signed)."""
        data = _json_object(raw)
        if data.get("object") != "whatsapp_business_account":
            raise MalformedCallback("object", "must be whatsapp_business_account")
        body = WhatsAppBody()
        for entry in _list(data.get("entry"), "entry"):
            account_id = _text(entry.get("id"), "entry.id", limit=64, required=False) if isinstance(entry, dict) else ""
            for change in _list(entry.get("changes") if isinstance(entry, dict) else None, "entry.changes"):
                value = change.get("value") if isinstance(change, dict) else None
                if not isinstance(value, dict):
                    continue
                if change.get("field") == "message_template_status_update":
                    template = cls._template(account_id, value)
                    if template is not None:
                        body.templates.append(template)
                    continue
                if change.get("field") != "messages":
                    continue  # other account updates: nothing for the service
                metadata = _object(value.get("metadata"), "metadata")
                number_id = _text(metadata.get("phone_number_id"), "metadata.phone_number_id", limit=64)
                if account_id:
                    body.accounts[number_id] = account_id
                body.items += [cls._message(number_id, item) for item in _list(value.get("messages"), "messages")]
                statuses = [cls._status(number_id, item) for item in _list(value.get("statuses"), "statuses")]
                body.items += [status for status in statuses if status is not None]
        if len(body.items) + len(body.templates) > MAX_ITEMS_PER_BODY:
            raise MalformedCallback("entry", f"carries more than {MAX_ITEMS_PER_BODY} messages and statuses")
        return body

    @staticmethod
    def _template(account_id: str, value: dict) -> TemplateStatus | None:
        status = TEMPLATE_EVENTS.get(str(value.get("event") or "").upper())
        if status is None or not account_id:
            return None
        reason = str(value.get("reason") or "")
        return TemplateStatus(
            account_id=account_id,
            name=_text(value.get("message_template_name"), "message_template_name", limit=512),
            language=_text(value.get("message_template_language"), "message_template_language", limit=16),
            status=status,
            reason="" if reason.upper() == "NONE" else _storable(reason[:200], "reason"),
        )

    @staticmethod
    def _message(number_id: str, message) -> InboundText:
        if not isinstance(message, dict):
            raise MalformedCallback("messages", "must hold objects")
        kind = message.get("type")
        body, media = "", []
        if kind == "text":
            body = _text(_object(message.get("text"), "text").get("body"), "text.body", limit=4096, required=False)
        elif kind in WHATSAPP_MEDIA:
            part = _object(message.get(kind), kind)
            media = [
                {
                    "contentType": str(part.get("mime_type", ""))[:100],
                    "providerMediaId": _text(part.get("id"), f"{kind}.id"),
                }
            ]
            body = _text(part.get("caption"), f"{kind}.caption", limit=4096, required=False)
        elif kind == "button":
            body = _text(
                _object(message.get("button"), "button").get("text"), "button.text", limit=4096, required=False
            )
        elif kind == "interactive":  # a reply button or list row the patient chose: its title is what they said
            interactive = _object(message.get("interactive"), "interactive")
            reply = interactive.get("button_reply") or interactive.get("list_reply")
            body = _text(_object(reply, "interactive.reply").get("title"), "interactive.title", required=False)
        return InboundText(
            _text(message.get("id"), "messages.id"),
            normalise_number(_text(message.get("from"), "messages.from", limit=32)),
            number_id,
            body,
            media,
        )

    @staticmethod
    def _status(number_id: str, status) -> StatusUpdate | None:
        """None for a status that is not about delivery (deleted, warning, or one the platform adds later)."""
        if not isinstance(status, dict):
            raise MalformedCallback("statuses", "must hold objects")
        reported = _text(status.get("status"), "statuses.status", limit=32)
        if reported not in WHATSAPP_STATUSES:
            return None
        code = _first_error_code(status.get("errors"), "statuses.errors")
        return StatusUpdate(_text(status.get("id"), "statuses.id"), number_id, WHATSAPP_STATUSES[reported], code)


# --- e-mail: Resend, signed by Svix (Standard Webhooks) ---------------------------------------------------------

RESEND_STATUSES = {
    "email.sent": "sent",
    "email.delivered": "delivered",
    "email.delivery_delayed": "sent",
    "email.failed": "failed",
    "email.bounced": "undelivered",
}
RESEND_HANDLED = frozenset({"email.received", "email.complained", *RESEND_STATUSES})


class ResendEmail:
    """Headers svix-id, svix-timestamp and svix-signature (or their webhook-* names): the signature list holds
    space-separated "v1,<base64 HMAC-SHA256>" entries over "id.timestamp.body", keyed with the base64 part of the
    whsec_ secret. Event types: email.received (inbound: metadata only, the text is fetched from the provider),
    email.sent/delivered/delivery_delayed/failed (statuses), email.bounced and email.complained (suppress)."""

    @staticmethod
    def headers(headers) -> tuple[str, str, str]:
        def pick(name: str) -> str:
            return headers.get(f"svix-{name}") or headers.get(f"webhook-{name}") or ""

        return pick("id"), pick("timestamp"), pick("signature")

    @staticmethod
    def signature(secret: str, event_id: str, timestamp: str, raw: bytes) -> str:
        key = base64.b64decode(secret.removeprefix("whsec_"))
        signed = f"{event_id}.{timestamp}.".encode() + raw
        return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()

    @classmethod
    def verify(cls, secrets: list[str], event_id: str, timestamp: str, header: str, raw: bytes, now: float) -> None:
        if not (event_id and timestamp and header):
            raise SignatureRefused("svix-id, svix-timestamp and svix-signature are required")
        if not _in_window(timestamp, now):
            raise SignatureRefused("svix-timestamp is more than five minutes from now")
        offered = [part.partition(",")[2] for part in header.split() if part.startswith("v1,")]
        for secret in secrets:
            try:
                expected = cls.signature(secret, event_id, timestamp, raw)
            except (binascii.Error, ValueError):
                continue
            if any(constant_time_equals(expected, candidate) for candidate in offered):
                return
        raise SignatureRefused("svix-signature does not match")

    @staticmethod
    def items(raw: bytes) -> list[Item]:
        event = _json_object(raw)
        kind = _text(event.get("type"), "type", limit=64)
        if kind not in RESEND_HANDLED:
            return []  # opened, clicked, contact and domain events: nothing for the inbox
        data = event.get("data")
        if not isinstance(data, dict):
            raise MalformedCallback("data", "must be an object")
        email_id = _text(data.get("email_id"), "data.email_id")
        sender = _address(_text(data.get("from"), "data.from", limit=320))
        recipients = [_address(_text(item, "data.to", limit=320)) for item in _list(data.get("to"), "data.to")]
        if not recipients:
            raise MalformedCallback("data.to", "is required")
        if kind == "email.received":
            media = [
                {
                    "contentType": str(item.get("content_type", ""))[:100],
                    "providerMediaId": _text(item.get("id"), "data.attachments.id"),
                }
                for item in _list(data.get("attachments"), "data.attachments")[:MAX_MEDIA]
                if isinstance(item, dict)
            ]
            subject = _text(data.get("subject"), "data.subject", limit=998, required=False)
            return [
                InboundText(email_id, sender, recipient, "", media, subject)
                for recipient in recipients[:MAX_ITEMS_PER_BODY]
            ]
        if kind == "email.complained" or (
            kind == "email.bounced"
            and str(_object(data.get("bounce"), "data.bounce").get("type", "")).lower() != "transient"
        ):
            reason = "complaint" if kind == "email.complained" else "bounce"
            suppress = [Suppression(email_id, sender, address, reason) for address in recipients[:MAX_ITEMS_PER_BODY]]
            return [*suppress, StatusUpdate(email_id, sender, "undelivered")] if reason == "bounce" else suppress
        if kind in RESEND_STATUSES:
            return [StatusUpdate(email_id, sender, RESEND_STATUSES[kind])]
        return []  # opened, clicked, contact and domain events: nothing for the inbox


def _address(value: str) -> str:
    """ "Name <a@b.example>" → "a@b.example", lower-cased."""
    match = re.search(r"<([^<>]+)>\s*$", value)
    address = (match.group(1) if match else value).strip().lower()
    if "@" not in address:
        raise MalformedCallback("data", f"{address[:40]!r} is not an e-mail address")
    return address


# --- telephony texting: Telnyx Messaging -------------------------------------------------------------------------

TELNYX_STATUSES = {
    "queued": "queued",
    "sending": "sent",
    "sent": "sent",
    "delivered": "delivered",
    "delivery_unconfirmed": "sent",
    "sending_failed": "failed",
    "delivery_failed": "undelivered",
}


class TelnyxMessaging:
    """Headers telnyx-signature-ed25519 (base64 of the 64-byte Ed25519 signature) and telnyx-timestamp (Unix
    seconds, five-minute window); the signed message is "timestamp|raw body", checked with the account's public
    key. message.received is inbound (data.payload.to[0].phone_number is the practice's number); message.sent
    and message.finalized report on ours."""

    @staticmethod
    def verify(public_key: str, signature: str, timestamp: str, raw: bytes, now: float) -> None:
        """The shared Telnyx check (apps.core.crypto.verify_telnyx_signature, also the dialer's)."""
        try:
            verify_telnyx_signature(public_key, signature, timestamp, raw, now=now, window=SIGNATURE_WINDOW_SECONDS)
        except Ed25519SignatureRefused as refusal:
            raise SignatureRefused(str(refusal)) from None

    @staticmethod
    def items(raw: bytes) -> list[Item]:
        data = _json_object(raw).get("data")
        if not isinstance(data, dict):
            raise MalformedCallback("data", "must be an object")
        kind = _text(data.get("event_type"), "data.event_type", limit=64)
        payload = data.get("payload")
        if not isinstance(payload, dict):
            raise MalformedCallback("data.payload", "must be an object")
        message_id = _text(payload.get("id"), "data.payload.id")
        sender = _object(payload.get("from"), "data.payload.from").get("phone_number")
        sender = normalise_number(_text(sender, "data.payload.from", limit=32))
        to = [item for item in _list(payload.get("to"), "data.payload.to") if isinstance(item, dict)]
        if not to:
            raise MalformedCallback("data.payload.to", "is required")
        recipient = normalise_number(_text(to[0].get("phone_number"), "data.payload.to.phone_number", limit=32))
        if kind == "message.received":
            media = [
                {
                    "contentType": str(item.get("content_type", ""))[:100],
                    "providerUrl": _text(item.get("url"), "data.payload.media.url", limit=2000),
                }
                for item in _list(payload.get("media"), "data.payload.media")[:MAX_MEDIA]
                if isinstance(item, dict)
            ]
            body = _text(payload.get("text"), "data.payload.text", limit=10_000, required=False)
            return [InboundText(message_id, sender, recipient, body, media)]
        if kind in ("message.sent", "message.finalized"):
            reported = str(to[0].get("status", ""))
            if reported not in TELNYX_STATUSES:
                raise MalformedCallback("data.payload.to.status", f"is not one of {', '.join(TELNYX_STATUSES)}")
            code = _first_error_code(payload.get("errors"), "data.payload.errors")
            return [StatusUpdate(message_id, sender, TELNYX_STATUSES[reported], code)]
        return []
