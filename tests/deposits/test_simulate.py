"""manage.py simulate_payment posts a signed event to a running server, as the platform would."""

import pytest
from django.core.management import call_command

from tests.deposits.helpers import connect_account, make_patient, sent_deposit, stored


@pytest.mark.django_db(transaction=True)
def test_simulate_payment_pays_then_refunds_through_a_running_server(owner, live_server):
    api = owner.api_client()
    connect_account(owner.organization)
    deposit = sent_deposit(api, make_patient(owner.organization), amount=4000)
    call_command("simulate_payment", deposit["id"], "--url", live_server.url)
    assert stored(owner.organization, deposit["id"]).status == "paid"
    call_command("simulate_payment", deposit["id"], "--refund", "4000", "--url", live_server.url)
    record = stored(owner.organization, deposit["id"])
    assert record.status == "refunded" and record.refunded_amount == 4000
