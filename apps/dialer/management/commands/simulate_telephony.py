"""Play the telephony provider locally: post correctly signed callbacks (Telnyx's Ed25519 scheme) to the running
server, exactly as the provider would, so a developer sees calls, missed-call tasks, voicemails and porting orders
arrive.

    python manage.py simulate_telephony keypair       # an Ed25519 pair: connect with the public key
    python manage.py simulate_telephony missed    --connection <id> --private-key <key> --from +393331234567
    python manage.py simulate_telephony answered  --connection <id> --private-key <key> --from +393331234567
    python manage.py simulate_telephony voicemail --connection <id> --private-key <key> --from +393331234567
    python manage.py simulate_telephony outbound  --connection <id> --private-key <key> --call <click-to-call id>
    python manage.py simulate_telephony porting   --connection <id> --private-key <key> --order <provider order id> \
        --status ported

missed: call.initiated and call.hangup of an inbound call nobody answered (a follow-up task is made); answered: an
inbound call answered and hung up after --seconds; voicemail: an inbound call answered by the voicemail flow, its
recording (client_state "voicemail") and the hang-up; outbound: a click-to-call (sandbox) answered and hung up;
porting: porting_order.status_changed. Calls go to --to, by default the connection's first active number. The
recording's link points at the sandbox (the sandbox transport "downloads" a short silent WAV).
"""

import base64
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from django.core.management.base import BaseCommand, CommandError

from apps.dialer.models import Call, DialerConnection, PhoneNumber
from apps.dialer.provider import client_state_for

SCENARIOS = ("keypair", "missed", "answered", "voicemail", "outbound", "porting")


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def event(event_type: str, payload: dict, *, at: datetime, url: str) -> dict:
    return {
        "data": {
            "event_type": event_type,
            "id": str(uuid.uuid4()),
            "occurred_at": _iso(at),
            "payload": payload,
            "record_type": "event",
        },
        "meta": {"attempt": 1, "delivered_to": url},
    }


def signed(key: Ed25519PrivateKey, body: dict) -> tuple[bytes, dict]:
    raw = json.dumps(body).encode()
    timestamp = str(int(time.time()))
    signature = base64.b64encode(key.sign(timestamp.encode() + b"|" + raw)).decode()
    headers = {
        "Content-Type": "application/json",
        "telnyx-signature-ed25519": signature,
        "telnyx-timestamp": timestamp,
    }
    return raw, headers


