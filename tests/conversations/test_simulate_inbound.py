"""python manage.py simulate_inbound: a signed callback posted over real HTTP to a running server lands in the
inbox (the developer's way to play the SMS provider locally)."""

import pytest
from django.core.management import CommandError, call_command

from apps.conversations.models import Message
from tests.conftest import make_member
from tests.conversations.conftest import connect, connect_sms


@pytest.mark.django_db(transaction=True)
def test_a_simulated_sms_arrives_in_the_inbox(live_server):
    owner = make_member()
    connection = connect_sms(owner.api_client())
    call_command(
        "simulate_inbound",
        "sms",
        connection=connection["id"],
        sender="+393331234567",
        text="Buongiorno",
        server=live_server.url,
    )
    message = Message.objects.for_org(owner.organization).get()
    assert message.body == "Buongiorno" and message.direction == "inbound"


@pytest.mark.django_db(transaction=True)
def test_every_kind_can_be_simulated(live_server, settings, capsys):
    """Messaging app and e-mail signed with the platform's secrets, telephony with a generated key pair."""
    owner = make_member()
    api = owner.api_client()
    call_command("simulate_inbound", "keypair")
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.strip().splitlines())
    public, private = lines["public key"].strip(), lines["private key"].strip()
    connections = {
        "messaging_app": connect(api, "messaging_app", "106540352242922", {"accessToken": "EAAG-dev"}),
        "email": connect(api, "email", "reception"),
        "telephony_messaging": connect(api, "telephony_messaging", "+14155550100", {"publicKey": public}),
    }
    senders = {"messaging_app": "+393331234567", "email": "maria@example.com", "telephony_messaging": "+393339876543"}
    for kind, connection in connections.items():
        extra = {"private_key": private} if kind == "telephony_messaging" else {}
        call_command(
            "simulate_inbound",
            kind,
            connection=connection["id"],
            sender=senders[kind],
            text=f"Ciao via {kind}",
            server=live_server.url,
            **extra,
        )
    messages = {m.channel: m for m in Message.objects.for_org(owner.organization)}
    assert set(messages) == set(connections)
    assert messages["messaging_app"].body == "Ciao via messaging_app"
    assert messages["telephony_messaging"].body == "Ciao via telephony_messaging"
    assert messages["email"].subject == "Ciao via email"


@pytest.mark.django_db(transaction=True)
def test_an_unknown_connection_is_refused(live_server):
    with pytest.raises(CommandError):
        call_command(
            "simulate_inbound",
            "sms",
            connection="00000000-0000-0000-0000-000000000000",
            sender="+393331234567",
            text="x",
            server=live_server.url,
        )
