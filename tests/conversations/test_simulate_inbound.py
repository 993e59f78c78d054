"""python manage.py simulate_inbound: a signed callback posted over real HTTP to a running server lands in the
inbox (the developer's way to play the SMS provider locally)."""

import pytest
from django.core.management import CommandError, call_command

from apps.conversations.models import Message
from tests.conftest import make_member
from tests.conversations.conftest import connect_sms


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