class Command(BaseCommand):
    help = "Post signed telephony callbacks (as the provider would) to the running server."

    def add_arguments(self, parser):
        parser.add_argument("scenario", choices=SCENARIOS)
        parser.add_argument("--connection", help="the dialer connection's id")
        parser.add_argument("--private-key", help="the base64 Ed25519 private key (see: simulate_telephony keypair)")
        parser.add_argument("--from", dest="sender", help="the caller's number (E.164)")
        parser.add_argument("--to", help="the practice's number called (default: its first active number)")
        parser.add_argument("--call", help="outbound: the click-to-call's id")
        parser.add_argument("--order", help="porting: the provider's porting order id")
        parser.add_argument("--status", default="ported", help="porting: the new status (default ported)")
        parser.add_argument("--seconds", type=int, default=42, help="answered calls: the talk time")
        parser.add_argument("--server", default="http://localhost:8787", help="where the API answers")

    def handle(self, *args, **options):
        if options["scenario"] == "keypair":
            return self._keypair()
        connection = DialerConnection.unscoped_objects.filter(id=options["connection"] or None).first()
        if connection is None:
            raise CommandError("--connection must name a dialer connection")
        if not options["private_key"]:
            raise CommandError("--private-key is required (see: simulate_telephony keypair)")
        try:
            key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(options["private_key"]))
        except ValueError:
            raise CommandError("--private-key is not a base64 Ed25519 private key") from None
        url = f"{options['server'].rstrip('/')}/webhooks/telephony/{connection.routing_token}"
        bodies = getattr(self, f"_{options['scenario']}")(connection, url, options)
        with httpx.Client(timeout=10) as client:
            for body in bodies:
                raw, headers = signed(key, body)
                response = client.post(url, content=raw, headers=headers)
                self.stdout.write(f"{body['data']['event_type']}: {response.status_code} {response.text[:200]}")
                if response.status_code != 200:
                    raise CommandError("the server refused the callback")

    def _keypair(self):
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.stdout.write(f"public key:  {base64.b64encode(public).decode()}")
        self.stdout.write(f"private key: {base64.b64encode(private).decode()}")

    # --- scenarios -------------------------------------------------------------------------------------------------

    @staticmethod
    def _inbound(connection, options) -> dict:
        if not options["sender"]:
            raise CommandError("--from is required")
        to = options["to"]
        if not to:
            number = (
                PhoneNumber.objects.for_org(connection.organization_id)
                .filter(connection=connection, status="active")
                .order_by("created_at")
                .first()
            )
            if number is None:
                raise CommandError("the connection has no active number: order one, or pass --to")
            to = number.phone_number
        leg = f"v3:sim-{uuid.uuid4()}"
        return {
            "call_control_id": leg,
            "call_leg_id": leg[3:],
            "call_session_id": str(uuid.uuid4()),
            "connection_id": connection.call_control_app_id or "sim-app",
            "direction": "incoming",
            "from": options["sender"],
            "to": to,
            "state": "parked",
        }

    def _missed(self, connection, url, options) -> list[dict]:
        call, now = self._inbound(connection, options), datetime.now(UTC)
        return [
            event("call.initiated", {**call, "start_time": _iso(now)}, at=now, url=url),
            event(
                "call.hangup",
                {**call, "hangup_cause": "originator_cancel", "start_time": _iso(now), "end_time": _iso(now)},
                at=now + timedelta(seconds=20),
                url=url,
            ),
        ]

    def _answered(self, connection, url, options) -> list[dict]:
        call, now = self._inbound(connection, options), datetime.now(UTC)
        answered, ended = now + timedelta(seconds=5), now + timedelta(seconds=5 + options["seconds"])
        return [
            event("call.initiated", {**call, "start_time": _iso(now)}, at=now, url=url),
            event("call.answered", {**call, "start_time": _iso(now)}, at=answered, url=url),
            event(
                "call.hangup",
                {**call, "hangup_cause": "normal_clearing", "start_time": _iso(now), "end_time": _iso(ended)},
                at=ended,
                url=url,
            ),
        ]

    def _voicemail(self, connection, url, options) -> list[dict]:
        call, now = self._inbound(connection, options), datetime.now(UTC)
        answered, ended = now + timedelta(seconds=20), now + timedelta(seconds=50)
        recording_id = str(uuid.uuid4())
        voicemail = base64.b64encode(b"voicemail").decode()
        return [
            event("call.initiated", {**call, "start_time": _iso(now)}, at=now, url=url),
            event("call.answered", {**call, "start_time": _iso(now)}, at=answered, url=url),
            event(
                "call.recording.saved",
                {
                    "call_control_id": call["call_control_id"],
                    "call_leg_id": call["call_leg_id"],
                    "call_session_id": call["call_session_id"],
                    "client_state": voicemail,
                    "recording_id": recording_id,
                    "channels": "single",
                    "recording_started_at": _iso(answered),
                    "recording_ended_at": _iso(ended),
                    "recording_urls": {"mp3": f"https://sandbox.invalid/recordings/{recording_id}.mp3"},
                },
                at=ended,
                url=url,
            ),
            event(
                "call.hangup",
                {**call, "hangup_cause": "normal_clearing", "start_time": _iso(now), "end_time": _iso(ended)},
                at=ended,
                url=url,
            ),
        ]

    def _outbound(self, connection, url, options) -> list[dict]:
        call = Call.objects.for_org(connection.organization_id).filter(id=options["call"] or None).first()
        if call is None:
            raise CommandError("--call must name a click-to-call of this connection's practice")
        now = datetime.now(UTC)
        answered, ended = now + timedelta(seconds=6), now + timedelta(seconds=6 + options["seconds"])
        payload = {
            "call_control_id": call.provider_call_control_id,
            "call_leg_id": call.provider_call_leg_id,
            "call_session_id": call.provider_call_session_id,
            "client_state": client_state_for(call.id),
            "direction": "outgoing",
            "from": call.from_number,
            "to": call.to_number,
            "start_time": _iso(now),
        }
        return [
            event("call.initiated", payload, at=now, url=url),
            event("call.answered", payload, at=answered, url=url),
            event(
                "call.hangup",
                {**payload, "hangup_cause": "normal_clearing", "end_time": _iso(ended)},
                at=ended,
                url=url,
            ),
        ]

    def _porting(self, connection, url, options) -> list[dict]:
        if not options["order"]:
            raise CommandError("--order is required (the provider's porting order id)")
        payload = {"id": options["order"], "status": {"value": options["status"], "details": []}}
        return [event("porting_order.status_changed", payload, at=datetime.now(UTC), url=url)]
