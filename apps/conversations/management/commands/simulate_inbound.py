"""Play the provider locally: post a correctly signed inbound callback to the running server, exactly as the
provider would, so a developer sees the message arrive in the inbox.

    python manage.py simulate_inbound sms --connection <id> --from +393331234567 --text "Buongiorno"
"""

import secrets
from urllib.parse import urlencode

import httpx
from django.core.management.base import BaseCommand, CommandError

from apps.conversations.api.serializers import callback_path
from apps.conversations.models import ChannelConnection, Kind
from apps.conversations.providers import TwilioSms
from apps.conversations.services import connection_credentials


class Command(BaseCommand):
    help = "Post a signed inbound callback (as the provider would) to the running server."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=[Kind.SMS], help="the channel kind (sms so far)")
        parser.add_argument("--connection", required=True, help="the channel connection's id")
        parser.add_argument("--from", dest="sender", required=True, help="the sender's number, E.164")
        parser.add_argument("--text", required=True)
        parser.add_argument("--server", default="http://localhost:8787", help="where the API answers")

    def handle(self, *args, **options):
        connection = ChannelConnection.unscoped_objects.filter(id=options["connection"], kind=options["kind"]).first()
        if connection is None:
            raise CommandError(f"no {options['kind']} connection {options['connection']}")
        url = options["server"].rstrip("/") + callback_path(connection)
        params = {
            "MessageSid": "SM" + secrets.token_hex(16),
            "AccountSid": connection_credentials(connection)["account_sid"],
            "From": options["sender"],
            "To": connection.address,
            "Body": options["text"],
            "NumMedia": "0",
        }
        signature = TwilioSms.signature(connection_credentials(connection)["auth_token"], url, list(params.items()))
        response = httpx.post(
            url,
            content=urlencode(params),
            headers={"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature},
            timeout=10,
        )
        self.stdout.write(f"{response.status_code} {response.text[:200]}")
        if response.status_code != 200:
            raise CommandError("the server refused the callback")
