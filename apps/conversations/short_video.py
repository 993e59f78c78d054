"""The short-video platform's direct messages: TikTok Business Messaging (research/providers.md), the adapter.

Webhooks (one callback URL for the platform app, every connected business account):

- `TikTok-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(client secret, "<t>.<raw body>")>` (TikTok for
  Developers, "Check the signature"); the timestamp must be within five minutes of now. Verified over the body as
  received, before anything is parsed.
- The body is one event: {"client_key", "event", "create_time", "user_openid", "content"}; `user_openid` is the
  business account the event is for (it routes the body to the practice's connection) and `content` is a JSON
  string: {"conversation_id", "message_id", "timestamp", "type", "text": {"body"}, "image": {"media_id"},
  "share_post": {"embed_url", "video_id"}, "from", "from_user": {"id"}, "to", "to_user": {"id"}}.
  `im_receive_msg` is a user's message to the business; the others (`im_send_msg`: an echo of the business's own
  message, `im_mark_read_msg`, `im_referral_msg`, …) carry nothing for the inbox and are acknowledged as they are.

Business API (base SVC_SHORT_VIDEO_API_URL, https://business-api.tiktok.com/open_api/v1.3); every answer is
{"code": 0, "message": "OK", "request_id", "data": {…}}, a refusal a non-zero code (often with HTTP 200):

- OAuth: the person authorises on SVC_SHORT_VIDEO_AUTHORIZE_URL (?client_key, scope, response_type=code,
  redirect_uri, state); POST /tt_user/oauth2/token/ {client_id, client_secret, grant_type=authorization_code,
  auth_code, redirect_uri} → data {open_id, scope, access_token, expires_in, refresh_token,
  refresh_token_expires_in}; POST /tt_user/oauth2/refresh_token/ {client_id, client_secret,
  grant_type=refresh_token, refresh_token} → the same (the refresh token rotates).
- Send: POST /business/message/send/ with header `Access-Token`, {business_id, recipient_type: "CONVERSATION",
  recipient: <conversation id>, message_type: "TEXT", text: {body}} → data.message.message_id
  (apps.conversations.senders.ShortVideoSend).
- Media: POST /business/message/media/download/ {business_id, conversation_id, message_id, media_id, media_type}
  → data.download_url (apps.conversations.attachments).

The sandbox (SVC_OUTBOUND_TRANSPORT "sandbox": make run, tests by default) calls nothing: a code is exchanged for a
sandbox account derived from it, and the authorize URL is our own callback with a sandbox code."""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
from django.conf import settings

from apps.conversations.providers import (
    URL,
    InboundText,
    Item,
    MalformedCallback,
    ProviderUnreachable,
    SignatureRefused,
    _in_window,
    _json_object,
    _object,
    _text,
)
from apps.core.crypto import constant_time_equals

SIGNATURE_HEADER = "TikTok-Signature"
RECEIVED = "im_receive_msg"
MAX_TEXT = 6000  # the platform's longest text message, both ways
SCOPES = ("user.info.basic", "message.list.read", "message.list.send", "message.list.manage")
TIMEOUT = httpx.Timeout(15.0, connect=5.0)
MEDIA_TYPES = {"image": "IMAGE"}  # message types whose media the Business API serves (media_type in the download)


class ProviderRefused(Exception):
    """The Business API answered with a refusal: `code` is its code (short, safe to store)."""

    def __init__(self, code: str):
        super().__init__(code)
        self.code = str(code)[:32]


# --- webhooks ---------------------------------------------------------------------------------------------------


