"""Provider adapters: how each kind's reference provider (research/providers.md) signs its callbacks and shapes an
inbound message. Only the SMS provider is implemented so far: Twilio Programmable Messaging."""

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from apps.core.crypto import constant_time_equals

MAX_FORM_FIELDS = 200
MAX_MEDIA = 10


@dataclass(frozen=True)
class InboundText:
    provider_message_id: str
    sender: str
    recipient: str
    body: str
    media: list[dict] = field(default_factory=list)  # [{"contentType", "providerUrl"}]


class MalformedCallback(ValueError):
    """The body is not what the provider sends: names the field."""

    def __init__(self, field_name: str, problem: str):
        super().__init__(f"{field_name}: {problem}")
        self.field_name, self.problem = field_name, problem


class TwilioSms:
    """Twilio Programmable Messaging. Callbacks are form-encoded; X-Twilio-Signature is the base64 HMAC-SHA1, keyed
    with the account's auth token, of the full callback URL followed by every POST parameter's name and value,
    sorted by name (twilio-python's RequestValidator). MessageSid is the receipt."""

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
    def verify(cls, auth_token: str, url: str, params: list[tuple[str, str]], header: str) -> bool:
        return bool(header) and constant_time_equals(cls.signature(auth_token, url, params), header)

    @staticmethod
    def inbound(params: list[tuple[str, str]]) -> InboundText:
        form = dict(params)
        for name in ("MessageSid", "From", "To"):
            if not form.get(name):
                raise MalformedCallback(name, "is required")
        if len(form["MessageSid"]) > 128:
            raise MalformedCallback("MessageSid", "is longer than 128 characters")
        try:
            count = min(int(form.get("NumMedia") or 0), MAX_MEDIA)
        except ValueError:
            raise MalformedCallback("NumMedia", "is not a number") from None
        media = [
            {"contentType": form.get(f"MediaContentType{n}", ""), "providerUrl": form[f"MediaUrl{n}"]}
            for n in range(count)
            if form.get(f"MediaUrl{n}")
        ]
        return InboundText(form["MessageSid"], form["From"], form["To"], form.get("Body", ""), media)


def receipt_digest(provider_message_id: str) -> str:
    return hashlib.sha256(provider_message_id.encode()).hexdigest()
