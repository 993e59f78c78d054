"""Play the provider locally: post a correctly signed inbound callback to the running server, exactly as the
provider would, so a developer sees the message arrive in the inbox.

    python manage.py simulate_inbound sms --connection <id> --from +393331234567 --text "Buongiorno"
    python manage.py simulate_inbound messaging_app --connection <id> --from +393331234567 --text "Ciao"
    python manage.py simulate_inbound email --connection <id> --from maria@example.com --text "Spostare la visita"
    python manage.py simulate_inbound keypair     # an Ed25519 pair: connect telephony_messaging with the public key
    python manage.py simulate_inbound telephony_messaging --connection <id> --private-key <key> --from +39… --text …
    python manage.py simulate_inbound short_video --connection <id> --from @maria.rossi --text "Ciao!"

Messaging-app and e-mail callbacks are signed with this deployment's platform secrets (fixed local values under
`make run`); the e-mail provider's webhook carries no text, so --text becomes the subject (the text itself is read
from the provider's API, which a development machine has no key for). A short-video direct message is signed with the
platform app's client secret (TikTok-Signature); --from is the sender's handle, and the platform user id and
conversation id are derived from it, so the same handle is the same person every time: it reaches the inbox when a
patient's customFields.shortVideoHandle is that handle (or they wrote before), else the ingest-review queue.
"""

import base64
import hashlib
import json
import secrets
import time
import uuid
from urllib.parse import urlencode

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.conversations import short_video
from apps.conversations.api.serializers import callback_path
from apps.conversations.models import ChannelConnection, Kind
from apps.conversations.providers import ResendEmail, TwilioSms, WhatsAppCloud
from apps.conversations.services import connection_credentials

KEYPAIR = "keypair"


class Command(BaseCommand):
    help = "Post a signed inbound callback (as the provider would) to the running server."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=[*Kind.values, KEYPAIR], help="the channel kind, or keypair")
        parser.add_argument("--connection", help="the channel connection's id")
        parser.add_argument("--from", dest="sender", help="the sender's number (E.164), e-mail address or handle")
        parser.add_argument("--text", help="the message (the subject, for e-mail)")
        parser.add_argument("--private-key", help="telephony_messaging: the base64 Ed25519 private key")
        parser.add_argument("--server", default="http://localhost:8787", help="where the API answers")

    def handle(self, *args, **options):
        if options["kind"] == KEYPAIR:
            return self._keypair()
        for name in ("connection", "sender", "text"):
            if not options[name]:
                raise CommandError(f"--{name.replace('sender', 'from')} is required")
        connection = ChannelConnection.unscoped_objects.filter(id=options["connection"], kind=options["kind"]).first()
        if connection is None:
            raise CommandError(f"no {options['kind']} connection {options['connection']}")
        url = options["server"].rstrip("/") + callback_path(connection)
        build = getattr(self, f"_{connection.kind}")
        body, headers = build(connection, url, options)
        response = httpx.post(url, content=body, headers=headers, timeout=10)
        self.stdout.write(f"{response.status_code} {response.text[:200]}")
        if response.status_code != 200:
            raise CommandError("the server refused the callback")

    def _keypair(self):
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.stdout.write(f"public key:  {base64.b64encode(public).decode()}")
        self.stdout.write(f"private key: {base64.b64encode(private).decode()}")

    @staticmethod
    def _sms(connection, url, options):
        credentials = connection_credentials(connection)
        params = {
            "MessageSid": "SM" + secrets.token_hex(16),
            "AccountSid": credentials["account_sid"],
            "From": options["sender"],
            "To": connection.address,
            "Body": options["text"],
            "NumMedia": "0",
        }
        signature = TwilioSms.signature(credentials["auth_token"], url, list(params.items()))
        headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature}
        return urlencode(params).encode(), headers

    @staticmethod
    def _messaging_app(connection, url, options):
        sender = options["sender"].lstrip("+")
        value = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": sender, "phone_number_id": connection.address},
            "contacts": [{"profile": {"name": "Simulated"}, "wa_id": sender}],
            "messages": [
                {
                    "from": sender,
                    "id": "wamid." + secrets.token_hex(16),
                    "timestamp": str(int(time.time())),
                    "type": "text",
                    "text": {"body": options["text"]},
                }
            ],
        }
        body = {
            "object": "whatsapp_business_account",
            "entry": [{"id": "0", "changes": [{"field": "messages", "value": value}]}],
        }
        raw = json.dumps(body).encode()
        signature = WhatsAppCloud.signature(settings.SVC_MESSAGING_APP_SECRET, raw)
        return raw, {"Content-Type": "application/json", "X-Hub-Signature-256": signature}

    @staticmethod
    def _email(connection, url, options):
        event = {
            "type": "email.received",
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "data": {
                "email_id": str(uuid.uuid4()),
                "from": options["sender"],
                "to": [connection.address],
                "subject": options["text"],
                "attachments": [],
            },
        }
        raw = json.dumps(event).encode()
        event_id, timestamp = "msg_" + secrets.token_hex(12), str(int(time.time()))
        signature = ResendEmail.signature(settings.SVC_EMAIL_WEBHOOK_SECRETS[0], event_id, timestamp, raw)
        headers = {"svix-id": event_id, "svix-timestamp": timestamp, "svix-signature": f"v1,{signature}"}
        return raw, {"Content-Type": "application/json", **headers}

    @staticmethod
    def _telephony_messaging(connection, url, options):
        if not options["private_key"]:
            raise CommandError("--private-key is required (see: simulate_inbound keypair)")
        key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(options["private_key"]))
        payload = {
            "id": str(uuid.uuid4()),
            "direction": "inbound",
            "type": "SMS",
            "from": {"phone_number": options["sender"]},
            "to": [{"phone_number": connection.address, "status": "webhook_delivered"}],
            "text": options["text"],
            "media": [],
        }
        body = {"data": {"event_type": "message.received", "id": str(uuid.uuid4()), "payload": payload}}
        raw = json.dumps(body).encode()
        timestamp = str(int(time.time()))
        signature = base64.b64encode(key.sign(timestamp.encode() + b"|" + raw)).decode()
        headers = {"telnyx-signature-ed25519": signature, "telnyx-timestamp": timestamp}
        return raw, {"Content-Type": "application/json", **headers}

    @staticmethod
    def _short_video(connection, url, options):
        handle = short_video.normalised_handle(options["sender"])
        person = hashlib.sha256(f"{connection.address}:{handle}".encode()).hexdigest()
        content = {
            "conversation_id": f"sim-conversation-{person[:24]}",
            "message_id": "sim-message-" + secrets.token_hex(12),
            "timestamp": int(time.time() * 1000),
            "type": "text",
            "text": {"body": options["text"]},
            "from": handle,
            "from_user": {"id": f"sim-user-{person[24:48]}"},
            "to": connection.name,
            "to_user": {"id": connection.address},
        }
        event = {
            "client_key": settings.SVC_SHORT_VIDEO_CLIENT_KEY,
            "event": short_video.RECEIVED,
            "create_time": int(time.time()),
            "user_openid": connection.address,
            "content": json.dumps(content),
        }
        raw = json.dumps(event).encode()
        signature = short_video.signature_header(settings.SVC_SHORT_VIDEO_CLIENT_SECRET, raw, int(time.time()))
        return raw, {"Content-Type": "application/json", short_video.SIGNATURE_HEADER: signature}