def signature(secret: str, timestamp: str, raw: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()


def signature_header(secret: str, raw: bytes, timestamp: int) -> str:
    """The header as the platform sends it (the simulate_inbound command and the tests sign with it)."""
    return f"t={timestamp},s={signature(secret, str(timestamp), raw)}"


def verify(secret: str, header: str, raw: bytes, now: float) -> None:
    """Raises SignatureRefused saying which check failed (never the secret)."""
    parts: dict[str, list[str]] = {}
    for element in (header or "").split(","):
        name, _, value = element.strip().partition("=")
        parts.setdefault(name, []).append(value.strip())
    timestamp, offered = (parts.get("t") or [""])[0], [value.lower() for value in parts.get("s", []) if value]
    if not timestamp or not offered:
        raise SignatureRefused("TikTok-Signature is missing or has no t= and s= parts")
    if not _in_window(timestamp, now):
        raise SignatureRefused("the TikTok-Signature timestamp is more than five minutes from now")
    expected = signature(secret, timestamp, raw)
    if not any(constant_time_equals(expected, candidate) for candidate in offered):
        raise SignatureRefused("TikTok-Signature does not match")


def _content(value) -> dict:
    """The event's `content`: a JSON object, sent as its JSON text (an object is accepted too)."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise MalformedCallback("content", "must be the message's JSON text")
    try:
        return _json_object(value.encode())
    except MalformedCallback as error:
        raise MalformedCallback("content", error.problem) from None


def items(raw: bytes) -> list[Item]:
    """A verified body's inbox items: one message for im_receive_msg, nothing for the other events."""
    event = _json_object(raw)
    kind = _text(event.get("event"), "event", limit=64)
    if kind != RECEIVED:
        return []
    account = _text(event.get("user_openid"), "user_openid")
    content = _content(event.get("content"))
    recipient = _object(content.get("to_user"), "content.to_user").get("id")
    if recipient not in (None, "") and str(recipient) != account:
        return []  # not addressed to the business account (nothing of the inbox's)
    sender = _text(_object(content.get("from_user"), "content.from_user").get("id"), "content.from_user.id")
    message_type = _text(content.get("type"), "content.type", limit=32, required=False)
    body, media = "", []
    if message_type == "text":
        text = _object(content.get("text"), "content.text").get("body")
        body = _text(text, "content.text.body", limit=MAX_TEXT, required=False)
    elif message_type in MEDIA_TYPES:
        part = _object(content.get(message_type), f"content.{message_type}")
        media = [
            {"contentType": "", "providerMediaId": _text(part.get("media_id"), f"content.{message_type}.media_id")}
        ]
    elif message_type == "share_post":  # a video the user shared: its link is what they said
        post = _object(content.get("share_post"), "content.share_post")
        body = _text(post.get("embed_url") or post.get("video_id"), "content.share_post", limit=URL, required=False)
    return [
        InboundText(
            provider_message_id=_text(content.get("message_id"), "content.message_id"),
            sender=sender,
            recipient=account,
            body=body,
            media=media,
            thread=_text(content.get("conversation_id"), "content.conversation_id"),
            sender_name=_text(content.get("from"), "content.from", limit=128, required=False),
        )
    ]


def normalised_handle(handle: str) -> str:
    """ "@Maria.Rossi " → "maria.rossi" (how a handle is compared)."""
    return (handle or "").strip().lstrip("@").strip().lower()


# --- the Business API: OAuth --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    """What the token endpoint answers: the business account and its tokens (lifetimes in seconds)."""

    open_id: str
    access_token: str
    refresh_token: str
    expires_in: int
    refresh_expires_in: int
    scope: str = ""


def authorize_url(*, state: str, redirect_uri: str) -> str:
    query = {
        "client_key": settings.SVC_SHORT_VIDEO_CLIENT_KEY,
        "scope": ",".join(SCOPES),
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "state": state,
    }
    return f"{settings.SVC_SHORT_VIDEO_AUTHORIZE_URL}?{urlencode(query)}"


def sandbox_code() -> str:
    return "sandbox_" + secrets.token_hex(8)


def _answer(response: httpx.Response) -> dict:
    """The `data` of a Business API answer; ProviderUnreachable for 5xx, ProviderRefused for a refusal."""
    if response.status_code >= 500:
        raise ProviderUnreachable()
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise ProviderRefused(f"HTTP_{response.status_code}")
    code = answer.get("code")
    if response.status_code != 200 or code not in (0, "0"):
        raise ProviderRefused(str(code if code not in (None, "") else f"HTTP_{response.status_code}"))
    data = answer.get("data")
    return data if isinstance(data, dict) else {}


def _post(path: str, payload: dict) -> dict:
    try:
        response = httpx.post(
            f"{settings.SVC_SHORT_VIDEO_API_URL}{path}",
            json=payload,
            headers={"Accept": "application/json"},
            timeout=TIMEOUT,
            follow_redirects=False,
        )
    except httpx.HTTPError:
        raise ProviderUnreachable() from None
    return _answer(response)


def _grant(data: dict, *, open_id: str = "") -> Grant:
    try:
        grant = Grant(
            open_id=str(data.get("open_id") or open_id)[:128],
            access_token=str(data["access_token"]),
            refresh_token=str(data.get("refresh_token") or ""),
            expires_in=int(data.get("expires_in") or 0),
            refresh_expires_in=int(data.get("refresh_token_expires_in") or 0),
            scope=str(data.get("scope") or "")[:500],
        )
    except (KeyError, TypeError, ValueError):
        raise ProviderRefused("NO_TOKEN_IN_ANSWER") from None
    if not grant.open_id or not grant.access_token:
        raise ProviderRefused("NO_TOKEN_IN_ANSWER")
    return grant


def _sandbox() -> bool:
    return settings.SVC_OUTBOUND_TRANSPORT == "sandbox"


def exchange_code(code: str, *, redirect_uri: str) -> Grant:
    """The authorization code for the account's tokens. Raises ProviderRefused or ProviderUnreachable."""
    if _sandbox():
        account = "sandbox-" + hashlib.sha256(code.encode()).hexdigest()[:24]
        return Grant(account, "sandbox-access-" + secrets.token_hex(8), "sandbox-refresh-" + secrets.token_hex(8),
                     86400, 365 * 86400, ",".join(SCOPES))  # fmt: skip
    data = _post(
        "/tt_user/oauth2/token/",
        {
            "client_id": settings.SVC_SHORT_VIDEO_CLIENT_KEY,
            "client_secret": settings.SVC_SHORT_VIDEO_CLIENT_SECRET,
            "grant_type": "authorization_code",
            "auth_code": code,
            "redirect_uri": redirect_uri,
        },
    )
    return _grant(data)


def refresh(refresh_token: str, *, open_id: str) -> Grant:
    """New tokens for an account (its refresh token rotates). Raises ProviderRefused or ProviderUnreachable."""
    if _sandbox():
        return Grant(open_id, "sandbox-access-" + secrets.token_hex(8), "sandbox-refresh-" + secrets.token_hex(8),
                     86400, 365 * 86400)  # fmt: skip
    data = _post(
        "/tt_user/oauth2/refresh_token/",
        {
            "client_id": settings.SVC_SHORT_VIDEO_CLIENT_KEY,
            "client_secret": settings.SVC_SHORT_VIDEO_CLIENT_SECRET,
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
        },
    )
    return _grant(data, open_id=open_id)


def media_lookup(*, business_id: str, conversation_id: str, message_id: str, media_id: str) -> dict:
    """The download request's JSON body (apps.conversations.attachments posts it with the access token)."""
    return {
        "business_id": business_id,
        "conversation_id": conversation_id,
        "message_id": message_id,
        "media_id": media_id,
        "media_type": "IMAGE",
    }
