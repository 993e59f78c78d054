"""python manage.py simulate_telephony: correctly signed callbacks posted over real HTTP to a running server (the
developer's way to play the telephony provider locally)."""

import pytest
from django.core.management import CommandError, call_command

from apps.dialer.models import Call, CallStatus, PortingOrder, RecordingState
from apps.tasks.public import Task
from tests.conftest import make_member
from tests.dialer.conftest import PATIENT_NUMBER, order_number, post_json


def keypair(capsys) -> tuple[str, str]:
    call_command("simulate_telephony", "keypair")
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.strip().splitlines())
    return lines["public key"].strip(), lines["private key"].strip()


@pytest.mark.django_db(transaction=True)
def test_simulated_calls_arrive_through_the_running_server(live_server, capsys):
    owner = make_member()
    api = owner.api_client()
    public, private = keypair(capsys)
    line = post_json(api, "/dialer/connections", {"name": "Sim", "apiKey": "KEY-sim-0123456", "publicKey": public})
    line = line.json()
    order_number(api)
    common = {"connection": line["id"], "private_key": private, "server": live_server.url}

    call_command("simulate_telephony", "missed", sender=PATIENT_NUMBER, **common)
    missed = Call.objects.for_org(owner.organization).get()
    assert missed.status == CallStatus.MISSED
    assert Task.objects.for_org(owner.organization).get().id == missed.follow_up_task_id

    call_command("simulate_telephony", "voicemail", sender="+393330000002", **common)
    voicemail = Call.objects.for_org(owner.organization).get(from_number="+393330000002")
    assert voicemail.status == CallStatus.VOICEMAIL
    assert voicemail.recordings.get().state == RecordingState.STORED  # the sandbox's silent WAV

    placed = post_json(api, "/dialer/calls", {"to": PATIENT_NUMBER}).json()
    call_command("simulate_telephony", "outbound", call=placed["id"], seconds=30, **common)
    outbound = Call.objects.for_org(owner.organization).get(id=placed["id"])
    assert (outbound.status, outbound.duration_seconds) == (CallStatus.COMPLETED, 30)

    (order,) = post_json(api, "/dialer/porting-orders", {"phoneNumbers": ["+390277777777"]}).json()["items"]
    call_command("simulate_telephony", "porting", order=order["providerOrderId"], status="ported", **common)
    assert PortingOrder.objects.for_org(owner.organization).get().status == "ported"


@pytest.mark.django_db
def test_the_command_refuses_what_it_cannot_sign(capsys):
    owner = make_member()
    public, _ = keypair(capsys)
    line = post_json(
        owner.api_client(), "/dialer/connections", {"name": "Sim", "apiKey": "KEY-sim-0123456", "publicKey": public}
    ).json()
    with pytest.raises(CommandError, match="--private-key is required"):
        call_command("simulate_telephony", "missed", connection=line["id"], sender=PATIENT_NUMBER)
    with pytest.raises(CommandError, match="--connection"):
        call_command("simulate_telephony", "missed", private_key="eA==", sender=PATIENT_NUMBER)
